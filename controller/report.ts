// The report phase: what a reconcile writes back to the ClusterOrder after observing. Per report one
// status write (server-side apply, conditional on the observed resourceVersion), the design's events, the
// duration metrics, and at most one metadata patch carrying every annotation that changes (the InfraEnv
// the ignition comes from, and what the caller adds: the applied record, or its withdrawal).
import * as crypto from "node:crypto";
import { ConflictError } from "../clients/kube";
import { APPLIED_ANNOTATION, INFRAENV_UID_ANNOTATION, stackName } from "../planner/names";
import type { ClusterOrder, Plan, PlannedEvent, Snapshot, WorkerStatus } from "../planner/types";
import type { OrderRef } from "../io/observe";
import { recordEvents, reportedEvents, reportedWorkers, writeStatus } from "../io/status";
import { failpoint } from "../lib/failpoints";
import { observeAndPlan } from "./observeOrder";
import { orderKey, type Observed, type OrderMemory, type ReconcileDeps } from "./reconcileDeps";
import { describeUpdateFailure, REASON_DELETE_REFUSED, type UpdateFailure } from "./updateFailure";

/** The annotation naming an order's tenant (the metrics' only label besides worker_type). */
export const TENANT_ANNOTATION = "osac.openshift.io/tenant";

export type AnnotationChanges = Record<string, string | null>;

export interface ReportOptions {
  /** Events beyond the plan's (a failed update's warnings). */
  extraEvents?: readonly PlannedEvent[];
  /** Annotations to set (null: remove) in the report's metadata patch, given the plan being reported. */
  annotations?: (plan: Plan) => AnnotationChanges;
}

/** The order as a report left it (the latest resourceVersion), and the observation it reported. */
export interface Reported {
  order: ClusterOrder;
  observed: Observed;
}

/**
 * Reports, and when the order changed since it was observed (a write conflicts), observes again and
 * reports that instead.
 */
export async function reportLatest(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, first: Observed,
  opts: ReportOptions = {}): Promise<Reported> {
  let current = first;
  for (let attempt = 1; ; attempt++) {
    try {
      return { order: await report(deps, mem, current, opts), observed: current };
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= 5) throw err;
    }
    current = await observeAndPlan(deps, ref, mem, { countErrors: false });
  }
}

/** One report of `plan`; returns the order as written (ConflictError when it changed since `snapshot`). */
export async function report(deps: ReconcileDeps, mem: OrderMemory, observed: Pick<Observed, "snapshot" | "plan">,
  opts: ReportOptions = {}): Promise<ClusterOrder> {
  const { snapshot, plan } = observed;
  const order = snapshot.order;
  const ref = { namespace: order.metadata.namespace, name: order.metadata.name };
  const written = reportedWorkers(order, plan);
  let latest = await writeStatus(deps.kube, order, plan, (fields) =>
    deps.log?.("status fields owned by another field manager were left to it", { order: orderKey(ref), fields }));
  failpoint("report.afterStatusWrite"); // fault suite: killed between the status and the events
  await recordEvents(deps.kube, order, plan, [...reportedEvents(order, plan, written), ...(opts.extraEvents ?? [])]);
  observeDurations(deps, mem, order, written, snapshot.now.getTime());
  const changes = annotationChanges(snapshot, { ...plan.annotations, ...opts.annotations?.(plan) });
  if (!changes) return latest;
  try {
    latest = await deps.kube.patchClusterOrderMetadata(ref, { annotations: changes }, latest.metadata.resourceVersion);
  } catch (err) {
    // Losing only the applied record costs a restart its shortcut (one `up` for this order), nothing more.
    if (err instanceof ConflictError || !onlyAppliedRecord(changes)) throw err;
    deps.log?.("could not record the applied plan on the ClusterOrder", { error: String(err) });
  }
  return latest;
}

/**
 * The annotations that change: the InfraEnv the current ignition comes from (so a recreated one is
 * detected: stale ignition) and the caller's. Undefined when every one already has its value.
 */
export function annotationChanges(snapshot: Pick<Snapshot, "order" | "infraEnv">, wanted: AnnotationChanges): AnnotationChanges | undefined {
  const current = snapshot.order.metadata.annotations ?? {};
  const all: AnnotationChanges = { ...(snapshot.infraEnv ? { [INFRAENV_UID_ANNOTATION]: snapshot.infraEnv.uid } : {}), ...wanted };
  const changed = Object.entries(all).filter(([k, v]) => (current[k] ?? null) !== v);
  return changed.length > 0 ? Object.fromEntries(changed) : undefined;
}

function onlyAppliedRecord(changes: AnnotationChanges): boolean {
  const keys = Object.keys(changes);
  return keys.length === 1 && keys[0] === APPLIED_ANNOTATION && changes[APPLIED_ANNOTATION] !== null;
}

/**
 * A failed update or destroy: described without secrets, remembered for every following snapshot
 * (UpdateFailed) and, for rejected Creates, for the planner; logged. The caller reports it.
 */
export function recordFailure(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, err: unknown,
  what: { operation: "update" | "destroy"; startedAt: string }): UpdateFailure {
  const failure = describeUpdateFailure(err, `${what.operation} of stack ${stackName(ref.namespace, ref.name)} started ${what.startedAt}`);
  mem.lastUpdate = { ok: false, reason: failure.reason, message: failure.message };
  if (failure.createRejections.length > 0) {
    const byName = new Map((mem.createRejections ?? []).map((r) => [r.bmiName, r]));
    for (const r of failure.createRejections) byName.set(r.bmiName, r);
    mem.createRejections = [...byName.values()];
  }
  deps.log?.(`${what.operation} failed`, { order: orderKey(ref), reason: failure.reason, message: failure.message });
  return failure;
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
export function observeDurations(deps: Pick<ReconcileDeps, "durations">, mem: OrderMemory, order: ClusterOrder,
  written: readonly WorkerStatus[], nowMs: number): void {
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
 * An update can wait minutes on a BMI delete or on the service; meanwhile the status would still say what
 * the world was before it began. From start() (the update has its pulumi slot: while it waits for one it
 * changes nothing, and in a burst an order waits for a slot longer than its update runs),
 * this reports the observed state every `progressReportMs` until stop(), which also waits for a report in
 * flight so it never lands after the final one.
 */
export function progressReports(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, awaitingFence: readonly string[] = []):
  { start(): void; stop(): Promise<void> } {
  const every = deps.progressReportMs ?? 0;
  if (every <= 0) return { start: () => undefined, stop: async () => undefined };
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    inFlight = (async () => {
      try {
        const now = await observeAndPlan(deps, ref, mem, { countErrors: false });
        // While new slots still await the program's fence, a status write (it changes the resourceVersion)
        // would make that conditional fence fail, and the new workers wait for the next update. The slots
        // the update was planned with count too: a new order's plan has none once its InfraEnv exists, but
        // its program fences them only after that InfraEnv's ignition came (decisions F18).
        const recorded = new Set((now.snapshot.order.status?.workers ?? []).map((w) => w.name));
        if (!stopped && now.plan.fence.length === 0 && awaitingFence.every((slot) => recorded.has(slot))) await report(deps, mem, now);
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
  return {
    start: () => {
      if (!stopped && !timer) timer = setTimeout(tick, every);
    },
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inFlight;
    },
  };
}
