// Server-side apply without force: when another field manager owns a field we apply with a different
// value, the apiserver answers 409 with one FieldManagerConflict cause per field. Those fields are left
// to their owner: they are removed from what we apply, and the rest is applied again.

/** The conflicting field paths of a failed apply (e.g. `.status.conditions[type="X"].status`); [] when none. */
export function fieldManagerConflicts(err: unknown): string[] {
  const body = responseBody(err);
  // metav1.StatusCause names its kind in `reason` (serialised from the Go field Type).
  const causes = (body?.details as { causes?: { reason?: string; type?: string; field?: string }[] } | undefined)?.causes ?? [];
  return causes.filter((c) => (c.reason ?? c.type) === "FieldManagerConflict" && typeof c.field === "string").map((c) => c.field!);
}

function responseBody(err: unknown): Record<string, unknown> | undefined {
  for (let e: unknown = err; e && typeof e === "object"; e = (e as { cause?: unknown }).cause) {
    const raw = (e as { body?: unknown }).body;
    if (raw === undefined) continue;
    try {
      const parsed: unknown = typeof raw === "string" ? JSON.parse(raw) : raw;
      if (parsed && typeof parsed === "object" && (parsed as { kind?: unknown }).kind === "Status") return parsed as Record<string, unknown>;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

type Segment = { field: string } | { key: string; value: string };

/** `.status.workers[name="a"].phase` → segments; undefined for a form we do not handle (set or index keys). */
export function parseFieldPath(path: string): Segment[] | undefined {
  const segments: Segment[] = [];
  const re = /\.([A-Za-z0-9_-]+)|\[([A-Za-z0-9_-]+)=("(?:[^"\\]|\\.)*")\]/y;
  let at = 0;
  while (at < path.length) {
    re.lastIndex = at;
    const m = re.exec(path);
    if (!m) return undefined;
    if (m[1] !== undefined) segments.push({ field: m[1] });
    else {
      const value: unknown = JSON.parse(m[3]); // the regex admits only a quoted JSON string here
      if (typeof value !== "string") return undefined;
      segments.push({ key: m[2], value });
    }
    at = re.lastIndex;
  }
  return segments.length > 0 ? segments : undefined;
}

/**
 * A copy of the applied object without the given fields. Returns undefined when a path cannot be
 * followed (unknown form): the caller then keeps the conflict rather than guess.
 */
export function withoutFields<T extends object>(applied: T, paths: readonly string[]): T | undefined {
  const copy = structuredClone(applied) as Record<string, unknown>;
  for (const p of paths) {
    const segments = parseFieldPath(p);
    if (!segments || !removePath(copy, segments)) return undefined;
  }
  return copy as T;
}

function removePath(root: Record<string, unknown>, segments: Segment[]): boolean {
  let node: unknown = root;
  for (let i = 0; i < segments.length - 1; i++) {
    node = step(node, segments[i]);
    if (node === undefined) return true; // not in what we apply: nothing to give up
  }
  const last = segments[segments.length - 1];
  if ("field" in last) {
    if (node && typeof node === "object" && !Array.isArray(node)) delete (node as Record<string, unknown>)[last.field];
    return true;
  }
  if (!Array.isArray(node)) return node === undefined;
  const i = node.findIndex((item) => item && typeof item === "object" && (item as Record<string, unknown>)[last.key] === last.value);
  if (i >= 0) node.splice(i, 1);
  return true;
}

function step(node: unknown, s: Segment): unknown {
  if ("field" in s) return node && typeof node === "object" && !Array.isArray(node) ? (node as Record<string, unknown>)[s.field] : undefined;
  return Array.isArray(node) ? node.find((item) => item && typeof item === "object" && (item as Record<string, unknown>)[s.key] === s.value) : undefined;
}
