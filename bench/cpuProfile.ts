// Where the CPU goes: samples /proc every `everyMs` for every process under a root pid (the
// reconciler) and keeps, per process (pid + start time), the last CPU time seen and what kind of
// process it is. A process's CPU in its last interval before exit is missed (at most everyMs of it).
import * as fs from "node:fs";

export type ProcessKind = "reconciler" | "pulumi CLI" | "language host" | "program (node)" | "dynamic-provider host (node)" |
  "kubernetes provider" | "other";

interface Seen {
  kind: ProcessKind;
  cpuTicks: number;
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

const PAGE_KIB = 4;

function stat(pid: number): { ppid: number; start: string; cpu: number; rssKiB: number } | undefined {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    // fields after the command, 0-based from state: ppid 1, utime 11, stime 12, starttime 19, rss 21 (pages)
    return { ppid: Number(f[1]), cpu: Number(f[11]) + Number(f[12]), start: f[19], rssKiB: Number(f[21]) * PAGE_KIB };
  } catch {
    return undefined;
  }
}

export function classify(cmdline: string): ProcessKind {
  const argv = cmdline.split("\0");
  const exe = argv[0].split("/").pop() ?? "";
  if (exe === "pulumi") return "pulumi CLI";
  if (exe === "pulumi-language-nodejs") return "language host";
  if (exe.startsWith("pulumi-resource-kubernetes")) return "kubernetes provider";
  if (cmdline.includes("dynamic-provider") || cmdline.includes("hostLaunch.js") || exe === "pulumi-resource-pulumi-nodejs") return "dynamic-provider host (node)";
  if (cmdline.includes("@pulumi/pulumi/cmd/run")) return "program (node)";
  if (cmdline.includes("cli/launch.js") || cmdline.includes("cli/main.ts")) return "reconciler";
  return "other";
}

export class CpuProfile {
  private readonly seen = new Map<string, Seen>();
  private timer?: NodeJS.Timeout;
  private startedAt = 0;
  private wallMs = 0;
  /** The largest sum of RSS over the processes counted, at one sample. */
  private peakRssKiB = 0;

  /** `includeRoot` false: only the root's descendants (the root is the sampling process itself). */
  constructor(private readonly root: number, private readonly everyMs = 100, private readonly includeRoot = true) {}

  start(): void {
    this.startedAt = Date.now();
    // The root's CPU before the start is not ours to count: remember it as the base.
    this.sample(true);
    this.timer = setInterval(() => this.sample(false), this.everyMs);
  }

  private readonly base = new Map<string, number>();

  private sample(isBase: boolean): void {
    const parents = new Map<number, number>();
    const info = new Map<number, { start: string; cpu: number; rssKiB: number }>();
    for (const d of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(d)) continue;
      const s = stat(Number(d));
      if (!s) continue;
      parents.set(Number(d), s.ppid);
      info.set(Number(d), s);
    }
    const under = (pid: number): boolean => {
      for (let p: number | undefined = pid, hops = 0; p && hops < 64; p = parents.get(p), hops++) if (p === this.root) return true;
      return false;
    };
    let rssKiB = 0;
    for (const [pid, s] of info) {
      if (!under(pid) || (!this.includeRoot && pid === this.root)) continue;
      rssKiB += s.rssKiB;
      const key = `${pid}:${s.start}`;
      if (isBase) {
        this.base.set(key, s.cpu);
        continue;
      }
      // A process's kind is taken at its first sample: its command line is read once, not at every sample.
      let kind = this.seen.get(key)?.kind;
      if (!kind) {
        try {
          kind = classify(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8"));
        } catch {
          continue;
        }
      }
      this.seen.set(key, { kind, cpuTicks: s.cpu - (this.base.get(key) ?? 0) });
    }
    if (!isBase) this.peakRssKiB = Math.max(this.peakRssKiB, rssKiB);
  }

  stop(): { wallMs: number; peakRssMiB: number; byKind: Record<string, { processes: number; cpuSeconds: number }> } {
    if (this.timer) clearInterval(this.timer);
    this.wallMs = Date.now() - this.startedAt;
    const byKind: Record<string, { processes: number; cpuSeconds: number }> = {};
    for (const s of this.seen.values()) {
      const k = (byKind[s.kind] ??= { processes: 0, cpuSeconds: 0 });
      k.processes++;
      k.cpuSeconds += s.cpuTicks / TICKS_PER_SECOND;
    }
    return { wallMs: this.wallMs, peakRssMiB: this.peakRssKiB / 1024, byKind };
  }
}
