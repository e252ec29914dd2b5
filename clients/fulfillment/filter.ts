// Builds the CEL `filter` of List requests. Every value becomes a quoted CEL string literal, so no
// label value, name or tenant can change the structure of the expression; callers cannot pass raw
// text. Only forms the real service can translate to SQL are produced (fulfillment-api.md §2.3).

/** A complete, well-formed filter expression. Construct it only through `Filter`'s helpers. */
export class CelFilter {
  private constructor(readonly text: string) {}

  /** @internal Only this module creates filters. */
  static of(text: string): CelFilter {
    return new CelFilter(text);
  }

  toString(): string {
    return this.text;
  }
}

/** Quotes `value` as a single-quoted CEL string literal. */
export function celString(value: string): string {
  let out = "'";
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (ch === "\\") out += "\\\\";
    else if (ch === "'") out += "\\'";
    else if (ch === '"') out += '\\"';
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (cp < 0x20 || cp === 0x7f) out += "\\x" + cp.toString(16).padStart(2, "0");
    else out += ch;
  }
  return out + "'";
}

const cel = CelFilter.of;

function join(op: "&&" | "||", parts: CelFilter[]): CelFilter {
  if (parts.length === 0) throw new Error(`Filter: ${op} needs at least one operand`);
  if (parts.length === 1) return parts[0];
  return cel(parts.map((p) => `(${p.text})`).join(` ${op} `));
}

export const Filter = {
  idEquals: (id: string) => cel(`this.id == ${celString(id)}`),
  nameEquals: (name: string) => cel(`this.metadata.name == ${celString(name)}`),
  nameStartsWith: (prefix: string) => cel(`this.metadata.name.startsWith(${celString(prefix)})`),
  nameIn: (names: readonly string[]) => cel(`this.metadata.name in [${names.map(celString).join(", ")}]`),
  tenantEquals: (tenant: string) => cel(`this.metadata.tenant == ${celString(tenant)}`),
  hasLabel: (key: string) => cel(`${celString(key)} in this.metadata.labels`),
  labelEquals: (key: string, value: string) =>
    cel(`this.metadata.labels[${celString(key)}] == ${celString(value)}`),
  /** Every pair must match; an empty record matches everything. */
  labelsMatch: (labels: Readonly<Record<string, string>>): CelFilter => {
    const parts = Object.keys(labels).sort().map((k) => Filter.labelEquals(k, labels[k]));
    return parts.length ? join("&&", parts) : cel("true");
  },
  /** Deleted-but-not-yet-archived objects are returned unless this is part of the filter. */
  notDeleted: () => cel("this.metadata.deletion_timestamp == null"),
  and: (...parts: CelFilter[]) => join("&&", parts),
  or: (...parts: CelFilter[]) => join("||", parts),
  not: (part: CelFilter) => cel(`!(${part.text})`),
};

/** Filters of an Events.Watch stream: CEL over the variable `event` (fulfillment-api.md §6). */
export const EventFilter = {
  /** Every event of a BareMetalInstance of `tenant`. */
  bareMetalInstancesOfTenant: (tenant: string) =>
    cel(`has(event.bare_metal_instance) && event.bare_metal_instance.metadata.tenant == ${celString(tenant)}`),
};
