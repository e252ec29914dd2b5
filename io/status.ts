// Writing what the planner decided back to the hub: the Create fence before `up`, the status after it
// (server-side apply on /status under our field manager, without force, of the fields this controller
// owns), and the design's Events, each emitted once per fact (the event name is derived from the
// planner's key, so a repeat is an AlreadyExists, also across restarts).
import * as crypto from "node:crypto";
import type { HubApi } from "../clients/kube";
import { EV_WORKER_CREATED, slotEvent } from "../planner/events";
import type { ClusterOrder, Plan, PlannedEvent, WorkerStatus } from "../planner/types";

/** plan.status.workers with every fence entry upserted by slot name. */
export function workersWithFence(plan: Plan): WorkerStatus[] {
  const byName = new Map(plan.status.workers.map((w) => [w.name, w]));
  for (const f of plan.fence) byName.set(f.name, f);
  return [...byName.values()];
}

/**
 * The fields this controller owns (OSAC-2135 §3.2): its workers[] entries, the three counts and its
 * condition types. `status.phase` is the order's overview and belongs to osac-operator (it also covers the
 * hosted cluster); it is never written here, so the planner's phase stays internal.
 */
export function statusBody(plan: Plan, workers: WorkerStatus[] = workersWithFence(plan)): NonNullable<ClusterOrder["status"]> {
  return {
    workers,
    desiredWorkers: plan.status.desiredWorkers,
    currentWorkers: plan.status.currentWorkers,
    readyWorkers: plan.status.readyWorkers,
    conditions: plan.status.conditions,
  };
}

/** The fence: the full status including new Attempted entries, conditional on the observed resourceVersion. */
export async function writeFence(kube: Pick<HubApi, "applyClusterOrderStatus">, order: ClusterOrder, plan: Plan): Promise<ClusterOrder> {
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
export async function writeStatus(kube: Pick<HubApi, "applyClusterOrderStatus">, order: ClusterOrder, plan: Plan,
  onFieldConflict?: (fields: string[]) => void): Promise<ClusterOrder> {
  return kube.applyClusterOrderStatus({ namespace: order.metadata.namespace, name: order.metadata.name },
    statusBody(plan, reportedWorkers(order, plan)), { resourceVersion: order.metadata.resourceVersion, onFieldConflict });
}

export function eventName(order: ClusterOrder, key: string): string {
  return `${order.metadata.name}.${crypto.createHash("sha256").update(`${order.metadata.uid}/${key}`).digest("hex").slice(0, 16)}`;
}

/**
 * The events a report may emit: only facts about slots that exist in the persisted status. A plan's new
 * slots and incarnations are its own guesses (random names) until a fence persists them, and the
 * program fences its own plan, not this one; so WorkerCreated is never taken from the plan but derived
 * from the written status: an incarnation whose BMI id was first recorded now was created.
 */
export function reportedEvents(order: ClusterOrder, plan: Plan, written: readonly WorkerStatus[] = reportedWorkers(order, plan)): PlannedEvent[] {
  const persisted = new Map((order.status?.workers ?? []).map((w) => [w.name, w]));
  const unpersisted = new Set(plan.fence.map((f) => f.name).filter((n) => !persisted.has(n)));
  const planned = plan.events.filter((e) => e.reason !== EV_WORKER_CREATED && !unpersisted.has(e.key.split("/")[1] ?? ""));
  const created: PlannedEvent[] = [];
  for (const w of written) {
    const before = persisted.get(w.name);
    const id = w.bareMetalInstance?.id;
    if (!before || !id || before.bareMetalInstance?.id === id || !w.bareMetalInstance?.name) continue;
    if (before.bareMetalInstance?.name !== w.bareMetalInstance.name) continue; // only the incarnation the fence recorded
    const attempt = w.attemptCount ?? 1;
    created.push(slotEvent(EV_WORKER_CREATED, w.name, attempt,
      `BareMetalInstance ${w.bareMetalInstance.name} created for worker ${w.name} (node set ${w.nodeSet}, attempt ${attempt})`));
  }
  return [...created, ...planned];
}

/** Emits each event once; returns the reasons emitted now. */
export async function recordEvents(kube: Pick<HubApi, "createEvent">, order: ClusterOrder, plan: Plan, events: readonly PlannedEvent[] = plan.events): Promise<string[]> {
  const emitted: string[] = [];
  for (const e of events) {
    const created = await kube.createEvent(order, { type: e.type, reason: e.reason, message: e.message, name: eventName(order, e.key) });
    if (created) emitted.push(e.reason);
  }
  return emitted;
}
