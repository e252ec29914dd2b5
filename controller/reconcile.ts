// One reconcile of one ClusterOrder, as a short list of phases: get the order, keep our finalizer on it
// (or run the finalizer path of a deleted order: finalize.ts), observe and plan (observeOrder.ts), decide
// (decide.ts: pause, skip or update; refresh; the applied record), fence (what must be on the order before
// `up`), update (`pulumi up` on the order's stack) and report (report.ts: status, events, one metadata
// patch). A failed update is reported on the order and remembered for the next plans.
import * as crypto from "node:crypto";
import { ConflictError, InvalidClusterOrderError } from "../clients/kube";
import { APPLIED_ANNOTATION, FINALIZER, INFRAENV_UID_ANNOTATION } from "../planner/names";
import { withPin } from "../planner/pin";
import { EV_RETRY_NOW } from "../planner/retryNow";
import { type SavedPreview, stepsDivergence } from "../planner/savedPreview";
import { isBareMetalRequest } from "../planner/status";
import type { ClusterOrder, Plan, Snapshot } from "../planner/types";
import type { Observation, OrderRef } from "../io/observe";
import { failpoint } from "../lib/failpoints";
import { isNotLeaderError, NotLeaderError } from "../lib/notLeader";
import { decide, type Decision, settleAfterUpdate } from "./decide";
import { finalize } from "./finalize";
import { observeAndPlan } from "./observeOrder";
import { bmiDigest } from "../io/orderBmiDigests";
import { unwatchedKeys } from "../io/unwatched";
import { pinKey, type SettleToken, unsettledReason } from "./settledOrders";
import {
  clockOf, orderKey, type Observed, type OrderMemory, type ReconcileDeps, type ReconcileResult, type UpResult,
} from "./reconcileDeps";
import { type AnnotationChanges, failureEvents, progressReports, recordFailure, reportLatest, TENANT_ANNOTATION } from "./report";

export type {
  OrderMemory, ReconcileDeps, ReconcileResult, StackRunner, UpOptions, UpResult, WorkerDurations,
} from "./reconcileDeps";
export { appliedRecord, refreshOffset } from "./decide";
export { NAME_ABSENT_PASSES } from "./finalize";
export { failureEvents, observeDurations, TENANT_ANNOTATION } from "./report";

export async function reconcileOrder(deps: ReconcileDeps, ref: OrderRef): Promise<ReconcileResult> {
  const order = await readOrder(deps, ref);
  if (!order) return { action: "gone" };
  // A sharded replica acts only on the orders of its shards, judged by the uid just read.
  if (deps.ownership && !deps.ownership.claim(ref, order.metadata.uid)) {
    throw new NotLeaderError(`not the leader: ${ref.namespace}/${ref.name} belongs to a shard this replica does not hold`);
  }
  if (notOurs(order)) {
    deps.memory.delete(orderKey(ref));
    return { action: "ignored" };
  }
  deps.hub?.begin(order.metadata.uid);
  try {
    return await reconcileOurs(deps, ref, order);
  } finally {
    deps.hub?.end(order.metadata.uid);
  }
}

async function reconcileOurs(deps: ReconcileDeps, ref: OrderRef, order: ClusterOrder): Promise<ReconcileResult> {
  const mem = memoryOf(deps, ref);
  const settle = deps.settled?.begin(ref);
  if (order.metadata.deletionTimestamp) return finalize(deps, ref, order, mem);
  const current = await keepFinalizer(deps, ref, order);
  const observed = await observeAndPlan(deps, ref, mem, { order: current });
  const decision = await decideAndRemember(deps, ref, mem, observed);
  if (decision.action !== "update") {
    const result = await reportWithoutUpdate(deps, ref, mem, observed, decision);
    if (settle && decision.action === "skip") recordIfSettled(deps, settle, mem, observed);
    return result;
  }
  const saved = observed.plan.savedPreview;
  if (saved) {
    const refused = await previewSavedUpdate(deps, ref, mem, observed, saved);
    if (refused) return refused;
  }
  const observation = await fenceBeforeUpdate(deps, ref, mem, observed, decision);
  const up = await runUpdate(deps, ref, mem, observed, observation);
  // What the update did, held to the saved preview it ran (the report removes the preview and says how it went).
  if (saved) mem.savedPreview = { id: saved.id, ran: true, ...optional("diverged", stepsDivergence(saved, up, "done")) };
  return reportAfterUpdate(deps, ref, mem, decision, observed.plan, up);
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}

