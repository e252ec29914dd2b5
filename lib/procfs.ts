// The process table as Linux's procfs shows it: who is whose parent, and what state a process is in. Used
// to stop a pulumi CLI with its language host and provider plugins (stacks.ts), to judge a lock's pid
// (locks.ts) and by the fault suite (failpoints.ts).
import * as fs from "node:fs";

export interface ProcStat {
  /** One letter: R, S, D, Z (zombie), X (dead), ... */
  state: string;
  ppid: number;
}

/**
 * Fields of /proc/<pid>/stat, or undefined when the process is gone or there is no procfs. The command name
 * (field 2) may hold spaces and parentheses, so the fields after it are found from its last ")".
 */
export function procStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state, ppid: Number(ppid) };
}

/** `root` and every process below it, parents before children (only `root` without procfs). */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  let pids: string[] = [];
  try {
    pids = fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    // no procfs
  }
  for (const d of pids) {
    const ppid = procStat(Number(d))?.ppid; // undefined: exited meanwhile
    if (ppid !== undefined) children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]) ?? []));
  return out;
}
