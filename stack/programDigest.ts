// What an update applies is the plan *and* the program that declares it: the program's sources, its
// dependencies, the Pulumi toolchain and the settings the program reads (parsed, so that per-process
// variables such as the fault suite's BMW_FAILPOINT_PGID or the loop's log level do not count). The loop records "this plan
// was applied" on the ClusterOrder with this digest, so that after a restart an unchanged order needs no
// `up`, while a new release (or a changed setting) still updates every stack once.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { canonicalJson } from "../planner/fingerprint";

/** Files and directories (relative to the program directory) whose content shapes what the program declares. */
const PROGRAM_PARTS = ["Pulumi.yaml", "index.ts", "package-lock.json", "tsconfig.json", "program",
  "components", "providers", "planner", "clients", "config", "lib", "io", "protos"];
const SOURCE_FILE = /\.(ts|js|json|proto|ya?ml)$/;

function filesUnder(dir: string, rel: string, out: string[]): void {
  const abs = path.join(dir, rel);
  if (!fs.existsSync(abs)) return;
  if (fs.statSync(abs).isFile()) {
    out.push(rel);
    return;
  }
  for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
    const child = path.join(rel, entry.name);
    if (entry.isDirectory()) filesUnder(dir, child, out);
    else if (SOURCE_FILE.test(entry.name)) out.push(child);
  }
}

/** A short stable digest of the program in `programDir`, its toolchain versions and its settings. */
export function programDigest(programDir: string, toolchainVersions: object, settings: unknown): string {
  const h = crypto.createHash("sha256");
  const files: string[] = [];
  for (const part of PROGRAM_PARTS) filesUnder(programDir, part, files);
  for (const rel of files.sort()) {
    h.update(`${rel}\0`);
    h.update(fs.readFileSync(path.join(programDir, rel)));
    h.update("\0");
  }
  h.update(canonicalJson(toolchainVersions));
  h.update(canonicalJson(settings));
  return h.digest("hex").slice(0, 16);
}
