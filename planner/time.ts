// Timestamps as Kubernetes writes them: RFC 3339 with whole seconds, so a value read back from the
// API server compares equal to the one the planner wrote.

export function toIso(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** Milliseconds of an RFC 3339 string; undefined for a missing or unparsable value. */
export function msOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}
