// One reconcile of one ClusterOrder: observe, plan, decide whether `pulumi up` is needed (plan
// fingerprint), run it on the order's stack, then observe again and report (status, events, metrics).
// A failed update is reported on the order (UpdateFailed condition, Warning event) and remembered for the
// next plans. Deletion runs the finalizer path without waiting: every worker goes Deleting, the stack is
// destroyed (deletes issued), leftover BMIs are deleted, and the finalizer is dropped only once a Get
// confirms every BMI of the order gone; until then the order is requeued.
import * as crypto from "node:crypto";
import type { BareMetalInstanceOut, FulfillmentClient } from "../clients/fulfillment";
import { Filter, NotFoundError as FulfillmentNotFound, SYSTEM_TENANT } from "../clients/fulfillment";
import { ConflictError, type Kube } from "../clients/kube";
import { fingerprint, plan as makePlan } from "../planner";
import { EV_WORKER_DELETED, orderEvent } from "../planner/events";
import { APPLIED_ANNOTATION, FINALIZER, INFRAENV_UID_ANNOTATION, ORDER_LABEL, stackName } from "../planner/names";
import { withPin } from "../planner/pin";
import { isBareMetalRequest } from "../planner/status";
import type { ClusterOrder, CreateRejection, Plan, PlannedEvent, PlannerConfig, Snapshot, WorkerStatus } from "../planner/types";
import { observe, OrderNotFoundError, type OrderRef } from "../io/observe";
import type { ObserveCache } from "../io/observeCache";
import { failpoint } from "../lib/failpoints";
import { recordEvents, reportedEvents, reportedWorkers, writeStatus } from "../io/status";
import { isNotLeaderError } from "../lib/notLeader";
import { describeUpdateFailure, REASON_DELETE_REFUSED, type UpdateFailure } from "./updateFailure";

export interface UpResult {
  changes: { create: number; update: number; delete: number; replace: number; same: number };
  durationMs: number;
  outputs?: Record<string, unknown>;
}

/** The stack operations a reconcile needs (stack/stacks.ts implements them on the Automation API). */
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

/** The design's two duration histograms (controller/metrics.ts ReconcilerMetrics has both). */
export interface WorkerDurations {
  observeProvisioning(tenant: string, seconds: number): void;
  observeAgentCorrelation(tenant: string, seconds: number): void;
}

/** The annotation naming an order's tenant (the metrics' only label besides worker_type). */
export const TENANT_ANNOTATION = "osac.openshift.io/tenant";

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
  /**
   * How often a stack is refreshed on its own (default 1 h; 0 = never). Every `up` already refreshes, so
   * drift that changes what we observe is corrected when it is seen; this catches the rest (e.g. a BMI's
   * spec edited outside Pulumi).
   */
  refreshIntervalMs?: number;
  /** While an `up` runs longer than this, the status is observed and written again at this interval (0 = never). */
  progressReportMs?: number;
  /** Receives the provisioning and Agent-correlation durations of workers as their status records them. */
  durations?: WorkerDurations;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

export interface OrderMemory {
  lastFingerprint?: string;
  /** The APPLIED_ANNOTATION was read once in this process (later, memory is the authority). */
  appliedRead?: boolean;
  consecutiveFulfillmentErrors: number;
  lastRefreshAt?: number;
  /** Outcome of this order's last update in this process (undefined: none yet); every snapshot carries it. */
  lastUpdate?: Snapshot["lastUpdate"];
  /** Definitive Create rejections of the last failed update, until an update succeeds. */
  createRejections?: CreateRejection[];
  /** When this process recorded a slot incarnation's WaitingForAgent (the Agent correlation clock). */
  waitingSince?: Map<string, number>;
  /** Finalization: the stack was destroyed by this process (later passes only confirm and sweep). */
  destroyed?: boolean;
  /** Finalization: every BMI id of the order seen so far; each must be confirmed gone by a Get. */
  finalizeIds?: Set<string>;
  /** Finalization: name → id of every BMI of the order seen so far (entries recorded without an id are matched by name). */
  finalizeNames?: Map<string, string>;
  /** Finalization: per BMI name recorded without an id, how many passes in a row a lookup by name found nothing. */
  nameAbsences?: Map<string, number>;
}

