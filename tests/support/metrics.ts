// The Prometheus text exposition as the tests read it: sample lines parsed into name, labels and value.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses `name{a="x",b="y"} value` sample lines of the text exposition. */
export function samples(text: string): Sample[] {
  return text.split("\n").filter((l) => l && !l.startsWith("#")).map((l) => {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(l);
    if (!m) throw new Error(`unparsable sample line: ${l}`);
    const labels: Record<string, string> = {};
    for (const p of (m[2] ?? "").match(/\w+="(?:[^"\\]|\\.)*"/g) ?? []) {
      const i = p.indexOf("=");
      labels[p.slice(0, i)] = p.slice(i + 2, -1);
    }
    return { name: m[1], labels, value: Number(m[3]) };
  });
}
