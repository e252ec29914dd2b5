// "Retry now" (issue 17): an operator sets the annotation osac.openshift.io/retry-now to a new value (a
// timestamp, say) and every Failed worker of the order is retried at once instead of at its next retry
// time, with its backoff restarted: its attempt count starts again, as it does once a worker has been
// healthy for the minimum duration. Each value acts once: the value is recorded as acted on, in an
// annotation of ours, by the first report that finds no Failed worker left (the one after the update that
// retried them); a plan reported before that (an update that failed before its fence) retried nothing,
// so the value stays pending.
import { orderEvent } from "./events";
import type { PlannedEvent, Snapshot, WorkerStatus } from "./types";

export const RETRY_NOW_ANNOTATION = "osac.openshift.io/retry-now";
/** Ours: the retry-now value acted on. */
export const RETRY_NOW_APPLIED_ANNOTATION = "osac.openshift.io/retry-now-applied";
export const EV_RETRY_NOW = "RetryNow";

export interface RetryNow {
  /** The snapshot to plan from: Failed workers due now with their backoff restarted. */
  snapshot: Snapshot;
  /** The annotation to write: only once no Failed worker is left to retry. */
  annotations?: Record<string, string>;
  events: PlannedEvent[];
}

/** Acts on a retry-now value not acted on yet; anything else leaves the snapshot as it is. */
export function applyRetryNow(snapshot: Snapshot): RetryNow {
  const annotations = snapshot.order.metadata.annotations ?? {};
  const wanted = annotations[RETRY_NOW_ANNOTATION];
  if (!wanted || annotations[RETRY_NOW_APPLIED_ANNOTATION] === wanted) return { snapshot, events: [] };
  const workers = snapshot.order.status?.workers ?? [];
  const failed = workers.filter((w) => w.kind === "BareMetalInstance" && w.phase === "Failed");
  if (failed.length === 0) return { snapshot, annotations: { [RETRY_NOW_APPLIED_ANNOTATION]: wanted }, events: [] };
  const nowIso = snapshot.now.toISOString();
  const retried = (w: WorkerStatus): WorkerStatus =>
    w.kind === "BareMetalInstance" && w.phase === "Failed" ? { ...w, nextRetryTime: nowIso, attemptCount: 0 } : w;
  const order = {
    ...snapshot.order,
    ...(snapshot.order.status ? { status: { ...snapshot.order.status, workers: workers.map(retried) } } : {}),
  };
  const names = failed.map((w) => w.name).sort();
  const message = `retry now (${RETRY_NOW_ANNOTATION}=${wanted}): failed workers ${names.join(", ")} are retried at once, their backoff restarted`;
  return { snapshot: { ...snapshot, order }, events: [orderEvent(EV_RETRY_NOW, [wanted], message)] };
}