export interface ReconcileResult {
  /** "ignored": the order asks for no bare-metal workers and none are ours; nothing was written. */
  action: "up" | "skipped" | "paused" | "deleted" | "gone" | "blocked" | "requeue" | "ignored";
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
  // A reconcile applies changes, so it may create the system catalog item the updates need.
  const obs = await observe({ kube: deps.kube, fulfillment: deps.fulfillment, config: deps.config, ignitionCaFile: deps.ignitionCaFile,
    cache: deps.observeCache, createCatalogItem: true }, ref, now);
  // Only a reconcile's own observations count toward FulfillmentServiceUnavailable, not the extra ones of
  // progress reports and conflict retries.
  if (opts.countErrors !== false) mem.consecutiveFulfillmentErrors = obs.fulfillmentError ? mem.consecutiveFulfillmentErrors + 1 : 0;
  const pin = await deps.stacks.pinnedNodeSets(ref);
  const snapshot: Snapshot = {
    ...obs.snapshot, order: withPin(obs.snapshot.order, pin), fulfillmentErrors: mem.consecutiveFulfillmentErrors,
    ...(mem.lastUpdate ? { lastUpdate: mem.lastUpdate } : {}),
    ...(mem.createRejections?.length ? { createRejections: mem.createRejections } : {}),
  };
  return { snapshot, plan: makePlan(snapshot), calls: obs.fulfillmentCalls };
}

/**
 * Reports, and when the order changed since it was observed (the status write conflicts), observes
 * again and reports that instead. Returns the plan that was reported.
 */
async function reportLatest(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, first: { snapshot: Snapshot; plan: Plan },
  extraEvents: readonly PlannedEvent[] = []): Promise<Plan> {
  let current = first;
  for (let attempt = 1; ; attempt++) {
    try {
      await report(deps, mem, current.snapshot, current.plan, extraEvents);
      return current.plan;
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= 5) throw err;
    }
    current = await observeAndPlan(deps, ref, mem, { countErrors: false });
  }
}

