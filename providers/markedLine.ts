// The shape of a marked line: how the BMI provider tells the reconciler, through a failed update's
// error text, about a failure that needs a decision. `[<mark> key=value ...] message` on one line, so
// it is found anywhere in the engine's output, however the engine wraps or repeats it.

export interface MarkedLine<K extends string> {
  /** The line; newlines in the message become spaces. */
  format(fields: Record<K, string>, message: string): string;
  /** Every line with this mark in `text`, the last one per value of the unique field, in first-seen order. */
  parse(text: string): { fields: Record<K, string>; message: string }[];
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** A line marked `mark` carrying `fields` (key and value pattern, in order); `unique` names one line's subject. */
export function markedLine<K extends string>(mark: string, fields: readonly (readonly [K, string])[], unique: K): MarkedLine<K> {
  const keys = fields.map(([k]) => k);
  const pattern = new RegExp(`\\[${escapeRegExp(mark)} ${fields.map(([k, p]) => `${escapeRegExp(k)}=(${p})`).join(" ")}\\] ([^\\n]*)`, "g");
  return {
    format: (values, message) => `[${mark} ${keys.map((k) => `${k}=${values[k]}`).join(" ")}] ${message.replace(/\s*\n\s*/g, " ")}`,
    parse(text) {
      const byKey = new Map<string, { fields: Record<K, string>; message: string }>();
      for (const m of text.matchAll(pattern)) {
        const values = Object.fromEntries(keys.map((k, i) => [k, m[i + 1]])) as Record<K, string>;
        byKey.set(values[unique], { fields: values, message: m[keys.length + 1].trim() });
      }
      return [...byKey.values()];
    },
  };
}