/**
 * An approved saved preview runs only if a preview of this very update (same observation, same program)
 * shows exactly its steps. Otherwise nothing runs: the order is held with PlanDiverged True, naming the difference.
 */
async function previewSavedUpdate(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, observed: Observed,
  saved: SavedPreview): Promise<ReconcileResult | undefined> {
  const diverged = stepsDivergence(saved, await deps.stacks.preview(ref, { observation: observed.observation }), "previewed");
  if (!diverged) return undefined;
  mem.savedPreview = { id: saved.id, ran: false, diverged };
  const held = await observeAndPlan(deps, ref, mem);
  await reportLatest(deps, ref, mem, held);
  return { action: "paused", plan: held.plan, message: held.plan.paused?.message };
}

export const EV_INVALID_CLUSTER_ORDER = "InvalidClusterOrder";

/**
 * The order, typed. A malformed one (clients/kube/clusterOrder.ts) changes nothing: a Warning event names
 * its bad fields, once per distinct message, and the error goes to the loop, which backs the order off.
 */
async function readOrder(deps: ReconcileDeps, ref: OrderRef): Promise<ClusterOrder | undefined> {
  try {
    return await deps.kube.getClusterOrder(ref.namespace, ref.name);
  } catch (err) {
    if (err instanceof InvalidClusterOrderError && err.metadata) {
      const md = err.metadata;
      const name = `${md.name}.${crypto.createHash("sha256").update(`${md.uid}/${EV_INVALID_CLUSTER_ORDER}/${err.message}`).digest("hex").slice(0, 16)}`;
      await deps.kube.createEvent({ metadata: md }, { type: "Warning", reason: EV_INVALID_CLUSTER_ORDER, message: err.message, name },
        clockOf(deps)()).catch(() => undefined); // the error itself still reaches the loop's log
    }
    throw err;
  }
}

/**
 * Whether the order is none of this controller's business: it requests no bare-metal workers, its status
 * records none, and it carries no finalizer of ours. Such an order gets no finalizer, InfraEnv, stack or
 * status write.
 */
export function notOurs(order: ClusterOrder): boolean {
  return !(order.metadata.finalizers ?? []).includes(FINALIZER) &&
    !(order.spec.nodeRequests ?? []).some(isBareMetalRequest) &&
    !(order.status?.workers ?? []).some((w) => w.kind === "BareMetalInstance");
}

function memoryOf(deps: ReconcileDeps, ref: OrderRef): OrderMemory {
  const mem = deps.memory.get(orderKey(ref)) ?? { consecutiveFulfillmentErrors: 0 };
  deps.memory.set(orderKey(ref), mem);
  return mem;
}

/**
 * Our finalizer goes on before anything is created for the order (conditional on the version read).
 * Returns the order as it now stands.
 */
async function keepFinalizer(deps: ReconcileDeps, ref: OrderRef, order: ClusterOrder): Promise<ClusterOrder> {
  const finalizers = order.metadata.finalizers ?? [];
  if (finalizers.includes(FINALIZER)) return order;
  return deps.kube.patchClusterOrderMetadata(ref, { finalizers: [...finalizers, FINALIZER] }, order.metadata.resourceVersion);
}

/** The decision (decide.ts, pure) on this observation, with the order's memory updated as it says. */
async function decideAndRemember(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, observed: Observed): Promise<Decision> {
  const { snapshot, plan } = observed;
  // The applied record is consulted once per process, and only for a stack this backend holds.
  const first = !mem.appliedRead && mem.lastFingerprint === undefined;
  const decision = decide({
    order: snapshot.order, plan, bmisKnown: snapshot.bmis !== undefined, memory: mem, nowMs: snapshot.now.getTime(),
    settings: { refreshIntervalMs: deps.refreshIntervalMs ?? 3_600_000, programDigest: deps.stacks.programDigest(),
      ignitionPollMs: deps.config.ignitionPollMs },
    ...(first ? { stackExists: await deps.stacks.stackExists(ref) } : {}),
  });
  Object.assign(mem, decision.memory);
  return decision;
}