async function report(deps: ReconcileDeps, mem: OrderMemory, snapshot: Snapshot, plan: Plan,
  extraEvents: readonly PlannedEvent[] = []): Promise<void> {
  const order = snapshot.order;
  const written = reportedWorkers(order, plan);
  await writeStatus(deps.kube, order, plan, (fields) =>
    deps.log?.("status fields owned by another field manager were left to it", { order: `${order.metadata.namespace}/${order.metadata.name}`, fields }));
  failpoint("report.afterStatusWrite"); // fault suite: killed between the status and the events
  await recordEvents(deps.kube, order, plan, [...reportedEvents(order, plan, written), ...extraEvents]);
  observeDurations(deps, mem, order, written, snapshot.now.getTime());
  // Remember which InfraEnv the current ignition came from, so a recreated one is detected (stale ignition).
  if (snapshot.infraEnv && order.metadata.annotations?.[INFRAENV_UID_ANNOTATION] !== snapshot.infraEnv.uid) {
    await deps.kube.patchClusterOrderMetadata({ namespace: order.metadata.namespace, name: order.metadata.name },
      { annotations: { [INFRAENV_UID_ANNOTATION]: snapshot.infraEnv.uid } });
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

export async function reconcileOrder(deps: ReconcileDeps, ref: OrderRef): Promise<ReconcileResult> {
  const order = await deps.kube.getClusterOrder(ref.namespace, ref.name);
  if (!order) return { action: "gone" };
  if (notOurs(order)) {
    deps.memory.delete(key(ref));
    return { action: "ignored" };
  }
  const mem = deps.memory.get(key(ref)) ?? { consecutiveFulfillmentErrors: 0 };
  deps.memory.set(key(ref), mem);
  if (order.metadata.deletionTimestamp) return finalize(deps, ref, order, mem);

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

  // A worker failed for a rejected Create must be Failed in status before the program plans again: the
  // program's own plan knows nothing of the rejection and would send the same Create.
  if (mem.createRejections?.length && rejectionsUnpersisted(snapshot.order, plan, mem.createRejections)) {
    await reportLatest(deps, ref, mem, observed);
  }
  // Withdraw the record before the update: if this process dies during it, the next one must not take a
  // half-applied stack for an applied plan.
  if (recorded !== undefined) await deps.kube.patchClusterOrderMetadata(ref, { annotations: { [APPLIED_ANNOTATION]: null } });
  failpoint("reconcile.beforeUp"); // fault suite: killed after planning, before `up`
  let up: UpResult;
  const progress = progressReports(deps, ref, mem);
  const startedAt = new Date(nowMs).toISOString();
  try {
    up = await deps.stacks.up(ref, { message: summaryLine(snapshot.order, plan), refresh: true });
    // Every `up` refreshes: the periodic refresh counts from the last one (not an extra run after creation).
    mem.lastRefreshAt = nowMs;
    await progress.stop();
  } catch (err) {
    await progress.stop();
    // A failed update changed part of the world and says why: report both (UpdateFailed, a Warning event,
    // a rejected Create's worker Failed with backoff), so status does not lag behind and the next plan no
    // longer declares what was refused; then let the loop retry.
    mem.lastFingerprint = undefined;
    if (isNotLeaderError(err)) throw err; // another replica leads now: it reports, not we
    const failure = describeUpdateFailure(err, `update of stack ${stackName(ref.namespace, ref.name)} started ${startedAt}`);
    rememberFailure(mem, failure);
    deps.log?.("update failed", { order: key(ref), reason: failure.reason, message: failure.message });
    try {
      await reportLatest(deps, ref, mem, await observeAndPlan(deps, ref, mem), failureEvents(failure));
    } catch (reportErr) {
      // the original error is the one worth rethrowing
      deps.log?.("could not report the failed update", { order: key(ref), error: String(reportErr) });
    }
    throw err;
  }
  mem.lastUpdate = { ok: true };
  mem.createRejections = undefined;
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

/** Keeps a failed update's outcome for every following snapshot (UpdateFailed) and its rejected Creates for the planner. */
function rememberFailure(mem: OrderMemory, failure: UpdateFailure): void {
  mem.lastUpdate = { ok: false, reason: failure.reason, message: failure.message };
  if (failure.createRejections.length > 0) {
    const byName = new Map((mem.createRejections ?? []).map((r) => [r.bmiName, r]));
    for (const r of failure.createRejections) byName.set(r.bmiName, r);
    mem.createRejections = [...byName.values()];
  }
}

/** The Warning events of a failed update: one per distinct cause, and one per refused delete naming the slot. */
export function failureEvents(failure: UpdateFailure): PlannedEvent[] {
  const digest = crypto.createHash("sha256").update(failure.detail).digest("hex").slice(0, 16);
  const events: PlannedEvent[] = [
    { type: "Warning", reason: "UpdateFailed", message: failure.message, key: `UpdateFailed/${failure.reason}/${digest}` },
  ];
  for (const r of failure.deleteRefusals) {
    events.push({ type: "Warning", reason: REASON_DELETE_REFUSED, key: `${REASON_DELETE_REFUSED}/${r.slot}/${r.bmiName}`,
      message: `worker ${r.slot}: the BMI provider refused to delete BareMetalInstance ${r.bmiName}: ${r.reason}` });
  }
  return events;
}

/** Whether a rejected Create's worker is Failed in this plan but not yet in the persisted status. */
function rejectionsUnpersisted(order: ClusterOrder, plan: Plan, rejections: readonly CreateRejection[]): boolean {
  const names = new Set(rejections.map((r) => r.bmiName));
  const persisted = new Map((order.status?.workers ?? []).map((w) => [w.name, w]));
  return plan.status.workers.some((w) => w.phase === "Failed" && names.has(w.bareMetalInstance?.name ?? "") &&
    persisted.get(w.name)?.phase !== "Failed");
}

const msOf = (iso: string | undefined): number | undefined => {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(t) ? t : undefined;
};

/**
 * The design's durations, from the transitions a status write just recorded: provisioning from the
 * attempt's start to readySince; Agent correlation from when this process recorded WaitingForAgent (BMI
 * running, MAC known) to the match. A clock this process did not see start (a restart, or a match in the
 * same pass the BMI came up) is not observed rather than guessed.
 */
export function observeDurations(deps: ReconcileDeps, mem: OrderMemory, order: ClusterOrder, written: readonly WorkerStatus[], nowMs: number): void {
  const before = new Map((order.status?.workers ?? []).map((w) => [w.name, w]));
  const tenant = order.metadata.annotations?.[TENANT_ANNOTATION] ?? "unknown";
  const waiting = (mem.waitingSince ??= new Map());
  const live = new Set<string>();
  for (const w of written) {
    const prev = before.get(w.name);
    const clock = `${w.name}/${w.bareMetalInstance?.name ?? ""}`;
    if (w.phase === "WaitingForAgent") {
      live.add(clock);
      if (prev?.phase !== "WaitingForAgent" && !waiting.has(clock)) waiting.set(clock, nowMs);
    }
    if (!prev || prev.phase === w.phase) continue;
    const wasUnbound = prev.phase === "Provisioning" || prev.phase === "WaitingForAgent";
    if (wasUnbound && (w.phase === "Binding" || w.phase === "Ready")) {
      const since = waiting.get(clock);
      if (since !== undefined) deps.durations?.observeAgentCorrelation(tenant, Math.max(0, nowMs - since) / 1000);
    }
    if (w.phase === "Ready") {
      const start = msOf(w.attemptStartedAt) ?? msOf(w.creationTimestamp);
      const end = msOf(w.readySince) ?? nowMs;
      if (start !== undefined && end >= start) deps.durations?.observeProvisioning(tenant, (end - start) / 1000);
    }
  }
  for (const k of [...waiting.keys()]) if (!live.has(k)) waiting.delete(k);
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
        if (!stopped && now.plan.fence.length === 0) await report(deps, mem, now.snapshot, now.plan);
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

/** Polling interval of a deletion that waits for the service: the planner's poll, within [1 s, 30 s]. */
function deletionPollMs(config: PlannerConfig): number {
  return Math.min(30_000, Math.max(1_000, config.ignitionPollMs));
}

/** Every BMI id the order is known to have: its status entries and what the label List showed (now and before). */
function knownBmiIds(order: ClusterOrder, listed: readonly { id: string }[], mem: OrderMemory): Set<string> {
  const ids = (mem.finalizeIds ??= new Set());
  for (const w of order.status?.workers ?? []) if (w.bareMetalInstance?.id) ids.add(w.bareMetalInstance.id);
  for (const b of listed) ids.add(b.id);
  return ids;
}

/** Get per id: NOT_FOUND is the only proof that a BMI is gone (a List can leave out a live one). */
async function stillPresent(f: FulfillmentClient, ids: Iterable<string>): Promise<Set<string>> {
  const present = new Set<string>();
  await Promise.all([...ids].map(async (id) => {
    try {
      await f.bareMetalInstances.get(id);
      present.add(id);
    } catch (err) {
      if (!(err instanceof FulfillmentNotFound)) throw err;
    }
  }));
  return present;
}

/** What finalization knows of the order's BMIs when it reports. */
interface DeletionSeen {
  /** Ids a Get still found. */
  present: ReadonlySet<string>;
  /** Whether `present` and `goneNames` come from this pass's confirmation (false: nothing is gone yet). */
  confirmed: boolean;
  /** Name → id of the BMIs listed or found by name during this finalization. */
  listedByName: ReadonlyMap<string, string>;
  /** Names of BMIs known only by name that NAME_ABSENT_PASSES lookups in a row did not find. */
  goneNames: ReadonlySet<string>;
}

const NOTHING_CONFIRMED: DeletionSeen = { present: new Set(), confirmed: false, listedByName: new Map(), goneNames: new Set() };

function namesOf(bmis: readonly BareMetalInstanceOut[]): Map<string, string> {
  return new Map(bmis.flatMap((b) => (b.metadata?.name ? [[b.metadata.name, b.id] as const] : [])));
}

/** Passes in a row a lookup by name must find nothing before a BMI known only by name counts as gone. */
export const NAME_ABSENT_PASSES = 2;

/**
 * The BMIs of entries known only by name (a Create whose response was lost) whose id no List of this
 * finalization showed. A List can leave out a live BMI (I3) and there is no id to Get, so each is looked
 * up by its exact name and the order label: found, it is returned (to be deleted and confirmed by id);
 * absent from NAME_ABSENT_PASSES lookups in a row, one per pass, its name is in `gone`. One absence is
 * not enough: the lookup is a List too, and the fault that hid the BMI from this pass's List can hide it
 * from this lookup; a later pass, a requeue away, asks again.
 */
async function lookUpNamedOnly(f: FulfillmentClient, order: ClusterOrder, knownByName: ReadonlyMap<string, string>, mem: OrderMemory):
  Promise<{ found: BareMetalInstanceOut[]; gone: Set<string> }> {
  const absences = (mem.nameAbsences ??= new Map());
  const found: BareMetalInstanceOut[] = [];
  const gone = new Set<string>();
  for (const w of order.status?.workers ?? []) {
    const name = w.bareMetalInstance?.name;
    if (w.kind !== "BareMetalInstance" || w.bareMetalInstance?.id || !name || knownByName.has(name)) continue;
    const page = await f.bareMetalInstances.list({ limit: 1, filter: Filter.and(Filter.tenantEquals(SYSTEM_TENANT),
      Filter.nameEquals(name), Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid })) });
    if (page.items[0]) {
      absences.delete(name);
      found.push(page.items[0]);
      continue;
    }
    // A total without items (a short page) proves nothing: the count starts again.
    const n = page.total > 0 ? 0 : (absences.get(name) ?? 0) + 1;
    absences.set(name, n);
    if (n >= NAME_ABSENT_PASSES) gone.add(name);
  }
  return { found, gone };
}

/**
 * The deletion plan's status, with every entry whose BMI is not confirmed gone kept as Deleting (the
 * report must never drop an entry because a List left its BMI out), and WorkerDeleted only for entries
 * whose BMI a Get confirmed gone. An entry known only by name is gone once its name is in `goneNames`.
 */
function deletionReport(order: ClusterOrder, plan: Plan, seen: DeletionSeen, now: Date): { plan: Plan; events: PlannedEvent[] } {
  const { present, confirmed, listedByName, goneNames } = seen;
  const kept = new Map(plan.status.workers.map((w) => [w.name, w]));
  const workers: WorkerStatus[] = [];
  const events: PlannedEvent[] = [];
  for (const prev of order.status?.workers ?? []) {
    if (prev.kind !== "BareMetalInstance") continue;
    // An attempted Create whose id was never recorded is known by name, once the service showed it.
    const id = prev.bareMetalInstance?.id ?? listedByName.get(prev.bareMetalInstance?.name ?? "");
    const name = prev.bareMetalInstance?.name;
    // Without an id or a name no Create was ever sent for the entry: nothing can exist.
    const gone = confirmed && (id ? !present.has(id) : !name || goneNames.has(name));
    if (!gone) {
      const entry = kept.get(prev.name) ?? { ...prev };
      if (entry.phase !== "Deleting") {
        entry.phase = "Deleting";
        entry.attemptStartedAt = now.toISOString();
      }
      workers.push(entry);
      continue;
    }
    if (id && prev.bareMetalInstance?.name) {
      events.push(orderEvent(EV_WORKER_DELETED, [prev.name, prev.bareMetalInstance.name],
        `worker ${prev.name}: BareMetalInstance ${prev.bareMetalInstance.name} deleted with the cluster`));
    }
  }
  return {
    plan: { ...plan, events: plan.events.filter((e) => e.reason !== EV_WORKER_DELETED), status: { ...plan.status, workers, currentWorkers: 0, readyWorkers: 0 } },
    events,
  };
}

/**
 * The finalizer path. It never waits for the service: it reports every worker Deleting, destroys the
 * stack once (deletes issued), deletes leftover BMIs, and requeues while any BMI of the order is still
 * there. Only when a Get has confirmed every known BMI gone (one known only by name: NAME_ABSENT_PASSES
 * lookups by name in a row found nothing) are the leftover Agents swept and the finalizer dropped.
 */
async function finalize(deps: ReconcileDeps, ref: OrderRef, order: ClusterOrder, mem: OrderMemory): Promise<ReconcileResult> {
  if (!(order.metadata.finalizers ?? []).includes(FINALIZER)) return { action: "gone" };
  const f = deps.fulfillment;
  const requeue = (message: string): ReconcileResult =>
    ({ action: "requeue", message, requeueAt: new Date(Date.now() + deletionPollMs(deps.config)) });
  // 0. Say so on the order before anything is deleted: every worker Deleting.
  if (!mem.destroyed) await reportDeletion(deps, ref, mem, NOTHING_CONFIRMED);
  // 1. Destroy the stack: bindings (Agents may go: the cluster is being deleted), then every BMI it holds.
  //    The deletes are issued, not awaited.
  if (!mem.destroyed) {
    failpoint("finalize.beforeDestroy"); // fault suite: killed before the stack is destroyed
    const startedAt = (deps.now?.() ?? new Date()).toISOString();
    try {
      await deps.stacks.destroy(ref);
    } catch (err) {
      if (isNotLeaderError(err)) throw err; // another replica leads now: it reports, not we
      const failure = describeUpdateFailure(err, `destroy of stack ${stackName(ref.namespace, ref.name)} started ${startedAt}`);
      rememberFailure(mem, failure);
      deps.log?.("destroy failed", { order: key(ref), reason: failure.reason, message: failure.message });
      try {
        await reportDeletion(deps, ref, mem, NOTHING_CONFIRMED, failureEvents(failure));
      } catch (reportErr) {
        deps.log?.("could not report the failed destroy", { order: key(ref), error: String(reportErr) });
      }
      throw err;
    }
    mem.destroyed = true;
    mem.lastUpdate = { ok: true };
    failpoint("finalize.afterDestroy"); // fault suite: killed after destroy, before the leftover sweep
  }
  // 2. BMIs of this order that the stack never recorded (a create whose response was lost, a kill), and
  //    those of entries known only by name that the List left out (looked up by name).
  const byLabel = await f.bareMetalInstances.listAll(
    Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid })));
  const seenNames = (mem.finalizeNames ??= new Map());
  for (const [name, id] of namesOf(byLabel)) seenNames.set(name, id);
  const named = await lookUpNamedOnly(f, order, seenNames, mem);
  const listed = [...byLabel, ...named.found];
  for (const [name, id] of namesOf(named.found)) seenNames.set(name, id);
  for (const bmi of listed) {
    if (bmi.metadata?.deletion_timestamp) continue;
    try {
      await f.bareMetalInstances.delete(bmi.id);
    } catch (err) {
      if (!(err instanceof FulfillmentNotFound)) throw err;
    }
  }
  // 3. Confirm: every known BMI of the order must answer NOT_FOUND.
  const present = await stillPresent(f, knownBmiIds(order, listed, mem));
  const kept = await reportDeletion(deps, ref, mem, { present, confirmed: true, listedByName: seenNames, goneNames: named.gone });
  if (present.size > 0) return requeue(`${present.size} BareMetalInstance(s) of the order are still being deleted`);
  // The finalizer stays while the status keeps any worker: its BMI is not confirmed gone yet.
  if (kept > 0) {
    return requeue(`${kept} worker(s) known only by BareMetalInstance name are not confirmed absent yet ` +
      `(a lookup by name must find nothing on ${NAME_ABSENT_PASSES} passes in a row)`);
  }
  failpoint("finalize.afterBmiCleanup"); // fault suite: killed after the leftover BMIs are gone
  // 4. Leftover Agents of our workers (the cascade may not remove them; design §5.3 conflict).
  for (const agent of await deps.kube.listAgents(ref.namespace, `${ORDER_LABEL}=${order.metadata.uid}`)) {
    const ours = agent.metadata?.labels?.[ORDER_LABEL] === order.metadata.uid;
    if (!ours || !agent.metadata?.name || !agent.metadata.uid || !agent.metadata.resourceVersion) continue;
    try {
      await deps.kube.deleteAgent(ref.namespace, agent.metadata.name, { uid: agent.metadata.uid, resourceVersion: agent.metadata.resourceVersion });
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      return { action: "requeue", requeueAt: new Date(Date.now() + 1_000), message: "an Agent changed during cleanup" };
    }
  }
  failpoint("finalize.afterAgents"); // fault suite: killed after the Agent sweep, before the finalizer is dropped
  // 5. Release the order, then forget the stack. The finalizer list is read again: the reports changed
  //    the resourceVersion, and other finalizers may have come or gone meanwhile.
  const latest = await deps.kube.getClusterOrder(ref.namespace, ref.name);
  if (!latest) return { action: "gone" };
  await deps.kube.patchClusterOrderMetadata(ref,
    { finalizers: (latest.metadata.finalizers ?? []).filter((x) => x !== FINALIZER) }, latest.metadata.resourceVersion);
  failpoint("finalize.afterFinalizerRemoval"); // fault suite: killed after the finalizer is dropped, before the stack is removed
  await deps.stacks.removeStack(ref);
  deps.memory.delete(key(ref));
  return { action: "deleted" };
}

/**
 * Observes, plans the deletion and reports it (status and events); a conflict is observed again.
 * Returns how many workers the report kept (their BMIs not confirmed gone).
 */
async function reportDeletion(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory,
  seen: DeletionSeen,
  extraEvents: readonly PlannedEvent[] = []): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    let observed;
    try {
      observed = await observeAndPlan(deps, ref, mem, { countErrors: attempt === 1 });
    } catch (err) {
      if (err instanceof OrderNotFoundError) return 0;
      throw err;
    }
    const r = deletionReport(observed.snapshot.order, observed.plan, seen, observed.snapshot.now);
    try {
      await report(deps, mem, observed.snapshot, r.plan, [...r.events, ...extraEvents]);
      return r.plan.status.workers.length;
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= 5) throw err;
    }
  }
}
