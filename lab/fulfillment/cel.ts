// The subset of CEL the fulfillment service can translate to SQL (fulfillment-api.md §2.3), parsed
// and evaluated for real: literals, `this` (`event` in a watch) and `now`, field access checked against the proto type,
// map index, `== != < <= > >=` (null and timestamps included), `+ - * / %` on numbers, `&& || !`,
// `in` (list literal, repeated field, map key), `startsWith/endsWith/contains` and `has()`.
// Anything else is a FilterError, which the server answers with INVALID_ARGUMENT.
import type * as protobuf from "protobufjs";

export class FilterError extends Error {
  override name = "FilterError";
}

type Lit = string | number | boolean | null;
export type Node =
  | { k: "lit"; v: Lit }
  | { k: "ident"; name: string }
  | { k: "member"; obj: Node; name: string }
  | { k: "index"; obj: Node; idx: Node }
  | { k: "call"; fn: string; target: Node | null; args: Node[] }
  | { k: "list"; items: Node[] }
  | { k: "unary"; op: "!" | "-"; x: Node }
  | { k: "binary"; op: string; l: Node; r: Node };

type Tok = { t: "str" | "num" | "id" | "op" | "end"; v: string; pos: number; num?: number };

const ESCAPES: Record<string, string> = { "\\": "\\", "'": "'", '"': '"', n: "\n", r: "\r", t: "\t", "`": "`", "?": "?" };
const OPS = ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "[", "]", ",", ".", "+", "-", "*", "/", "%"];

