// Shared by the fault suites: a "lane" is one ClusterOrder in its own namespace with its own state
// directory and Lease, so several reconcilers (each killed at its own failpoint) can run side by side
// on one lab without touching each other. A lane records, per step, what the suites assert: duplicates,
// orphans, healthy workers lost, how long convergence took (in timer ticks) and how many updates ran.
import * as fs from "node:fs";
import * as path from "node:path";
import type { FulfillmentClient } from "../../clients/fulfillment";
import type { Lab, SampleNodeRequest } from "../../lab";
import type { ClusterOrder } from "../../planner/types";
import { eventually } from "../support/eventually";
import { productEnv } from "../support/labEnv";
import { OrderProbe } from "../support/orderWatch";
import { startReconciler, type ReconcilerProcess } from "../support/reconciler";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every worker Ready, n of them, and exactly n live BMIs. */
export function isReady(o: ClusterOrder | undefined, n: number): boolean {
  const ws = o?.status?.workers ?? [];
  return o?.status?.readyWorkers === n && ws.length === n && ws.every((w) => w.phase === "Ready");
}

export interface StepRecord {
  lane: string;
  step: string;
  /** Set when the step could not be carried out (a failpoint that never fired, no convergence). */
  error?: string;
  duplicates: string[];
  orphans: string[];
  /** BMI names of workers Ready before the step that are gone although they should be kept. */
  healthyLost: string[];
  /** BMIs removed by a scale-down (expected count is the step's business). */
  removed: string[];
  convergeMs: number;
  /** convergeMs in timer ticks (rounded up). */
  ticks: number;
  /** `up` runs of the restarted reconciler until convergence. */
  ups: number;
  /** Duplicates seen right after the kill, before any restart. */
  duplicatesAtKill: string[];
  /** Processes of the killed reconciler still alive after the kill (must be none): "pid command". */
  survivors: string[];
  /** After a deletion converged: checkpoints of the order's stack still in the state (must be none). */
  stacksLeft: string[];
}

export function emptyRecord(lane: string, step: string): StepRecord {
  return { lane, step, duplicates: [], orphans: [], healthyLost: [], removed: [], convergeMs: 0, ticks: 0, ups: 0, duplicatesAtKill: [], survivors: [],
    stacksLeft: [] };
}

/**
 * A process's identity: its pid and start time (field 22 of /proc/<pid>/stat). PIDs are reused quickly
 * on a busy machine (pid_max is 32768 here and every thread takes one), so a pid alone seen seconds ago
 * may name someone else's process now. Undefined when the process is gone or a zombie.
 */
export function processIdentity(pid: number): string | undefined {
  const f = statFields(pid);
  return f && f[0] !== "Z" ? `${pid}:${f[19]}` : undefined;
}

/** A process's state letter from /proc (R, S, T stopped, D, Z, ...), or "?" once it is gone. */
export function processState(pid: number): string {
  return statFields(pid)?.[0] ?? "?";
}

/** The fields of /proc/<pid>/stat after the command name (state first), or undefined once it is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** The command line of a process, for messages ("" once it is gone). */
export function commandLine(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim().slice(0, 160);
  } catch {
    return "";
  }
}

export class Lane {
  readonly probe: OrderProbe;
  readonly env: NodeJS.ProcessEnv;
  uid = "";
  private runs = 0;
  readonly records: StepRecord[] = [];
  current?: ReconcilerProcess;
  identity = "";

  constructor(readonly lab: Lab, readonly f: FulfillmentClient, readonly id: string, readonly ns: string,
    readonly name: string, readonly intervalS: number, extraEnv: Record<string, string> = {}) {
    const stateDir = path.join(lab.dir, "lanes", id, "state");
    this.env = { ...productEnv(lab, stateDir), BMW_LOG_LEVEL: "info", ...extraEnv };
    this.probe = new OrderProbe(lab.kubeConfig(), ns, name, f);
  }

  get stack(): string {
    return `${this.ns}--${this.name}`;
  }

  /** The checkpoints of this lane's stack in its file backend (a removed stack leaves at most a `.bak`). */
  stackCheckpoints(): string[] {
    const stacks = path.join(this.lab.dir, "lanes", this.id, "state", ".pulumi", "stacks");
    if (!fs.existsSync(stacks)) return [];
    return fs.readdirSync(stacks, { recursive: true, encoding: "utf8" })
      .filter((f) => path.basename(f) === `${this.stack}.json` || path.basename(f) === `${this.stack}.json.gz`);
  }