/** A skip that leaves the order settled (controller/settledOrders.ts) is remembered, so steady passes need not observe it. */
function recordIfSettled(deps: ReconcileDeps, token: SettleToken, mem: OrderMemory, observed: Observed): void {
  const { snapshot, plan } = observed;
  if (!deps.settled?.enabled) return;
  const reason = unsettledReason(plan, snapshot.bmis !== undefined, snapshot.goneBmiIds);
  if (reason || !snapshot.bmis) {
    deps.log?.("not settled", { order: token.key, reason }, "debug");
    return;
  }
  const every = deps.refreshIntervalMs ?? 3_600_000;
  const due = [every > 0 && mem.lastRefreshAt !== undefined ? mem.lastRefreshAt + every : NaN, Date.parse(plan.requeueAt ?? "")]
    .filter(Number.isFinite);
  const order = snapshot.order;
  deps.settled.record(token, {
    resourceVersion: order.metadata.resourceVersion ?? "", bmiDigest: bmiDigest(snapshot.bmis), pin: pinKey(observed.pin),
    ...(due.length ? { dueAt: Math.min(...due) } : {}), plan,
    uid: order.metadata.uid, hubDigest: observed.observation.hubDigest,
    ...(observed.observation.unwatchedDigest ? { unwatched: { keys: unwatchedKeys(order), digest: observed.observation.unwatchedDigest } } : {}),
    gauges: { tenant: order.metadata.annotations?.[TENANT_ANNOTATION] ?? "unknown", desired: plan.status.desiredWorkers,
      ready: plan.status.readyWorkers, failed: plan.status.workers.filter((w) => w.phase === "Failed").length },
  });
}

/** A pause or a skip: the observed state is reported, nothing else is done. */
async function reportWithoutUpdate(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, observed: Observed,
  decision: Decision): Promise<ReconcileResult> {
  await reportLatest(deps, ref, mem, observed);
  const requeueAt = decision.requeueAtMs !== undefined ? new Date(decision.requeueAtMs) : undefined;
  if (decision.action === "skip") return { action: "skipped", plan: observed.plan, requeueAt };
  return { action: "paused", plan: observed.plan, requeueAt, message: decision.message };
}

/**
 * What must be on the order before `up` starts: a rejected Create's worker Failed (decision.statusFirst)
 * and no applied record (decision.withdrawRecord), every write conditional on the version observed.
 * Returns the observation the program plans from, its order as these writes left it (so the program's
 * fence is conditional on that version), or undefined when the order changed since it was observed.
 */
async function fenceBeforeUpdate(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, observed: Observed,
  decision: Decision): Promise<Observation | undefined> {
  const withdraw = { [APPLIED_ANNOTATION]: null };
  if (decision.statusFirst) {
    const reported = await reportLatest(deps, ref, mem, observed, { annotations: () => (decision.withdrawRecord ? withdraw : {}) });
    return asWritten(reported.observed.observation, reported.order);
  }
  if (!decision.withdrawRecord) return observed.observation;
  try {
    const written = await deps.kube.patchClusterOrderMetadata(ref, { annotations: withdraw }, observed.snapshot.order.metadata.resourceVersion);
    return asWritten(observed.observation, written);
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err;
    // The order changed since it was observed: the record goes all the same (a process killed during the
    // update must leave none), and the program, given no observation, observes for itself.
    await deps.kube.patchClusterOrderMetadata(ref, { annotations: withdraw });
    return undefined;
  }
}

/** The observation with the order's metadata and status as last written (its spec as observed). */
function asWritten(observation: Observation, written: ClusterOrder): Observation {
  const planned = observation.snapshot.order;
  const snapshot: Snapshot = { ...observation.snapshot, order: { ...planned, metadata: written.metadata, status: written.status },
    recordedInfraEnvUid: written.metadata.annotations?.[INFRAENV_UID_ANNOTATION] };
  return { ...observation, snapshot };
}

