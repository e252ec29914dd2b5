// Counting pulumi processes: a copy of the toolchain cache layout whose `pulumi` is a small bash
// wrapper that logs each sub-command and its wall time around the real binary. Everything else is a
// symlink to the real cache. A process started with BMW_CACHE_DIR pointing here runs the real
// toolchain while every CLI process it spawns leaves a start and an end line.
import * as fs from "node:fs";
import * as path from "node:path";
import type { Toolchain } from "../stack/toolchain";

export interface PulumiShim {
  cacheDir: string;
  logFile: string;
  /** CLI processes started so far. */
  count(): number;
  /** Finished processes by sub-command ("up", "stack output", "config get", ...): how many, and their total wall time. */
  byCommand(): Record<string, { count: number; totalMs: number }>;
}

/** With `append`, an existing process log is carried on (a resumed run), not started afresh. */
export function createPulumiShim(real: Toolchain, dir: string, opts: { append?: boolean } = {}): PulumiShim {
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
  if (!opts.append || !fs.existsSync(logFile)) fs.writeFileSync(logFile, "");
  // One line per process when it starts ("start <command>") and one when it ends ("end <command> <ms>"),
  // written with bash builtins only ($EPOCHREALTIME, printf), so the wrapper spawns nothing itself.
  fs.writeFileSync(path.join(shimBin, "pulumi"), [
    "#!/bin/bash",
    `cmd="$1"; case "$1" in stack|config) cmd="$1 $2";; esac`,
    `printf 'start %s\\n' "$cmd" >> '${logFile}'`,
    "t0=${EPOCHREALTIME/./}",
    `'${path.join(realBin, "pulumi")}' "$@"`,
    "rc=$?",
    "t1=${EPOCHREALTIME/./}",
    `printf 'end %s %d\\n' "$cmd" $(( (t1 - t0) / 1000 )) >> '${logFile}'`,
    "exit $rc",
    "",
  ].join("\n"), { mode: 0o755 });
  const lines = () => fs.readFileSync(logFile, "utf8").split("\n").filter(Boolean);
  return {
    cacheDir, logFile,
    count: () => lines().filter((l) => l.startsWith("start ")).length,
    byCommand: () => {
      const out: Record<string, { count: number; totalMs: number }> = {};
      for (const l of lines()) {
        const m = /^end (.+) (\d+)$/.exec(l);
        if (!m) continue;
        const c = (out[m[1]] ??= { count: 0, totalMs: 0 });
        c.count++;
        c.totalMs += Number(m[2]);
      }
      return out;
    },
  };
}
