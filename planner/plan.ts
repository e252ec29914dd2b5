// plan(snapshot): the whole decision for one ClusterOrder, pure and deterministic given the snapshot
// (clock = snapshot.now, names = snapshot.newName()). Three modes: deletion (never paused), paused
// (Unmanaged, or the live BMIs are unknown: nothing is created or deleted), and managed.
import {
  COND_AGENT_MATCH_AMBIGUOUS, COND_APPROVAL_REQUIRED, COND_HOST_SAFETY_REFUSED, COND_MANAGED, COND_WORKERS_FAILED, cond, mergeConditions, type ConditionInput,
} from "./conditions";
import { confirmedGone, hasIncarnation, newContext, type PlanContext, type Work } from "./context";
import { driftCondition, specDrift } from "./drift";
import { hostSafetyMessage, hostSafetyViolations, keepDeclarations, REASON_HOST_SAFETY_REFUSED } from "./hostSafety";
import { desiredInfraEnv } from "./desired";
import {
  dedupeEvents, EV_HOST_SAFETY_REFUSED, EV_PLAN_DIVERGED, EV_IGNITION_SIZE_WARNING, EV_INFRAENV_CREATED, EV_WORKER_DELETED, orderEvent,
} from "./events";
import { evaluateGates, type Gates } from "./gates";
import { fulfillmentCondition, fulfillmentReported } from "./fulfillmentHealth";
import { observeEntries } from "./lifecycle";
import { isDeleting, isUnmanaged } from "./management";
import { infraEnvName } from "./names";
import { mapNodePools, nodePoolCondition, type NodePoolMapping } from "./nodepools";
import { presenceOf } from "./presence";
import { pinnedCondition, withPin } from "./pin";
import { applyRetryNow, RETRY_NOW_ANNOTATION, type RetryNow } from "./retryNow";
import { APPROVED_PLAN_ANNOTATION, approvalGate, holdDeclarations, plannedChanges, REASON_APPROVAL_REQUIRED } from "./changeControl";
import { REASON_PLAN_DIVERGED, SAVED_PREVIEW_ANNOTATION, savedPreviewGate, type SavedPreviewGate } from "./savedPreview";
import { moveTo } from "./phases";
import { scale } from "./scaling";
import { declare, existingDeclarations } from "./declarations";
import { countWorkers, desiredWorkers, orderPhase } from "./status";
import { toIso } from "./time";
import { updateFailedCondition } from "./updateOutcome";
import type { ObservedBmi, Plan, PlannedEvent, Snapshot, WorkerDrift, WorkerStatus } from "./types";

/** The floor of a computed requeue: never sooner than a second from now. */
export const MIN_REQUEUE_MS = 1_000;

function previousEntries(snapshot: Snapshot): WorkerStatus[] {
  return (snapshot.order.status?.workers ?? []).filter((w) => w.kind === "BareMetalInstance");
}

function requeueAt(nowMs: number, deadlines: readonly number[]): string | undefined {
  if (deadlines.length === 0) return undefined;
  return toIso(Math.max(nowMs + MIN_REQUEUE_MS, Math.min(...deadlines)));
}

/** Requeue while the BMI list is unknown: the unavailable interval once the threshold is reached. */
function unknownRequeueMs(snapshot: Snapshot): number {
  const { config } = snapshot;
  return fulfillmentReported(snapshot) ? config.unavailableRequeueMs : config.transientBackoffMs[0] ?? config.ignitionPollMs;
}

function workersFailedCondition(workers: readonly WorkerStatus[], desired: number): ConditionInput {
  const failed = workers.filter((w) => w.phase === "Failed").sort((a, b) => a.name.localeCompare(b.name));
  if (failed.length === 0) return cond(COND_WORKERS_FAILED, "False", "NoFailures", "no bare-metal worker is failed");
  const details = failed.map((w) =>
    `worker ${w.name} attempt ${w.attemptCount ?? 0}, ${w.nextRetryTime ? `next retry ${w.nextRetryTime}` : "being removed"}`);
  const next = failed.map((w) => w.nextRetryTime).filter((t): t is string => Boolean(t)).sort()[0];
  return cond(COND_WORKERS_FAILED, "True", "ProvisioningFailed",
    `${failed.length} of ${Math.max(desired, failed.length)} bare-metal workers failed provisioning` +
    `${next ? `, earliest next retry ${next} (set ${RETRY_NOW_ANNOTATION} to a new value to retry now)` : ""}, retrying: ${details.join("; ")}`);
}