/** `pulumi up` on the order's stack; a failure is reported on the order (UpdateFailed, a Warning event) and rethrown. */
async function runUpdate(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, observed: Observed,
  observation: Observation | undefined): Promise<UpResult> {
  const { snapshot, plan } = observed;
  failpoint("reconcile.beforeUp"); // fault suite: killed after planning, before `up`
  const progress = progressReports(deps, ref, mem, plan.fence.map((w) => w.name));
  let up: UpResult;
  try {
    // The counts this update applies (a pin's, if any): rollback restores them from this message.
    up = await deps.stacks.up(ref, { message: summaryLine(withPin(snapshot.order, observed.pin?.counts), plan), refresh: true,
      ...(observation ? { observation } : {}), onStart: () => progress.start() });
    // Every `up` refreshes: the periodic refresh counts from the last one (not an extra run after creation).
    mem.lastRefreshAt = snapshot.now.getTime();
    await progress.stop();
  } catch (err) {
    await progress.stop();
    // A failed update changed part of the world and says why: report both (UpdateFailed, a Warning event,
    // a rejected Create's worker Failed with backoff), so status does not lag behind and the next plan no
    // longer declares what was refused; then let the loop retry.
    mem.lastFingerprint = undefined;
    if (isNotLeaderError(err)) throw err; // another replica leads now: it reports, not we
    const failure = recordFailure(deps, ref, mem, err, { operation: "update", startedAt: snapshot.now.toISOString() });
    try {
      await reportLatest(deps, ref, mem, await observeAndPlan(deps, ref, mem), { extraEvents: failureEvents(failure) });
    } catch (reportErr) {
      // the original error is the one worth rethrowing
      deps.log?.("could not report the failed update", { order: orderKey(ref), error: String(reportErr) });
    }
    throw err;
  }
  mem.lastUpdate = { ok: true };
  mem.createRejections = undefined;
  failpoint("reconcile.afterUp"); // fault suite: killed between `up` and the status write
  return up;
}

/**
 * Observes again (the status written is the state after the update, not the intention before it) and
 * reports, recording the applied plan on the order in the report's metadata patch when the world did not
 * move during `up` (decide.ts settleAfterUpdate).
 */
async function reportAfterUpdate(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, decision: Decision,
  planned: Plan, up: UpResult): Promise<ReconcileResult> {
  const first = await observeAndPlan(deps, ref, mem);
  const declared = typeof up.outputs?.fingerprint === "string" ? up.outputs.fingerprint : undefined;
  const settle = (after: Plan) => settleAfterUpdate({ before: planned, after, declared,
    programDigest: deps.stacks.programDigest(), orderUid: first.snapshot.order.metadata.uid });
  // The plan that caused the update is not reported (the one observed after it is): its retry-now event goes with this report.
  const retried = planned.events.filter((e) => e.reason === EV_RETRY_NOW);
  const { observed } = await reportLatest(deps, ref, mem, first, { extraEvents: retried, annotations: (plan): AnnotationChanges => {
    const record = settle(plan).record;
    return record ? { [APPLIED_ANNOTATION]: record } : {};
  } });
  failpoint("reconcile.afterStatus"); // fault suite: killed after the report
  mem.lastFingerprint = settle(observed.plan).lastFingerprint;
  const after = observed.plan;
  const requeueAt = after.requeueAt ? new Date(after.requeueAt) : decision.requeueAtMs !== undefined ? new Date(decision.requeueAtMs) : undefined;
  return { action: "up", plan: after, up, requeueAt };
}

/** Our one-line summary of a change, stored as the update message (shown by `history`). */
export function summaryLine(order: ClusterOrder, plan: Plan): string {
  const requested = (order.spec.nodeRequests ?? []).filter((r) => r.bareMetal?.instanceType)
    .map((r) => `${r.nodeSet}=${r.numberOfNodes}`).sort();
  const sets = new Map<string, number>();
  for (const w of plan.workers) sets.set(w.nodeSet, (sets.get(w.nodeSet) ?? 0) + 1);
  const declared = [...sets.entries()].sort().map(([s, n]) => `${s}=${n}`);
  const news = plan.fence.length ? `, ${plan.fence.length} new` : "";
  // "desired ...;" first: rollback reads the requested set back from this message.
  return `desired ${requested.join(",")}; workers ${declared.join(",") || "none"}${news}; ` +
    `current ${plan.status.currentWorkers}, ready ${plan.status.readyWorkers}`;
}
