// Failpoints: named places in the reconciler, the program and the providers where the fault suite
// (tests/faults) can simulate the death of the reconciler's node. A failpoint does nothing unless
// BMW_FAILPOINTS names it; when it fires, every process of the reconciler dies with SIGKILL at once
// (the reconciler, pulumi, the language host, the program and the dynamic-provider host), as if the
// pod's node lost power exactly there.
//
//   BMW_FAILPOINTS       comma list of points: "name" fires on the first hit, "name@N" on the Nth
//   BMW_FAILPOINT_DIR    where hits are counted across processes (one mkdir per hit, which is atomic)
//                        and where "fired-<name>" is written just before the kill; default: os.tmpdir()
//   BMW_FAILPOINT_PGID   the reconciler's process group (controller/run.ts sets it to its own pid)
//
// Pulumi starts its plugins in process groups of their own, so killing the reconciler's group alone
// would leave the language host and the provider host running as orphans: every process under the
// reconciler (its tree, and anything carrying its BMW_FAILPOINT_PGID) is frozen (SIGSTOP) first, then killed.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { descendants } from "./procfs";

export interface FailpointSpec {
  name: string;
  /** Fire on this hit (1-based). */
  hit: number;
}

/** Parses BMW_FAILPOINTS ("a,b@3"); malformed entries are ignored rather than guessed at. */
export function parseFailpoints(value: string | undefined): FailpointSpec[] {
  const out: FailpointSpec[] = [];
  for (const raw of (value ?? "").split(",")) {
    const m = /^([A-Za-z0-9_.-]+)(?:@(\d+))?$/.exec(raw.trim());
    if (m) out.push({ name: m[1], hit: m[2] ? Math.max(1, Number(m[2])) : 1 });
  }
  return out;
}

function counterDir(env: NodeJS.ProcessEnv): string {
  return env.BMW_FAILPOINT_DIR || path.join(os.tmpdir(), "bmw-failpoints");
}

/** Counts one hit of `name` (atomic across processes: the first free <name>.<i> directory wins). */
export function countHit(dir: string, name: string): number {
  fs.mkdirSync(dir, { recursive: true });
  for (let i = 1; ; i++) {
    try {
      fs.mkdirSync(path.join(dir, `${name}.${i}`));
      return i;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
}

/** The file a fired failpoint leaves behind (tests wait for it). */
export function firedMarker(dir: string, name: string): string {
  return path.join(dir, `fired-${name}`);
}

/** pid and every process below it (from /proc). */
export const processTree = descendants;

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/**
 * Every process started under the reconciler, even one whose parent has already died and which was
 * re-parented out of its tree: each inherits the reconciler's BMW_FAILPOINT_PGID in its environment.
 */
function reconcilerProcesses(pgid: number): number[] {
  const found = new Set(processTree(pgid));
  const marker = `\0BMW_FAILPOINT_PGID=${pgid}\0`;
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d) || found.has(Number(d))) continue;
    try {
      if (`\0${fs.readFileSync(`/proc/${d}/environ`, "latin1")}`.includes(marker)) found.add(Number(d));
    } catch {
      // gone, or not ours to read
    }
  }
  return [...found];
}

/** SIGKILLs the reconciler's process group and every process of it, then this process. Never returns. */
function die(env: NodeJS.ProcessEnv): never {
  const pgid = Number(env.BMW_FAILPOINT_PGID);
  if (Number.isInteger(pgid) && pgid > 1) {
    // Freeze first so nothing reacts (or spawns) while the processes are being killed. A process found
    // in one pass may have started a child before it was frozen, so passes repeat until one finds
    // nothing new: two fixed passes let a provider host started at that moment live on (CI, 2026-12-04).
    const frozen = new Set<number>();
    for (let pass = 0; pass < 20; pass++) {
      let added = 0;
      for (const pid of reconcilerProcesses(pgid)) {
        if (pid !== process.pid && !frozen.has(pid)) {
          signal(pid, "SIGSTOP");
          frozen.add(pid);
          added++;
        }
      }
      if (added === 0) break;
    }
    // Each frozen process first, then the group: the group may hold this very process (a failpoint in a
    // provider host), and killing it first would leave the frozen processes outside the group stopped forever.
    for (const pid of frozen) signal(pid, "SIGKILL");
    signal(-pgid, "SIGKILL");
  }
  process.kill(process.pid, "SIGKILL");
  // SIGKILL to oneself is delivered before kill() returns; this only satisfies the type checker.
  throw new Error("unreachable");
}

/**
 * A place where the fault suite may kill the reconciler. Costs one env lookup when BMW_FAILPOINTS is
 * unset (production).
 */
export function failpoint(name: string, env: NodeJS.ProcessEnv = process.env): void {
  if (!env.BMW_FAILPOINTS) return;
  const spec = parseFailpoints(env.BMW_FAILPOINTS).find((s) => s.name === name);
  if (!spec) return;
  const dir = counterDir(env);
  if (countHit(dir, name) !== spec.hit) return;
  fs.writeFileSync(firedMarker(dir, name), `${process.pid} ${new Date().toISOString()}\n`);
  process.stderr.write(`failpoint ${name} fired in pid ${process.pid}: killing the reconciler\n`);
  die(env);
}

/**
 * A place where a test may hold the process for a while (BMW_FAILPOINT_DELAYS="name=ms,..."), to put
 * another writer exactly inside a window (e.g. between the program's observation and its fence).
 * Costs one env lookup when unset (production).
 */
export async function failpointDelay(name: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!env.BMW_FAILPOINT_DELAYS) return;
  for (const raw of env.BMW_FAILPOINT_DELAYS.split(",")) {
    const m = /^([A-Za-z0-9_.-]+)=(\d+)$/.exec(raw.trim());
    if (m && m[1] === name) await new Promise((resolve) => setTimeout(resolve, Number(m[2])));
  }
}