function findObserved(entry: WorkerStatus, bmis: readonly ObservedBmi[]): ObservedBmi | undefined {
  const id = entry.bareMetalInstance?.id;
  if (id) return bmis.find((b) => b.id === id);
  const name = entry.bareMetalInstance?.name;
  return name ? bmis.find((b) => b.name === name) : undefined;
}

/** Cluster deletion: nothing is declared (every BMI goes), entries leave once their BMI is gone. */
function planDeletion(snapshot: Snapshot): Plan {
  const nowMs = snapshot.now.getTime();
  const nowIso = toIso(nowMs);
  const events: PlannedEvent[] = [];
  const deadlines: number[] = [];
  const workers: WorkerStatus[] = [];
  for (const prev of previousEntries(snapshot)) {
    const entry: WorkerStatus = { ...prev };
    // An entry with a recorded id leaves only once a Get confirmed its BMI gone (I3).
    const gone = prev.bareMetalInstance?.id ? confirmedGone(snapshot, prev) : !findObserved(prev, snapshot.bmis ?? []);
    if (snapshot.bmis !== undefined && gone) {
      if (hasIncarnation(prev)) {
        events.push(orderEvent(EV_WORKER_DELETED, [prev.name, prev.bareMetalInstance?.name ?? ""],
          `worker ${prev.name}: BareMetalInstance ${prev.bareMetalInstance?.name ?? "?"} deleted with the cluster`));
      }
      continue;
    }
    if (entry.phase !== "Deleting") {
      moveTo(entry, "Deleting", "clusterDeletion");
      entry.attemptStartedAt = nowIso;
    }
    workers.push(entry);
  }
  if (snapshot.bmis === undefined) deadlines.push(nowMs + unknownRequeueMs(snapshot));
  else if (workers.length > 0) deadlines.push(nowMs + snapshot.config.ignitionPollMs);
  const conditions = mergeConditions(snapshot.order.status?.conditions, [fulfillmentCondition(snapshot)], nowIso, snapshot.order.metadata.generation);
  const c = countWorkers(workers);
  return {
    nodePoolReplicas: {},
    workers: [],
    status: {
      workers, desiredWorkers: desiredWorkers(snapshot.order.spec.nodeRequests), currentWorkers: c.current, readyWorkers: c.ready,
      conditions, phase: "Deleting",
    },
    fence: [],
    events,
    requeueAt: requeueAt(nowMs, deadlines),
  };
}

function observedReplicas(snapshot: Snapshot): Record<string, number> {
  const sets = new Set((snapshot.order.spec.nodeRequests ?? []).map((r) => r.nodeSet));
  return Object.fromEntries(snapshot.nodePools.filter((np) => np.nodeSet !== undefined && sets.has(np.nodeSet)).map((np) => [np.name, np.replicas]));
}

function planPaused(snapshot: Snapshot, paused: { reason: string; message: string }, conditions: ConditionInput[], requeueMs?: number): Plan {
  const nowMs = snapshot.now.getTime();
  const gates = evaluateGates(snapshot);
  const workers = previousEntries(snapshot);
  const desired = desiredWorkers(snapshot.order.spec.nodeRequests);
  const c = countWorkers(workers);
  return {
    paused,
    infraEnv: desiredInfraEnv(snapshot.order),
    // Paused means "declare what is there": the NodePools of the order's node sets keep their replicas.
    nodePoolReplicas: observedReplicas(snapshot),
    workers: existingDeclarations(snapshot, gates, workers),
    status: {
      workers, desiredWorkers: desired, currentWorkers: c.current, readyWorkers: c.ready,
      conditions: mergeConditions(snapshot.order.status?.conditions, conditions, toIso(nowMs), snapshot.order.metadata.generation),
      phase: snapshot.order.status?.phase ?? orderPhase(false, desired, workers),
    },
    fence: [],
    events: [],
    requeueAt: requeueMs === undefined ? undefined : requeueAt(nowMs, [nowMs + requeueMs]),
  };
}

function nodeSetsWithoutRequest(gates: Gates, works: readonly Work[]): string[] {
  return [...new Set(works.filter((w) => !w.drop && !gates.nodeSets.has(w.entry.nodeSet)).map((w) => w.entry.nodeSet))].sort();
}

