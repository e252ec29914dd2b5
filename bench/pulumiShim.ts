// Counting pulumi processes: a copy of the toolchain cache layout whose `pulumi` is a two-line shell
// wrapper that appends its sub-command to a log, then execs the real binary (same pid, same
// behaviour). Everything else is a symlink to the real cache. A process started with BMW_CACHE_DIR
// pointing here runs the real toolchain while every CLI process it spawns leaves one line.
import * as fs from "node:fs";
import * as path from "node:path";
import type { Toolchain } from "../automation/toolchain";

export interface PulumiShim {
  cacheDir: string;
  logFile: string;
  /** CLI processes started so far. */
  count(): number;
  /** Sub-commands started so far ("up", "preview", "config", ...), counted. */
  byCommand(): Record<string, number>;
}

export function createPulumiShim(real: Toolchain, dir: string): PulumiShim {
  const cacheDir = path.join(dir, "cache");
  const logFile = path.join(dir, "pulumi-processes.log");
  fs.rmSync(cacheDir, { recursive: true, force: true });
  fs.mkdirSync(cacheDir, { recursive: true });
  for (const entry of fs.readdirSync(real.cacheDir)) {
    if (entry !== "pulumi") fs.symlinkSync(path.join(real.cacheDir, entry), path.join(cacheDir, entry));
  }
  const realBin = path.join(real.pulumiRoot, "bin");
  const shimBin = path.join(cacheDir, "pulumi", real.versions.pulumi, "bin");
  fs.mkdirSync(shimBin, { recursive: true });
  for (const f of fs.readdirSync(realBin)) {
    if (f !== "pulumi") fs.symlinkSync(path.join(realBin, f), path.join(shimBin, f));
  }
  fs.writeFileSync(logFile, "");
  // printf and >> are shell builtins: the wrapper starts no process of its own before the exec.
  fs.writeFileSync(path.join(shimBin, "pulumi"),
    `#!/bin/sh\nprintf '%s\\n' "$1" >> '${logFile}'\nexec '${path.join(realBin, "pulumi")}' "$@"\n`, { mode: 0o755 });
  const lines = () => fs.readFileSync(logFile, "utf8").split("\n").filter(Boolean);
  return {
    cacheDir, logFile,
    count: () => lines().length,
    byCommand: () => lines().reduce<Record<string, number>>((acc, c) => ({ ...acc, [c]: (acc[c] ?? 0) + 1 }), {}),
  };
}
