// One reconcile of one ClusterOrder: observe, plan, decide whether `pulumi up` is needed (plan
// fingerprint), run it on the order's stack, then observe again and report (status, events, metrics).
// Deletion runs the finalizer path: destroy the stack (every BMI deleted and confirmed gone), delete
// leftover BMIs and Agents of the order, drop the finalizer, remove the stack.
import * as crypto from "node:crypto";
import type { FulfillmentClient } from "../clients/fulfillment";
import { Filter, NotFoundError as FulfillmentNotFound } from "../clients/fulfillment";
import { ConflictError, type Kube } from "../clients/kube";
import { fingerprint, plan as makePlan } from "../planner";
import { APPLIED_ANNOTATION, FINALIZER, INFRAENV_UID_ANNOTATION, ORDER_LABEL, UNBINDING_STATE } from "../planner/names";
import { withPin } from "../planner/pin";
import type { ClusterOrder, Plan, PlannerConfig, Snapshot } from "../planner/types";
import { observe, OrderNotFoundError, type OrderRef } from "./observe";
import type { ObserveCache } from "./observeCache";
import { failpoint } from "./failpoints";
import { recordEvents, writeStatus } from "./status";

export interface UpResult {
  changes: { create: number; update: number; delete: number; replace: number; same: number };
  durationMs: number;
  outputs?: Record<string, unknown>;
}

/** The stack operations a reconcile needs (automation/stacks.ts implements them on the Automation API). */
export interface StackRunner {
  /** `refresh`: read the live resources first (`up --refresh`), so drift is part of the diff. */
  up(ref: OrderRef, opts: { message: string; refresh?: boolean }): Promise<UpResult>;
  destroy(ref: OrderRef): Promise<void>;
  removeStack(ref: OrderRef): Promise<void>;
  /** Extra program input (a rollback pin), undefined when none. */
  pinnedNodeSets(ref: OrderRef): Promise<Record<string, number> | undefined>;
  /** Digest of the program, toolchain and program environment an `up` would run (see programDigest.ts). */
  programDigest(): string;
}

