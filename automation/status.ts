// Writing what the planner decided back to the hub: the Create fence before `up`, the full status after
// it (server-side apply on /status under our field manager, so other controllers' fields survive), and
// the design's Events, each emitted once per fact (the event name is derived from the planner's key, so a
// repeat is an AlreadyExists, also across restarts).
import * as crypto from "node:crypto";
import type { Kube } from "../clients/kube";
import type { ClusterOrder, DesiredWorker, Plan, WorkerStatus } from "../planner/types";

export interface DesiredSet {
  /** Requested workers per node set at the time of the update (what rollback restores). */
  nodeSets: Record<string, number>;
  workers: { slot: string; nodeSet: string; bmi: string; agent?: string }[];
}

export function desiredSetOf(order: ClusterOrder, plan: Plan, workers: DesiredWorker[] = plan.workers): DesiredSet {
  const nodeSets: Record<string, number> = {};
  for (const r of order.spec.nodeRequests ?? []) if (r.bareMetal?.instanceType) nodeSets[r.nodeSet] = r.numberOfNodes;
  return {
    nodeSets,
    workers: workers.map((w) => ({ slot: w.slot, nodeSet: w.nodeSet, bmi: w.bmi.name, agent: w.binding?.agentName })),
  };
}

/** plan.status.workers with every fence entry upserted by slot name. */
export function workersWithFence(plan: Plan): WorkerStatus[] {
  const byName = new Map(plan.status.workers.map((w) => [w.name, w]));
  for (const f of plan.fence) byName.set(f.name, f);
  return [...byName.values()];
}

export function statusBody(plan: Plan, workers: WorkerStatus[] = workersWithFence(plan)): NonNullable<ClusterOrder["status"]> {
  return {
    workers,
    desiredWorkers: plan.status.desiredWorkers,
    currentWorkers: plan.status.currentWorkers,
    readyWorkers: plan.status.readyWorkers,
    conditions: plan.status.conditions,
    ...(plan.status.phase ? { phase: plan.status.phase } : {}),
  };
}

/** The fence: the full status including new Attempted entries, conditional on the observed resourceVersion. */
export async function writeFence(kube: Kube, order: ClusterOrder, plan: Plan): Promise<ClusterOrder> {
  return kube.applyClusterOrderStatus(
    { namespace: order.metadata.namespace, name: order.metadata.name },
    statusBody(plan),
    { resourceVersion: order.metadata.resourceVersion },
  );
}

/**
 * The workers a report writes: it never persists a *new* fence entry (only the fence may do that); such a
 * slot keeps its previous entry, or none.
 */
export function reportedWorkers(order: ClusterOrder, plan: Plan): WorkerStatus[] {
  const previous = new Map((order.status?.workers ?? []).map((w) => [w.name, w]));
  const fenced = new Set(plan.fence.map((f) => f.name));
  const out: WorkerStatus[] = [];
  for (const w of plan.status.workers) {
    if (!fenced.has(w.name)) out.push(w);
    else if (previous.has(w.name)) out.push(previous.get(w.name)!);
  }
  return out;
}

/**
 * The report: conditional on the resourceVersion it was planned from (ConflictError when stale). An
 * unconditional write planned before a fence landed would drop the fence's Attempted entries, and a
 * BMI whose entry is gone is an orphan to the next plan.
 */
export async function writeStatus(kube: Kube, order: ClusterOrder, plan: Plan): Promise<ClusterOrder> {
  return kube.applyClusterOrderStatus({ namespace: order.metadata.namespace, name: order.metadata.name },
    statusBody(plan, reportedWorkers(order, plan)), { resourceVersion: order.metadata.resourceVersion });
}

export function eventName(order: ClusterOrder, key: string): string {
  return `${order.metadata.name}.${crypto.createHash("sha256").update(`${order.metadata.uid}/${key}`).digest("hex").slice(0, 16)}`;
}

/** Emits each planned event once; returns the reasons emitted now. */
export async function recordEvents(kube: Kube, order: ClusterOrder, plan: Plan): Promise<string[]> {
  const emitted: string[] = [];
  for (const e of plan.events) {
    const created = await kube.createEvent(order, { type: e.type, reason: e.reason, message: e.message, name: eventName(order, e.key) });
    if (created) emitted.push(e.reason);
  }
  return emitted;
}
