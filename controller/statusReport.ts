// What `baremetal-workers status` reports: a row per worker, the orders whose updates fail, wait for
// approval, are pinned or held by a saved preview, and the create-only drift of live BMIs.
import type { ShardHolder } from "./shards";
import { OrderNotFoundError } from "../io/observe";
import { COND_UPDATE_FAILED } from "../planner/conditions";
import type { Condition, WorkerDrift, WorkerStatus } from "../planner/types";
import { Slots } from "./slots";

export interface StatusRow {
  order: string;
  worker: string;
  nodeSet: string;
  phase: string;
  bmi?: string;
  attempts: number;
  nextRetry?: string;
  reason?: string;
}

export function statusRows(order: string, workers: WorkerStatus[]): StatusRow[] {
  return workers.map((w) => ({
    order, worker: w.name, nodeSet: w.nodeSet, phase: w.phase, bmi: w.bareMetalInstance?.name,
    attempts: w.attemptCount ?? 0, nextRetry: w.nextRetryTime, reason: w.lastFailureReason,
  }));
}

/** A failing stack update of an order, as its UpdateFailed condition says. */
export interface UpdateFailureRow {
  order: string;
  /** lastTransitionTime: since when updates of the order fail. */
  since?: string;
  reason: string;
  /** Which update failed and why (secret-free). */
  message: string;
}

export interface StatusReport {
  workers: StatusRow[];
  /** Orders whose last update failed (UpdateFailed=True). */
  updateFailures: UpdateFailureRow[];
  /** Create-only inputs of live BMIs that differ from the request (kept as they are; only new incarnations change). */
  drift: (WorkerDrift & { order: string })[];
  /** Drifting orders whose drift could not be observed this time (deleted meanwhile, service unreadable). */
  driftUnknown?: { order: string; message: string }[];
  /** Orders whose plan waits for `approve` (ApprovalRequired=True), pinned by a rollback (Pinned=True), held by a saved preview (PlanDiverged=True). */
  approvals?: UpdateFailureRow[];
  pinned?: UpdateFailureRow[];
  diverged?: UpdateFailureRow[];
  /** With sharded reconcilers: who holds each shard Lease. */
  shards?: ShardHolder[];
}

/** Drift observations of `status` run at once: each is a full observation of one order. */
export const STATUS_DRIFT_CONCURRENCY = 4;

/**
 * The drift of every order, at most `concurrency` observations at a time. An order that cannot be
 * observed (deleted during the command, an unreadable service) gets a note, not a failed command.
 */
export async function driftReport<O extends { metadata: { namespace: string; name: string } }>(
  orders: readonly O[], driftOf: (order: O) => Promise<WorkerDrift[]>, concurrency = STATUS_DRIFT_CONCURRENCY,
): Promise<Pick<StatusReport, "drift" | "driftUnknown">> {
  const slots = new Slots(concurrency);
  const results = await Promise.all(orders.map((o) => slots.run(async () => {
    const order = `${o.metadata.namespace}/${o.metadata.name}`;
    try {
      return { drift: (await driftOf(o)).map((d) => ({ order, ...d })) };
    } catch (err) {
      const message = err instanceof OrderNotFoundError ? "the ClusterOrder was deleted meanwhile"
        : `drift unknown: ${err instanceof Error ? err.message : String(err)}`;
      return { drift: [], unknown: { order, message } };
    }
  })));
  const driftUnknown = results.flatMap((r) => (r.unknown ? [r.unknown] : []));
  return { drift: results.flatMap((r) => r.drift), ...(driftUnknown.length ? { driftUnknown } : {}) };
}

export function updateFailureRows(order: string, conditions: Condition[] | undefined, type = COND_UPDATE_FAILED): UpdateFailureRow[] {
  const c = (conditions ?? []).find((x) => x.type === type && x.status === "True");
  return c ? [{ order, since: c.lastTransitionTime, reason: c.reason, message: c.message }] : [];
}