export interface ReconcileDeps {
  kube: Kube;
  fulfillment: FulfillmentClient;
  stacks: StackRunner;
  config: PlannerConfig;
  ignitionCaFile?: string;
  /** The long-running loop's observation cache (shared catalog, ignitions); absent for one-off reconciles. */
  observeCache?: ObserveCache;
  now?: () => Date;
  /** Memory kept between reconciles of the same order (fingerprints, error counts). */
  memory: Map<string, OrderMemory>;
  bmiDeleteTimeoutMs?: number;
  /**
   * How often a stack is refreshed on its own (default 1 h; 0 = never). Every `up` already refreshes, so
   * drift that changes what we observe is corrected when it is seen; this catches the rest (e.g. a BMI's
   * spec edited outside Pulumi).
   */
  refreshIntervalMs?: number;
  /** While an `up` runs longer than this, the status is observed and written again at this interval (0 = never). */
  progressReportMs?: number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export interface OrderMemory {
  lastFingerprint?: string;
  /** The APPLIED_ANNOTATION was read once in this process (later, memory is the authority). */
  appliedRead?: boolean;
  consecutiveFulfillmentErrors: number;
  lastRefreshAt?: number;
}

export interface ReconcileResult {
  action: "up" | "skipped" | "paused" | "deleted" | "gone" | "blocked" | "requeue";
  plan?: Plan;
  up?: UpResult;
  requeueAt?: Date;
  message?: string;
}

function key(ref: OrderRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** A stable offset in [0, interval) for an order: where in the interval its periodic refresh falls. */
export function refreshOffset(orderKey: string, intervalMs: number): number {
  if (intervalMs <= 0) return 0;
  return crypto.createHash("sha256").update(orderKey).digest().readUInt32BE(0) % intervalMs;
}

async function observeAndPlan(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, opts: { countErrors?: boolean } = {}):
  Promise<{ snapshot: Snapshot; plan: Plan; calls: number }> {
  const now = deps.now?.() ?? new Date();
  const obs = await observe({ kube: deps.kube, fulfillment: deps.fulfillment, config: deps.config, ignitionCaFile: deps.ignitionCaFile,
    cache: deps.observeCache }, ref, now);
  // Only a reconcile's own observations count toward FulfillmentServiceUnavailable, not the extra ones of
  // progress reports and conflict retries.
  if (opts.countErrors !== false) mem.consecutiveFulfillmentErrors = obs.fulfillmentError ? mem.consecutiveFulfillmentErrors + 1 : 0;
  const pin = await deps.stacks.pinnedNodeSets(ref);
  const snapshot: Snapshot = { ...obs.snapshot, order: withPin(obs.snapshot.order, pin), fulfillmentErrors: mem.consecutiveFulfillmentErrors };
  return { snapshot, plan: makePlan(snapshot), calls: obs.fulfillmentCalls };
}

/**
 * Reports, and when the order changed since it was observed (the status write conflicts), observes
 * again and reports that instead. Returns the plan that was reported.
 */
async function reportLatest(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, first: { snapshot: Snapshot; plan: Plan }): Promise<Plan> {
  let current = first;
  for (let attempt = 1; ; attempt++) {
    try {
      await report(deps, current.snapshot, current.plan);
      return current.plan;
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= 5) throw err;
    }
    current = await observeAndPlan(deps, ref, mem, { countErrors: false });
  }
}

async function report(deps: ReconcileDeps, snapshot: Snapshot, plan: Plan): Promise<void> {
  const order = snapshot.order;
  await writeStatus(deps.kube, order, plan);
  failpoint("report.afterStatusWrite"); // fault suite: killed between the status and the events
  await recordEvents(deps.kube, order, plan);
  // Remember which InfraEnv the current ignition came from, so a recreated one is detected (stale ignition).
  if (snapshot.infraEnv && order.metadata.annotations?.[INFRAENV_UID_ANNOTATION] !== snapshot.infraEnv.uid) {
    await deps.kube.patchClusterOrderMetadata({ namespace: order.metadata.namespace, name: order.metadata.name },
      { annotations: { [INFRAENV_UID_ANNOTATION]: snapshot.infraEnv.uid } });
  }
}

export async function reconcileOrder(deps: ReconcileDeps, ref: OrderRef): Promise<ReconcileResult> {
  const mem = deps.memory.get(key(ref)) ?? { consecutiveFulfillmentErrors: 0 };
  deps.memory.set(key(ref), mem);
  const order = await deps.kube.getClusterOrder(ref.namespace, ref.name);
  if (!order) return { action: "gone" };
  if (order.metadata.deletionTimestamp) return finalize(deps, ref, order);

  if (!(order.metadata.finalizers ?? []).includes(FINALIZER)) {
    await deps.kube.patchClusterOrderMetadata(ref, { finalizers: [...(order.metadata.finalizers ?? []), FINALIZER] },
      order.metadata.resourceVersion);
  }

  let observed;
  try {
    observed = await observeAndPlan(deps, ref, mem);
  } catch (err) {
    if (err instanceof OrderNotFoundError) return { action: "gone" };
    throw err;
  }
  const { snapshot, plan } = observed;
  const requeueAt = plan.requeueAt ? new Date(plan.requeueAt) : undefined;
  if (snapshot.bmis === undefined || plan.paused) {
    await reportLatest(deps, ref, mem, observed);
    return { action: "paused", plan, requeueAt, message: plan.paused?.message };
  }

  const unidentified = plan.workers.filter((w) => w.retainBinding && !w.binding).map((w) => w.slot);
  if (unidentified.length > 0) {
    await reportLatest(deps, ref, mem, observed);
    return { action: "paused", plan, requeueAt: new Date(Date.now() + deps.config.ignitionPollMs),
      message: `Agents of ${unidentified.join(", ")} cannot be identified right now; no update until they can` };
  }

  const nowMs = (deps.now?.() ?? new Date()).getTime();
  const refreshEvery = deps.refreshIntervalMs ?? 3_600_000;
  // Spread the stacks' refreshes over the interval (a stable offset per order) instead of refreshing every
  // stack at once after a restart: hundreds of orders would mean hundreds of pulumi runs in one tick.
  mem.lastRefreshAt ??= nowMs - refreshOffset(key(ref), refreshEvery);
  const refreshDue = refreshEvery > 0 && nowMs - mem.lastRefreshAt >= refreshEvery;
  // A due refresh is an `up --refresh` even when nothing changed: one pulumi run that reads every resource
  // and corrects what drifted, instead of a refresh followed by an update.
  if (refreshDue) mem.lastRefreshAt = nowMs;
  const fp = fingerprint(plan);
  const digest = deps.stacks.programDigest();
  const recorded = order.metadata.annotations?.[APPLIED_ANNOTATION];
  if (!mem.appliedRead) {
    // First reconcile of this order in this process: an update recorded by an earlier process with the
    // same program counts as applied, so a restart does not mean one `up` per order.
    mem.appliedRead = true;
    if (mem.lastFingerprint === undefined && recorded === appliedRecord(digest, order.metadata.uid, fp)) mem.lastFingerprint = fp;
  }
  if (!refreshDue && fp === mem.lastFingerprint && plan.fence.length === 0) {
    await reportLatest(deps, ref, mem, observed);
    return { action: "skipped", plan, requeueAt };
  }

  // Withdraw the record before the update: if this process dies during it, the next one must not take a
  // half-applied stack for an applied plan.
  if (recorded !== undefined) await deps.kube.patchClusterOrderMetadata(ref, { annotations: { [APPLIED_ANNOTATION]: null } });
  failpoint("reconcile.beforeUp"); // fault suite: killed after planning, before `up`
  let up: UpResult;
  const progress = progressReports(deps, ref, mem);
  try {
    up = await deps.stacks.up(ref, { message: summaryLine(snapshot.order, plan), refresh: true });
    // Every `up` refreshes: the periodic refresh counts from the last one (not an extra run after creation).
    mem.lastRefreshAt = nowMs;
    await progress.stop();
  } catch (err) {
    await progress.stop();
    // A failed update (e.g. a BMI delete still waiting) changed part of the world: report what is there
    // now, so status and conditions do not lag behind, then let the loop retry with its backoff.
    mem.lastFingerprint = undefined;
    try {
      await reportLatest(deps, ref, mem, await observeAndPlan(deps, ref, mem));
    } catch {
      // the original error is the one worth reporting
    }
    throw err;
  }
  failpoint("reconcile.afterUp"); // fault suite: killed between `up` and the status write
  // Observe again: the status written is the state after the update, not the intention before it.
  const afterPlan = await reportLatest(deps, ref, mem, await observeAndPlan(deps, ref, mem));
  failpoint("reconcile.afterStatus"); // fault suite: killed after the report
  // Remember a fingerprint only when the world did not move during `up`: a plan that changed since (an
  // Agent registered meanwhile) must not be taken as applied. The program declared from its own, slightly
  // later observation and exports that plan's fingerprint: a match with it counts too.
  const afterFp = fingerprint(afterPlan);
  const declared = typeof up.outputs?.fingerprint === "string" ? up.outputs.fingerprint : undefined;
  mem.lastFingerprint = afterPlan.fence.length === 0 && (afterFp === fp || afterFp === declared) ? afterFp : undefined;
  if (mem.lastFingerprint !== undefined) {
    try {
      await deps.kube.patchClusterOrderMetadata(ref, { annotations: { [APPLIED_ANNOTATION]: appliedRecord(digest, order.metadata.uid, afterFp) } });
    } catch (err) {
      // Only a restart's shortcut is lost: the next process runs one `up` for this order.
      deps.log?.("could not record the applied plan on the ClusterOrder", { error: String(err) });
    }
  }
  return { action: "up", plan: afterPlan, up, requeueAt: afterPlan.requeueAt ? new Date(afterPlan.requeueAt) : requeueAt };
}

/**
 * The APPLIED_ANNOTATION value: the program digest, then a hash of the order's uid and the plan
 * fingerprint. The uid makes a restored or copied ClusterOrder (a new object) never match.
 */
export function appliedRecord(programDigest: string, orderUid: string, planFingerprint: string): string {
  return `${programDigest}.${crypto.createHash("sha256").update(`${orderUid}\0${planFingerprint}`).digest("hex").slice(0, 32)}`;
}

/**
 * An update can wait minutes on a BMI delete or on the service; meanwhile the status would still say what
 * the world was before it began. This reports the observed state every `progressReportMs` until stop(),
 * which also waits for a report in flight so it never lands after the final one.
 */
function progressReports(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory): { stop(): Promise<void> } {
  const every = deps.progressReportMs ?? 0;
  if (every <= 0) return { stop: async () => undefined };
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    inFlight = (async () => {
      try {
        const now = await observeAndPlan(deps, ref, mem, { countErrors: false });
        // While new slots still await the program's fence, a status write (it changes the resourceVersion)
        // would make that conditional fence fail, and the new workers wait for the next update.
        if (!stopped && now.plan.fence.length === 0) await report(deps, now.snapshot, now.plan);
      } catch (err) {
        // A conflict means the order changed since this observation (e.g. the program's fence): the next
        // report observes again; writing this one would undo that change.
        if (err instanceof ConflictError) {
          if (!stopped) timer = setTimeout(tick, every);
          return;
        }
        deps.log?.("progress report failed; the report after the update follows", { error: String(err) });
      }
      if (!stopped) timer = setTimeout(tick, every);
    })();
  };
  timer = setTimeout(tick, every);
  return {
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inFlight;
    },
  };
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