  async createOrder(nodeRequests: SampleNodeRequest[]): Promise<void> {
    await this.lab.createNamespace(this.ns);
    const o = await this.lab.createSampleOrder({ namespace: this.ns, name: this.name, nodeRequests });
    this.uid = o.uid;
  }

  /**
   * Starts a reconciler for this lane only (its namespace, its Lease), optionally armed with failpoints.
   * By default every reconciler of a lane has the same identity: the same pod, its container restarted
   * by the kubelet, which takes its Lease back at once instead of waiting for it to expire. A second
   * replica passes an identity of its own.
   */
  start(label: string, env: Record<string, string> = {}, identity = `${this.id}-pod`): ReconcilerProcess {
    const n = ++this.runs;
    this.identity = identity;
    const r = startReconciler({ ...this.env, ...env },
      ["--interval", String(this.intervalS), "--namespace", this.ns, "--identity", this.identity, "--lease-namespace", this.ns],
      path.join(this.lab.dir, "lanes", this.id, `reconciler-${n}-${label}.log`));
    this.current = r;
    return r;
  }

  failpointDir(step: string): string {
    return path.join(this.lab.dir, "lanes", this.id, "failpoints", `${this.runs + 1}-${step.replace(/[^a-z0-9.@-]/gi, "_")}`);
  }

  async readyBmiNames(): Promise<string[]> {
    const o = await this.probe.order();
    return (o?.status?.workers ?? []).filter((w) => w.phase === "Ready").map((w) => w.bareMetalInstance?.name ?? "").filter(Boolean);
  }

  async liveBmiNames(): Promise<string[]> {
    return (await this.probe.bmis(this.uid)).filter((b) => !b.metadata?.deletion_timestamp).map((b) => b.metadata?.name ?? "");
  }

  /** `up` runs logged by a reconciler for this lane's order. */
  upsLogged(r: ReconcilerProcess): number {
    const want = `"order":"${this.ns}/${this.name}"`;
    return fs.readFileSync(r.logFile, "utf8").split("\n").filter((l) => l.includes(want) && l.includes('"action":"up"')).length;
  }

  /** One line on where the order stands (for failure messages). */
  async describe(): Promise<string> {
    const o = await this.probe.order();
    if (!o) return "order gone";
    const ws = (o.status?.workers ?? []).map((w) => `${w.name}:${w.phase}${w.lastFailureReason ? `(${w.lastFailureReason})` : ""}`);
    const conds = (o.status?.conditions ?? []).filter((c) => (c.type === "Managed") !== (c.status === "True")).map((c) => `${c.type}=${c.status}`);
    return `ready ${o.status?.readyWorkers ?? 0}; workers ${ws.join(" ") || "none"}; live BMIs ${(await this.liveBmiNames()).length}; ${conds.join(" ")}`;
  }

  /** Waits for n Ready workers with n live BMIs (or, with n = "gone", the order and every BMI gone). */
  async converge(n: number | "gone", timeoutMs: number): Promise<boolean> {
    return eventually(async () => {
      if (n === "gone") {
        if (await this.probe.order()) return undefined;
        return (await this.probe.bmis(this.uid)).length === 0 ? true : undefined;
      }
      if (!isReady(await this.probe.order(), n)) return undefined;
      return (await this.liveBmiNames()).length === n ? true : undefined;
    }, timeoutMs, 500).catch(() => false);
  }
}

/** What the product's planner would declare for the lane's order right now (diagnostics on failure). */
export async function planNow(lane: Lane): Promise<string> {
  const { observe } = await import("../../io/observe");
  const { plan, plannerConfigFromEnv } = await import("../../planner");
  const { Kube } = await import("../../clients/kube");
  const obs = await observe({ kube: new Kube(lane.lab.kubeConfig()), fulfillment: lane.f, config: plannerConfigFromEnv(lane.env) },
    { namespace: lane.ns, name: lane.name });
  const p = plan(obs.snapshot);
  return JSON.stringify({
    agents: obs.snapshot.agents.map((a) => ({ name: a.name, labels: a.labels, macs: a.macs, state: a.state })),
    bmis: obs.snapshot.bmis?.map((b) => ({ name: b.name, state: b.state, macs: b.macs })),
    cd: obs.snapshot.clusterDeployment,
    workers: p.workers.map((w) => ({ slot: w.slot, binding: w.binding, retain: w.retainBinding })),
    status: p.status.workers.map((w) => `${w.name}:${w.phase}`),
  });
}
