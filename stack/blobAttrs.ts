// The file backend (gocloud fileblob) keeps each blob's attributes in a `<blob>.attrs` sidecar, written
// with a plain create-and-write, not a rename: a kill -9 between the two leaves it empty, and every later
// load of that stack fails with "failed to load checkpoint: EOF" although the checkpoint itself is whole
// (its new version is written to a temp file and renamed only after the sidecar). The sidecar holds only
// content metadata (type, md5); fileblob reads a missing one as "no attributes". So an unreadable sidecar
// of a stack's checkpoint, its `.bak` or its history is removed; the blob is never touched.
import * as fs from "node:fs";
import * as path from "node:path";

function readable(file: string): boolean {
  try {
    const v: unknown = JSON.parse(fs.readFileSync(file, "utf8"));
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

function sidecars(dir: string, keep: (name: string) => boolean): string[] {
  try {
    return fs.readdirSync(dir).filter((n) => n.endsWith(".attrs") && keep(n)).map((n) => path.join(dir, n));
  } catch {
    return [];
  }
}

/** Removes the unreadable attribute sidecars of one stack's blobs; returns the files removed. */
export function repairBlobAttrs(stateDir: string, project: string, stack: string): string[] {
  const pulumiDir = path.join(stateDir, ".pulumi");
  const candidates = [
    ...sidecars(path.join(pulumiDir, "stacks", project), (n) => n.startsWith(`${stack}.json`)),
    ...sidecars(path.join(pulumiDir, "history", project, stack), () => true),
  ];
  const removed = candidates.filter((f) => !readable(f));
  for (const f of removed) fs.rmSync(f, { force: true });
  return removed;
}