async function waitGone(f: FulfillmentClient, id: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      await f.bareMetalInstances.get(id);
    } catch (err) {
      if (err instanceof FulfillmentNotFound) return true;
      throw err;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

async function finalize(deps: ReconcileDeps, ref: OrderRef, order: ClusterOrder): Promise<ReconcileResult> {
  if (!(order.metadata.finalizers ?? []).includes(FINALIZER)) return { action: "gone" };
  // 1. Destroy the stack: bindings (Agents may go: the cluster is being deleted), then every BMI, each
  //    delete waiting until the BMI is really gone.
  failpoint("finalize.beforeDestroy"); // fault suite: killed before the stack is destroyed
  await deps.stacks.destroy(ref);
  failpoint("finalize.afterDestroy"); // fault suite: killed after destroy, before the leftover sweep
  // 2. BMIs of this order that the stack never recorded (a create whose response was lost, a kill).
  const leftovers = await deps.fulfillment.bareMetalInstances.listAll(
    Filter.and(Filter.tenantEquals("system"), Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid })));
  for (const bmi of leftovers) {
    if (!bmi.metadata?.deletion_timestamp) {
      try {
        await deps.fulfillment.bareMetalInstances.delete(bmi.id);
      } catch (err) {
        if (!(err instanceof FulfillmentNotFound)) throw err;
      }
    }
  }
  for (const bmi of leftovers) {
    if (!(await waitGone(deps.fulfillment, bmi.id, deps.bmiDeleteTimeoutMs ?? 600_000))) {
      return { action: "requeue", message: `BareMetalInstance ${bmi.metadata?.name} is still being deleted`,
        requeueAt: new Date(Date.now() + 10_000) };
    }
  }
  failpoint("finalize.afterBmiCleanup"); // fault suite: killed after the leftover BMIs are gone
  // 3. Leftover Agents of our workers (the cascade may not remove them; design §5.3 conflict).
  for (const agent of await deps.kube.listAgents(ref.namespace, `${ORDER_LABEL}=${order.metadata.uid}`)) {
    const ours = agent.metadata?.labels?.[ORDER_LABEL] === order.metadata.uid;
    if (!ours || !agent.metadata?.name || !agent.metadata.uid || !agent.metadata.resourceVersion) continue;
    void UNBINDING_STATE;
    try {
      await deps.kube.deleteAgent(ref.namespace, agent.metadata.name, { uid: agent.metadata.uid, resourceVersion: agent.metadata.resourceVersion });
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      return { action: "requeue", requeueAt: new Date(Date.now() + 1_000), message: "an Agent changed during cleanup" };
    }
  }
  failpoint("finalize.afterAgents"); // fault suite: killed after the Agent sweep, before the finalizer is dropped
  // 4. Release the order, then forget the stack.
  await deps.kube.patchClusterOrderMetadata(ref,
    { finalizers: (order.metadata.finalizers ?? []).filter((f) => f !== FINALIZER) }, order.metadata.resourceVersion);
  failpoint("finalize.afterFinalizerRemoval"); // fault suite: killed after the finalizer is dropped, before the stack is removed
  await deps.stacks.removeStack(ref);
  deps.memory.delete(key(ref));
  return { action: "deleted" };
}