/** Events of the managed plan's own decisions: BMIs deleted, the InfraEnv created, an oversized discovery ignition. */
function recordManagedEvents(ctx: PlanContext, all: readonly Work[], fence: readonly WorkerStatus[]): void {
  const snapshot = ctx.snapshot;
  for (const w of all) {
    if (w.drop?.deletedEvent) {
      ctx.events.push(orderEvent(EV_WORKER_DELETED, [w.entry.name, w.entry.bareMetalInstance?.name ?? ""],
        `worker ${w.entry.name}: BareMetalInstance ${w.entry.bareMetalInstance?.name ?? "?"} deleted`));
    }
  }
  if (!snapshot.infraEnv) {
    ctx.events.unshift(orderEvent(EV_INFRAENV_CREATED, [infraEnvName(snapshot.order.metadata.name), snapshot.recordedInfraEnvUid ?? "initial"],
      `InfraEnv ${infraEnvName(snapshot.order.metadata.name)} created (late binding, no clusterRef)`));
  }
  const inputs = ctx.gates.inputs;
  if (fence.length > 0 && inputs && inputs.ignitionBytes > ctx.config.ignitionWarnBytes) {
    ctx.events.push(orderEvent(EV_IGNITION_SIZE_WARNING, [snapshot.infraEnv?.uid ?? "", String(inputs.ignitionBytes)],
      `the discovery ignition is ${inputs.ignitionBytes} bytes, above the ${ctx.config.ignitionWarnBytes}-byte warning level ` +
      `(limit ${ctx.config.ignitionMaxBytes} bytes)`));
  }
}

function managedConditions(
  ctx: PlanContext, statusWorkers: readonly WorkerStatus[], desired: number, drift: readonly WorkerDrift[], pools: NodePoolMapping,
): ConditionInput[] {
  const gates = ctx.gates;
  return [
    workersFailedCondition(statusWorkers, desired),
    driftCondition(drift),
    ...gates.conditions,
    fulfillmentCondition(ctx.snapshot),
    ctx.ambiguities.length > 0
      ? cond(COND_AGENT_MATCH_AMBIGUOUS, "True", "AmbiguousAgentMatch", `${ctx.ambiguities.join("; ")}; nothing is bound until the match is unique`)
      : cond(COND_AGENT_MATCH_AMBIGUOUS, "False", "NoAmbiguity", "every correlated Agent matched uniquely"),
    nodePoolCondition(pools, gates.poolConflicts),
    cond(COND_MANAGED, "True", "Managed", "the bare-metal workers of this order are managed"),
  ];
}

/** When the managed plan is due again; `held` counts declarations kept for a transition not yet persisted. */
function scheduleManaged(ctx: PlanContext, statusWorkers: readonly WorkerStatus[], held: number, stale: boolean): void {
  if (ctx.gates.pollIgnition || stale) ctx.deadlines.push(ctx.nowMs + ctx.config.ignitionPollMs);
  // BMIs are not watched: poll while anything is in flight; come back at once after a transition whose
  // deletion waits for the new phase to be persisted.
  if (statusWorkers.some((e) => e.phase !== "Ready" && e.phase !== "Failed")) ctx.deadlines.push(ctx.nowMs + ctx.config.ignitionPollMs);
  if (held > 0 || stale) ctx.deadlines.push(ctx.nowMs);
}