function lex(src: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) { i++; continue; }
    if (c === "'" || c === '"') {
      if (src.startsWith(c.repeat(3), i)) throw new FilterError(`triple-quoted strings are not supported (at ${i})`);
      const start = i++;
      let s = "";
      for (;;) {
        if (i >= src.length) throw new FilterError(`unterminated string at ${start}`);
        const ch = src[i++];
        if (ch === c) break;
        if (ch === "\n") throw new FilterError(`newline in string at ${start}`);
        if (ch !== "\\") { s += ch; continue; }
        const e = src[i++];
        if (e in ESCAPES) s += ESCAPES[e];
        else if (e === "x" || e === "u" || e === "U") {
          const n = e === "x" ? 2 : e === "u" ? 4 : 8;
          const hex = src.slice(i, i + n);
          if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) throw new FilterError(`bad \\${e} escape at ${i}`);
          s += String.fromCodePoint(parseInt(hex, 16));
          i += n;
        } else throw new FilterError(`unsupported escape \\${e ?? ""} at ${i - 1}`);
      }
      toks.push({ t: "str", v: s, pos: start });
      continue;
    }
    const num = /^(\d+(\.\d+)?)/.exec(src.slice(i));
    if (num) {
      toks.push({ t: "num", v: num[1], num: Number(num[1]), pos: i });
      i += num[1].length;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
    if (id) {
      toks.push({ t: "id", v: id[0], pos: i });
      i += id[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new FilterError(`unexpected character '${c}' at ${i}`);
    toks.push({ t: "op", v: op, pos: i });
    i += op.length;
  }
  toks.push({ t: "end", v: "", pos: src.length });
  return toks;
}

/** Recursive descent, CEL precedence: || < && < relations/in < + - < * / % < unary < member. */
export function parseFilter(src: string): Node {
  const toks = lex(src);
  let p = 0;
  const peek = () => toks[p];
  const isOp = (v: string) => peek().t === "op" && peek().v === v;
  const isKw = (v: string) => peek().t === "id" && peek().v === v;
  const expect = (v: string) => {
    if (!isOp(v)) throw new FilterError(`expected '${v}' at ${peek().pos}`);
    p++;
  };
  const binaryLevel = (ops: string[], next: () => Node) => (): Node => {
    let l = next();
    for (;;) {
      const op = ops.find((o) => (o === "in" ? isKw("in") : isOp(o)));
      if (!op) return l;
      p++;
      l = { k: "binary", op, l, r: next() };
    }
  };
  const primary = (): Node => {
    const t = toks[p++];
    if (t.t === "str") return { k: "lit", v: t.v };
    if (t.t === "num") return { k: "lit", v: t.num! };
    if (t.t === "id") {
      if (t.v === "true" || t.v === "false") return { k: "lit", v: t.v === "true" };
      if (t.v === "null") return { k: "lit", v: null };
      if (t.v === "in") throw new FilterError(`unexpected 'in' at ${t.pos}`);
      if (isOp("(")) return { k: "call", fn: t.v, target: null, args: args() };
      return { k: "ident", name: t.v };
    }
    if (t.t === "op" && t.v === "(") {
      const e = or();
      expect(")");
      return e;
    }
    if (t.t === "op" && t.v === "[") {
      const items: Node[] = [];
      if (!isOp("]")) do items.push(or()); while (isOp(",") && ++p);
      expect("]");
      return { k: "list", items };
    }
    throw new FilterError(t.t === "end" ? "unexpected end of filter" : `unexpected '${t.v}' at ${t.pos}`);
  };
  const args = (): Node[] => {
    expect("(");
    const out: Node[] = [];
    if (!isOp(")")) do out.push(or()); while (isOp(",") && ++p);
    expect(")");
    return out;
  };
  const member = (): Node => {
    let n = primary();
    for (;;) {
      if (isOp(".")) {
        p++;
        const t = toks[p++];
        if (t.t !== "id") throw new FilterError(`expected a field name at ${t.pos}`);
        n = isOp("(") ? { k: "call", fn: t.v, target: n, args: args() } : { k: "member", obj: n, name: t.v };
      } else if (isOp("[")) {
        p++;
        const idx = or();
        expect("]");
        n = { k: "index", obj: n, idx };
      } else return n;
    }
  };
  const unary = (): Node => {
    if (isOp("!")) { p++; return { k: "unary", op: "!", x: unary() }; }
    if (isOp("-")) { p++; return { k: "unary", op: "-", x: unary() }; }
    return member();
  };
  const mul = binaryLevel(["*", "/", "%"], unary);
  const add = binaryLevel(["+", "-"], mul);
  const rel = (): Node => {
    const l = add();
    const op = ["==", "!=", "<=", ">=", "<", ">", "in"].find((o) => (o === "in" ? isKw("in") : isOp(o)));
    if (!op) return l;
    p++;
    return { k: "binary", op, l, r: add() };
  };
  const and = binaryLevel(["&&"], rel);
  const or = binaryLevel(["||"], and);
  const root = or();
  if (peek().t !== "end") throw new FilterError(`unexpected '${peek().v}' at ${peek().pos}`);
  return root;
}

/** A value plus what the proto schema says about it, so unknown fields are errors, not nulls. */
interface Val {
  v: unknown;
  type?: protobuf.Type;
  kind: "message" | "map" | "list" | "scalar" | "timestamp";
}

const TIMESTAMP = "google.protobuf.Timestamp";

function timestampMs(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const ts = v as { seconds?: string | number; nanos?: number };
  return Number(ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

function fieldVal(obj: Val, name: string): Val {
  if (obj.kind !== "message" || !obj.type) throw new FilterError(`cannot select '${name}' from a ${obj.kind}`);
  const field = obj.type.fields[name];
  if (!field) throw new FilterError(`no field '${name}' in ${obj.type.fullName.replace(/^\./, "")}`);
  const raw = obj.v === null || obj.v === undefined ? null : ((obj.v as Record<string, unknown>)[name] ?? null);
  field.resolve();
  if (field.map) return { v: raw ?? {}, kind: "map" };
  if (field.repeated) return { v: raw ?? [], kind: "list" };
  const rt = field.resolvedType;
  if (rt && "fields" in rt) {
    const t = rt as protobuf.Type;
    return { v: raw, type: t, kind: t.fullName.replace(/^\./, "") === TIMESTAMP ? "timestamp" : "message" };
  }
  return { v: raw, kind: "scalar" };
}

function comparable(x: Val): unknown {
  return x.kind === "timestamp" ? timestampMs(x.v) : x.v;
}

function bool(x: Val, what: string): boolean {
  if (typeof x.v !== "boolean") throw new FilterError(`${what} needs a boolean`);
  return x.v;
}

/** A value of an enum declared in the package of `type` (EVENT_TYPE_OBJECT_CREATED): CEL knows the constants. */
function isEnumValue(type: protobuf.Type, name: string): boolean {
  const pkg = type.parent;
  if (!pkg || !/^[A-Z][A-Z0-9_]*$/.test(name)) return false;
  return pkg.nestedArray.some((n) => "values" in n && typeof (n as protobuf.Enum).values[name] === "number");
}

export interface FilterEnv {
  /** The object as decoded (proto field names), and its message type. */
  self: unknown;
  selfType: protobuf.Type;
  nowMs: number;
  /** The name the object goes by: "this" in a List filter, "event" in an Events.Watch filter. */
  variable?: string;
}

function evalNode(n: Node, env: FilterEnv): Val {
  switch (n.k) {
    case "lit":
      return { v: n.v, kind: "scalar" };
    case "ident":
      if (n.name === (env.variable ?? "this")) return { v: env.self, type: env.selfType, kind: "message" };
      if (n.name === "now") return { v: { seconds: Math.floor(env.nowMs / 1000), nanos: (env.nowMs % 1000) * 1e6 }, kind: "timestamp" };
      if (isEnumValue(env.selfType, n.name)) return { v: n.name, kind: "scalar" }; // enums decode as their names
      throw new FilterError(`undeclared reference '${n.name}'`);
    case "member":
      return fieldVal(evalNode(n.obj, env), n.name);
    case "index": {
      const obj = evalNode(n.obj, env);
      const idx = evalNode(n.idx, env).v;
      if (obj.kind === "map" && typeof idx === "string") return { v: (obj.v as Record<string, unknown>)[idx] ?? null, kind: "scalar" };
      if (obj.kind === "list" && typeof idx === "number") return { v: (obj.v as unknown[])[idx] ?? null, kind: "scalar" };
      throw new FilterError("unsupported index expression");
    }
    case "list":
      return { v: n.items.map((i) => comparable(evalNode(i, env))), kind: "list" };
    case "unary": {
      const x = evalNode(n.x, env);
      if (n.op === "!") return { v: !bool(x, "'!'"), kind: "scalar" };
      if (typeof x.v !== "number") throw new FilterError("'-' needs a number");
      return { v: -x.v, kind: "scalar" };
    }
    case "call":
      return evalCall(n, env);
    case "binary":
      return evalBinary(n, env);
  }
}

function evalCall(n: Extract<Node, { k: "call" }>, env: FilterEnv): Val {
  if (n.fn === "has" && !n.target) {
    const arg = n.args[0];
    if (n.args.length !== 1 || arg.k !== "member") throw new FilterError("has() needs one field selection");
    const x = fieldVal(evalNode(arg.obj, env), arg.name);
    const v = x.v;
    const present = x.kind === "map" ? Object.keys(v as object).length > 0
      : x.kind === "list" ? (v as unknown[]).length > 0
        : v !== null && v !== undefined && v !== "" && v !== 0 && v !== false && v !== "0";
    return { v: present, kind: "scalar" };
  }
  if (["startsWith", "endsWith", "contains"].includes(n.fn) && n.target) {
    const target = evalNode(n.target, env).v;
    const arg = n.args.length === 1 ? evalNode(n.args[0], env).v : undefined;
    if (typeof arg !== "string") throw new FilterError(`${n.fn}() needs one string argument`);
    if (target === null) return { v: false, kind: "scalar" };
    if (typeof target !== "string") throw new FilterError(`${n.fn}() applies to strings`);
    const s = target;
    return { v: n.fn === "startsWith" ? s.startsWith(arg) : n.fn === "endsWith" ? s.endsWith(arg) : s.includes(arg), kind: "scalar" };
  }
  throw new FilterError(`unsupported function '${n.fn}'`);
}

function evalBinary(n: Extract<Node, { k: "binary" }>, env: FilterEnv): Val {
  if (n.op === "&&") return { v: bool(evalNode(n.l, env), "'&&'") && bool(evalNode(n.r, env), "'&&'"), kind: "scalar" };
  if (n.op === "||") return { v: bool(evalNode(n.l, env), "'||'") || bool(evalNode(n.r, env), "'||'"), kind: "scalar" };
  const l = evalNode(n.l, env);
  const r = evalNode(n.r, env);
  const a = comparable(l);
  const b = comparable(r);
  switch (n.op) {
    case "==":
      return { v: a === b, kind: "scalar" };
    case "!=":
      return { v: a !== b, kind: "scalar" };
    case "<": case "<=": case ">": case ">=": {
      if (a === null || b === null) return { v: false, kind: "scalar" };
      if (typeof a !== typeof b || (typeof a !== "number" && typeof a !== "string")) {
        throw new FilterError(`'${n.op}' needs two numbers, strings or timestamps`);
      }
      const x = a as number | string, y = b as number | string;
      const v = n.op === "<" ? x < y : n.op === "<=" ? x <= y : n.op === ">" ? x > y : x >= y;
      return { v, kind: "scalar" };
    }
    case "in":
      if (r.kind === "map") return { v: typeof a === "string" && a in (r.v as object), kind: "scalar" };
      if (r.kind === "list") return { v: (r.v as unknown[]).includes(a), kind: "scalar" };
      throw new FilterError("'in' needs a list or a map on its right");
    default: {
      if (typeof a !== "number" || typeof b !== "number") throw new FilterError(`'${n.op}' needs numbers`);
      const v = n.op === "+" ? a + b : n.op === "-" ? a - b : n.op === "*" ? a * b : n.op === "/" ? a / b : a % b;
      return { v, kind: "scalar" };
    }
  }
}

/** True when the object matches. Throws FilterError when the filter cannot be evaluated. */
export function evaluateFilter(ast: Node, env: FilterEnv): boolean {
  const out = evalNode(ast, env);
  if (typeof out.v !== "boolean") throw new FilterError("the filter must evaluate to a boolean");
  return out.v;
}

/**
 * Checks every field selection and function against the schema without evaluating, the way the
 * service's SQL translation rejects a bad filter even when no row would reach the bad branch.
 */
export function checkFilter(ast: Node, selfType: protobuf.Type, variable = "this"): void {
  const walk = (n: Node): Val => {
    switch (n.k) {
      case "lit":
        return { v: n.v, kind: "scalar" };
      case "ident":
        if (n.name === variable) return { v: null, type: selfType, kind: "message" };
        if (n.name === "now") return { v: null, kind: "timestamp" };
        if (isEnumValue(selfType, n.name)) return { v: null, kind: "scalar" };
        throw new FilterError(`undeclared reference '${n.name}'`);
      case "member":
        return fieldVal(walk(n.obj), n.name);
      case "index":
        walk(n.obj);
        walk(n.idx);
        return { v: null, kind: "scalar" };
      case "list":
        n.items.forEach(walk);
        return { v: null, kind: "list" };
      case "unary":
        walk(n.x);
        return { v: null, kind: "scalar" };
      case "binary":
        walk(n.l);
        walk(n.r);
        return { v: null, kind: "scalar" };
      case "call":
        if (n.fn === "has" && !n.target) {
          const arg = n.args[0];
          if (n.args.length !== 1 || arg.k !== "member") throw new FilterError("has() needs one field selection");
          walk(arg);
        } else if (["startsWith", "endsWith", "contains"].includes(n.fn) && n.target) {
          walk(n.target);
          n.args.forEach(walk);
        } else throw new FilterError(`unsupported function '${n.fn}'`);
        return { v: null, kind: "scalar" };
    }
  };
  walk(ast);
}
