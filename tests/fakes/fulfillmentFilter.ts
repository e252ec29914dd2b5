// The List filters the fake fulfillment service understands: exactly the expressions
// clients/fulfillment/filter.ts builds (each value a single-quoted CEL literal), combined with
// `&&`, `||`, `!(…)` and parentheses. The real service accepts more CEL (fulfillment-api.md §2.3); a
// filter outside this set fails loudly with UnsupportedFilterError, never silently as "no match",
// so a product change that sends a new shape shows up here before it reaches the real service.
import type { MetadataOut } from "../../clients/fulfillment/types";

/** Not a service answer: the product sent a filter the fake was never taught. */
export class UnsupportedFilterError extends Error {
  override name = "UnsupportedFilterError";
}

/** What a filter reads of an object. */
export interface Filterable {
  id: string;
  metadata: Pick<MetadataOut, "name" | "tenant" | "labels" | "deletion_timestamp"> | null;
}

export type Predicate = (o: Filterable) => boolean;

type Tok = { t: "str" | "id" | "op"; v: string; pos: number };

const ESCAPES: Record<string, string> = { "\\": "\\", "'": "'", '"': '"', n: "\n", r: "\r", t: "\t" };

function lex(src: string, fail: (pos: number, why: string) => never): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === " ") { i++; continue; }
    if (c === "'") {
      const start = i++;
      let s = "";
      for (;;) {
        if (i >= src.length) fail(start, "unterminated string");
        const ch = src[i++];
        if (ch === "'") break;
        if (ch !== "\\") { s += ch; continue; }
        const e = src[i++];
        if (e in ESCAPES) s += ESCAPES[e];
        else if (e === "x" && /^[0-9a-f]{2}$/.test(src.slice(i, i + 2))) {
          s += String.fromCharCode(parseInt(src.slice(i, i + 2), 16));
          i += 2;
        } else fail(i - 1, `escape \\${e ?? ""} is not one celString writes`);
      }
      toks.push({ t: "str", v: s, pos: start });
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
    if (word) {
      toks.push({ t: "id", v: word[0], pos: i });
      i += word[0].length;
      continue;
    }
    const op = ["==", "&&", "||", "!", "(", ")", "[", "]", ",", "."].find((o) => src.startsWith(o, i));
    if (!op) fail(i, `unexpected '${c}'`);
    toks.push({ t: "op", v: op, pos: i });
    i += op.length;
  }
  return toks;
}

/** Recursive descent over the tokens: `||` binds loosest, then `&&`, then `!`; atoms are filter.ts's shapes. */
class Parser {
  private k = 0;
  private readonly toks: Tok[];

  constructor(private readonly text: string) {
    this.toks = lex(text, (pos, why) => this.fail(pos, why));
  }

  parse(): Predicate {
    const predicate = this.or();
    if (this.k < this.toks.length) this.fail(this.pos(), "unexpected trailing text");
    return predicate;
  }

  fail(pos: number, why: string): never {
    throw new UnsupportedFilterError(`the fake fulfillment service understands only the filters clients/fulfillment/filter.ts ` +
      `builds; ${JSON.stringify(this.text)} at ${pos}: ${why}`);
  }

  private pos(): number {
    return this.toks[this.k]?.pos ?? this.text.length;
  }

  private at(v: string): boolean {
    const tok = this.toks[this.k];
    return tok !== undefined && tok.t !== "str" && tok.v === v;
  }

  private take(v: string): boolean {
    if (!this.at(v)) return false;
    this.k++;
    return true;
  }

  private expect(...vs: string[]): void {
    for (const v of vs) if (!this.take(v)) this.fail(this.pos(), `expected '${v}'`);
  }

  private str(): string {
    const tok = this.toks[this.k];
    if (tok?.t !== "str") this.fail(this.pos(), "expected a quoted string");
    this.k++;
    return tok.v;
  }

  private or(): Predicate {
    const parts = [this.and()];
    while (this.take("||")) parts.push(this.and());
    return parts.length === 1 ? parts[0] : (o) => parts.some((p) => p(o));
  }

  private and(): Predicate {
    const parts = [this.unary()];
    while (this.take("&&")) parts.push(this.unary());
    return parts.length === 1 ? parts[0] : (o) => parts.every((p) => p(o));
  }

  private unary(): Predicate {
    if (this.take("!")) {
      const inner = this.unary();
      return (o) => !inner(o);
    }
    if (this.take("(")) {
      const inner = this.or();
      this.expect(")");
      return inner;
    }
    return this.atom();
  }

  private atom(): Predicate {
    if (this.take("true")) return () => true;
    if (this.toks[this.k]?.t === "str") { // 'key' in this.metadata.labels
      const key = this.str();
      this.expect("in", "this", ".", "metadata", ".", "labels");
      return (o) => Object.prototype.hasOwnProperty.call(o.metadata?.labels ?? {}, key);
    }
    this.expect("this", ".");
    if (this.take("id")) {
      this.expect("==");
      const v = this.str();
      return (o) => o.id === v;
    }
    this.expect("metadata", ".");
    if (this.take("name")) return this.nameAtom();
    if (this.take("tenant")) {
      this.expect("==");
      const v = this.str();
      return (o) => o.metadata?.tenant === v;
    }
    if (this.take("labels")) {
      this.expect("[");
      const key = this.str();
      this.expect("]", "==");
      const v = this.str();
      return (o) => o.metadata?.labels?.[key] === v;
    }
    if (this.take("deletion_timestamp")) {
      this.expect("==", "null");
      return (o) => !o.metadata?.deletion_timestamp;
    }
    return this.fail(this.pos(), "not a field filter.ts filters on");
  }

  /** After `this.metadata.name`: `== 'x'`, `in ['a', ...]` or `.startsWith('p')`. */
  private nameAtom(): Predicate {
    if (this.take("==")) {
      const v = this.str();
      return (o) => o.metadata?.name === v;
    }
    if (this.take("in")) {
      this.expect("[");
      const names: string[] = [];
      while (!this.take("]")) {
        if (names.length) this.expect(",");
        names.push(this.str());
      }
      return (o) => names.includes(o.metadata?.name ?? "");
    }
    this.expect(".", "startsWith", "(");
    const prefix = this.str();
    this.expect(")");
    return (o) => (o.metadata?.name ?? "").startsWith(prefix);
  }
}

/** Compiles `text` into a predicate; UnsupportedFilterError for anything filter.ts does not build. */
export function compileFilter(text: string): Predicate {
  return new Parser(text).parse();
}