function planManaged(snapshot: Snapshot): Plan {
  const gates = evaluateGates(snapshot);
  const stale = Boolean(snapshot.infraEnv?.uid && snapshot.recordedInfraEnvUid && snapshot.infraEnv.uid !== snapshot.recordedInfraEnvUid);
  const ctx = newContext(snapshot, gates, !stale);
  const works = observeEntries(ctx, previousEntries(snapshot));
  const scaled = scale(ctx, works);
  const all = [...works, ...scaled.created];
  const { workers, held } = declare(ctx, all);
  const fence = all.filter((w) => w.fenced).map((w) => w.entry);
  recordManagedEvents(ctx, all, fence);

  const statusWorkers = all.filter((w) => !w.drop).map((w) => w.entry);
  const desired = desiredWorkers(snapshot.order.spec.nodeRequests);
  const counts = countWorkers(statusWorkers);
  const drift = specDrift(snapshot, gates, statusWorkers);
  const pools = mapNodePools(snapshot.nodePools, gates.nodeSets, nodeSetsWithoutRequest(gates, all));
  const conditions = managedConditions(ctx, statusWorkers, desired, drift, pools);
  scheduleManaged(ctx, statusWorkers, held, stale);

  return {
    infraEnv: desiredInfraEnv(snapshot.order),
    nodePoolReplicas: pools.replicas,
    workers,
    status: {
      workers: statusWorkers,
      desiredWorkers: desired,
      currentWorkers: counts.current,
      readyWorkers: counts.ready,
      conditions: mergeConditions(snapshot.order.status?.conditions, conditions, ctx.nowIso, snapshot.order.metadata.generation),
      phase: orderPhase(false, desired, statusWorkers),
    },
    drift,
    fence,
    events: dedupeEvents(ctx.events),
    requeueAt: requeueAt(ctx.nowMs, ctx.deadlines),
    ...(ctx.createsDeferred > 0 ? { createsDeferred: ctx.createsDeferred } : {}),
    ...(ctx.deletesDeferred > 0 ? { deletesDeferred: ctx.deletesDeferred } : {}),
  };
}

export const UNKNOWN_BMIS_MESSAGE =
  "the live BareMetalInstances are unknown (the fulfillment-service could not be listed); nothing is created or deleted until they can be listed";

/**
 * The plan of the order's mode, with the last update's outcome and what of its declarations exists. A
 * rollback pin replaces the requested counts of its node sets for planning; the status still reports
 * the request (`desiredWorkers`) and says so in the Pinned condition.
 */
export function plan(snapshot: Snapshot): Plan {
  const pinned: Snapshot = snapshot.pin ? { ...snapshot, order: withPin(snapshot.order, snapshot.pin.counts) } : snapshot;
  // A retry-now request acts only on a managed plan; otherwise it waits, not acted on.
  const managed = !isDeleting(snapshot.order) && !isUnmanaged(snapshot.order) && snapshot.bmis !== undefined;
  const retry = managed ? applyRetryNow(pinned) : { snapshot: pinned, events: [] };
  const full = finish(snapshot, retry, guardHostSafety(retry.snapshot, planMode(retry.snapshot)));
  if (full.paused) return full;
  full.changes = plannedChanges(retry.snapshot, full);
  const nowIso = toIso(snapshot.now.getTime());
  const generation = snapshot.order.metadata.generation;
  const annotations = snapshot.order.metadata.annotations ?? {};
  // An approved saved preview binds the plan to exactly its changes; it is the approval of what it shows.
  // A deletion is gated by the approval of its kind alone: a saved preview (even a bad one) never holds nor releases it.
  const saved: SavedPreviewGate = isDeleting(snapshot.order) ? { kind: "none" }
    : savedPreviewGate(retry.snapshot, full.changes, annotations[APPROVED_PLAN_ANNOTATION]);
  if (saved.kind === "diverged") {
    const held = heldPlan(snapshot, pinned, REASON_PLAN_DIVERGED, saved.message);
    held.status.conditions = mergeConditions(held.status.conditions, [saved.condition], nowIso, generation);
    held.events = [...held.events, orderEvent(EV_PLAN_DIVERGED, [saved.saved?.id ?? "invalid"], saved.message)];
    return held;
  }
  if (saved.kind === "run") {
    full.savedPreview = saved.saved;
    full.status.conditions = mergeConditions(full.status.conditions, [saved.condition,
      cond(COND_APPROVAL_REQUIRED, "False", "Approved", `approved as saved preview ${saved.saved.id.slice(0, 12)}`)], nowIso, generation);
    return full;
  }
  // Change control: kinds the approval policy names wait, and with them the whole plan (it is approved by its fingerprint).
  const gate = approvalGate(retry.snapshot, full);
  // Held, the plan is the order as it is: not even a retry-now's reset of the Failed workers is recorded.
  const p = gate.waiting ? heldPlan(snapshot, pinned, REASON_APPROVAL_REQUIRED, gate.condition.message) : full;
  if (gate.waiting) p.approval = gate.waiting;
  p.status.conditions = mergeConditions(p.status.conditions, [gate.condition, ...(saved.condition ? [saved.condition] : [])], nowIso, generation);
  p.events = [...p.events, ...gate.events];
  const ran = saved.kind === "none" && saved.ran;
  const changes = { ...p.annotations, ...gate.annotations, ...(ran ? { [SAVED_PREVIEW_ANNOTATION]: null, [APPROVED_PLAN_ANNOTATION]: null } : {}) };
  if (Object.keys(changes).length > 0) p.annotations = changes;
  return p;
}

/** A plan that waits (for approval, or for a saved preview to be fixed): it declares every live BMI as it is. */
function heldPlan(snapshot: Snapshot, planned: Snapshot, reason: string, message: string): Plan {
  const held = planPaused(planned, { reason, message }, [], snapshot.config.ignitionPollMs);
  held.workers.push(...holdDeclarations(planned, held));
  return finish(snapshot, { snapshot: planned, events: [] }, held);
}

/** What every plan gets: the retry-now record, the update outcome, the Pinned condition, the request as desired, presence. */
function finish(snapshot: Snapshot, retry: RetryNow | { snapshot: Snapshot; events: PlannedEvent[] }, p: Plan): Plan {
  if (!p.paused) {
    if ("annotations" in retry && retry.annotations) p.annotations = retry.annotations;
    p.events = [...retry.events, ...p.events];
  }
  const extra: ConditionInput[] = [];
  const outcome = updateFailedCondition(snapshot);
  if (outcome) extra.push(outcome);
  // A paused plan changes no condition but its own; a deleted order's pin no longer matters.
  if (!p.paused && !isDeleting(snapshot.order)) extra.push(pinnedCondition(snapshot.order, snapshot.pin));
  if (extra.length > 0) {
    p.status.conditions = mergeConditions(p.status.conditions, extra, toIso(snapshot.now.getTime()), snapshot.order.metadata.generation);
  }
  if (snapshot.pin) {
    p.targetWorkers = p.status.desiredWorkers;
    p.status.desiredWorkers = desiredWorkers(snapshot.order.spec.nodeRequests);
  }
  p.presence = presenceOf(retry.snapshot, p);
  return p;
}

/**
 * The final, independent host-safety check (I1) over the finished plan: a plan that would release a
 * bound worker's BMI without a persisted retirement is replaced by a paused plan (no `up`) that keeps
 * every existing worker declared, with a Warning event and the HostSafetyRefused condition.
 */
function guardHostSafety(snapshot: Snapshot, p: Plan): Plan {
  if (isDeleting(snapshot.order)) return p;
  const nowIso = toIso(snapshot.now.getTime());
  const generation = snapshot.order.metadata.generation;
  const violations = hostSafetyViolations(snapshot, p);
  if (violations.length === 0) {
    // A paused plan changes no condition but its own (Unmanaged: only Managed).
    if (p.paused) return p;
    p.status.conditions = mergeConditions(p.status.conditions,
      [cond(COND_HOST_SAFETY_REFUSED, "False", "HostSafe", "no bound worker's BareMetalInstance is released without a persisted retirement")],
      nowIso, generation);
    return p;
  }
  const message = hostSafetyMessage(violations);
  const safe = planPaused(snapshot, { reason: REASON_HOST_SAFETY_REFUSED, message },
    [cond(COND_HOST_SAFETY_REFUSED, "True", REASON_HOST_SAFETY_REFUSED, message)], snapshot.config.ignitionPollMs);
  // Existing declarations skip a create without inputs: keep every protected BMI the paused plan misses.
  safe.workers.push(...keepDeclarations(snapshot, hostSafetyViolations(snapshot, safe)));
  safe.events = [orderEvent(EV_HOST_SAFETY_REFUSED, violations.map((v) => v.entry.name).sort(), message)];
  return safe;
}

function planMode(snapshot: Snapshot): Plan {
  const order = snapshot.order;
  if (isDeleting(order)) return planDeletion(snapshot);
  if (isUnmanaged(order)) {
    return planPaused(snapshot,
      { reason: "Unmanaged", message: "the order is annotated osac.openshift.io/management-state=Unmanaged; workers are left as they are" },
      [cond(COND_MANAGED, "False", "Unmanaged", "osac.openshift.io/management-state is Unmanaged: steady-state reconcile is skipped; deletion still runs")]);
  }
  if (snapshot.bmis === undefined) {
    return planPaused(snapshot, { reason: "FulfillmentServiceUnknown", message: UNKNOWN_BMIS_MESSAGE },
      [fulfillmentCondition(snapshot)], unknownRequeueMs(snapshot));
  }
  return planManaged(snapshot);
}
