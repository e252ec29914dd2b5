// The finalizer path of a ClusterOrder being deleted. It never waits for the service: it reports every
// worker Deleting, destroys the stack once (deletes issued), deletes leftover BMIs, and requeues while any
// BMI of the order is still there. Only when a Get has confirmed every known BMI gone (one known only by
// name: NAME_ABSENT_PASSES lookups by name in a row found nothing) are the leftover Agents swept and the
// finalizer dropped.
import type { BareMetalInstanceOut, FulfillmentApi } from "../clients/fulfillment";
import { Filter, NotFoundError as FulfillmentNotFound, SYSTEM_TENANT } from "../clients/fulfillment";
import { ConflictError } from "../clients/kube";
import { REASON_APPROVAL_REQUIRED } from "../planner/changeControl";
import { EV_WORKER_DELETED, orderEvent } from "../planner/events";
import { FINALIZER, ORDER_LABEL } from "../planner/names";
import type { ClusterOrder, Plan, PlannedEvent, PlannerConfig, WorkerStatus } from "../planner/types";
import { OrderNotFoundError, type OrderRef } from "../io/observe";
import { failpoint } from "../lib/failpoints";
import { isNotLeaderError } from "../lib/notLeader";
import { observeAndPlan } from "./observeOrder";
import { clockOf, orderKey, type OrderMemory, type ReconcileDeps, type ReconcileResult } from "./reconcileDeps";
import { failureEvents, recordFailure, report } from "./report";

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
async function stillPresent(f: FulfillmentApi, ids: Iterable<string>): Promise<Set<string>> {
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
async function lookUpNamedOnly(f: FulfillmentApi, order: ClusterOrder, knownByName: ReadonlyMap<string, string>, mem: OrderMemory):
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

/** One pass of the finalizer path (see the top of this file); "deleted" once the finalizer is dropped. */
export async function finalize(deps: ReconcileDeps, ref: OrderRef, order: ClusterOrder, mem: OrderMemory): Promise<ReconcileResult> {
  if (!(order.metadata.finalizers ?? []).includes(FINALIZER)) return { action: "gone" };
  const now = clockOf(deps);
  const requeue = (message: string, afterMs = deletionPollMs(deps.config)): ReconcileResult =>
    ({ action: "requeue", message, requeueAt: new Date(now().getTime() + afterMs) });
  // The order as this pass read it, observed without reading it again until a report writes it.
  let unwritten: ClusterOrder | undefined = order;
  if (!mem.destroyed) {
    // Say so on the order before anything is deleted: every worker Deleting (unless the approval policy holds the deletion).
    const first = await reportDeletion(deps, ref, mem, NOTHING_CONFIRMED, { order });
    if (first.held) return requeue("the deletion of the order's workers waits for approval (ApprovalRequired)");
    unwritten = undefined;
    await destroyStack(deps, ref, mem, now().toISOString());
  }
  const swept = await deleteLeftoverBmis(deps, order, mem);
  // Confirm: every known BMI of the order must answer NOT_FOUND.
  const present = await stillPresent(deps.fulfillment, knownBmiIds(order, swept.listed, mem));
  const { kept } = await reportDeletion(deps, ref, mem, { present, confirmed: true, listedByName: swept.seenNames, goneNames: swept.goneNames },
    { order: unwritten });
  if (present.size > 0) return requeue(`${present.size} BareMetalInstance(s) of the order are still being deleted`);
  // The finalizer stays while the status keeps any worker: its BMI is not confirmed gone yet.
  if (kept > 0) {
    return requeue(`${kept} worker(s) known only by BareMetalInstance name are not confirmed absent yet ` +
      `(a lookup by name must find nothing on ${NAME_ABSENT_PASSES} passes in a row)`);
  }
  failpoint("finalize.afterBmiCleanup"); // fault suite: killed after the leftover BMIs are gone
  if (!(await deleteLeftoverAgents(deps, ref, order))) return requeue("an Agent changed during cleanup", 1_000);
  failpoint("finalize.afterAgents"); // fault suite: killed after the Agent sweep, before the finalizer is dropped
  return release(deps, ref);
}

/**
 * Destroys the stack once: bindings (Agents may go: the cluster is being deleted), then every BMI it
 * holds. The deletes are issued, not awaited. A failure is reported on the order and rethrown.
 */
async function destroyStack(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, startedAt: string): Promise<void> {
  failpoint("finalize.beforeDestroy"); // fault suite: killed before the stack is destroyed
  try {
    await deps.stacks.destroy(ref);
  } catch (err) {
    if (isNotLeaderError(err)) throw err; // another replica leads now: it reports, not we
    const failure = recordFailure(deps, ref, mem, err, { operation: "destroy", startedAt });
    try {
      await reportDeletion(deps, ref, mem, NOTHING_CONFIRMED, { extraEvents: failureEvents(failure) });
    } catch (reportErr) {
      deps.log?.("could not report the failed destroy", { order: orderKey(ref), error: String(reportErr) });
    }
    throw err;
  }
  mem.destroyed = true;
  mem.lastUpdate = { ok: true };
  failpoint("finalize.afterDestroy"); // fault suite: killed after destroy, before the leftover sweep
}

/**
 * Deletes the BMIs of this order that the stack never recorded (a create whose response was lost, a
 * kill), and those of entries known only by name that the List left out (looked up by name).
 */
async function deleteLeftoverBmis(deps: ReconcileDeps, order: ClusterOrder, mem: OrderMemory):
  Promise<{ listed: BareMetalInstanceOut[]; seenNames: ReadonlyMap<string, string>; goneNames: ReadonlySet<string> }> {
  const f = deps.fulfillment;
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
  return { listed, seenNames, goneNames: named.gone };
}

/** Leftover Agents of our workers (the cascade may not remove them; design §5.3 conflict). False: one changed meanwhile. */
async function deleteLeftoverAgents(deps: ReconcileDeps, ref: OrderRef, order: ClusterOrder): Promise<boolean> {
  for (const agent of await deps.kube.listAgents(ref.namespace, `${ORDER_LABEL}=${order.metadata.uid}`)) {
    const ours = agent.metadata?.labels?.[ORDER_LABEL] === order.metadata.uid;
    if (!ours || !agent.metadata?.name || !agent.metadata.uid || !agent.metadata.resourceVersion) continue;
    try {
      await deps.kube.deleteAgent(ref.namespace, agent.metadata.name, { uid: agent.metadata.uid, resourceVersion: agent.metadata.resourceVersion });
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      return false;
    }
  }
  return true;
}

/**
 * Releases the order, then forgets the stack. The finalizer list is read again: the reports changed the
 * resourceVersion, and other finalizers may have come or gone meanwhile.
 */
async function release(deps: ReconcileDeps, ref: OrderRef): Promise<ReconcileResult> {
  const latest = await deps.kube.getClusterOrder(ref.namespace, ref.name);
  if (!latest) return { action: "gone" };
  // The stack goes while the finalizer still holds the order: once the order is gone nothing would remove
  // it, and an order made again under the same name would inherit its history. A kill in between leaves
  // the order to the next pass, which destroys an empty stack and removes it again.
  await deps.stacks.removeStack(ref);
  failpoint("finalize.afterStackRemoval"); // fault suite: killed after the stack is removed, before the finalizer is dropped
  await deps.kube.patchClusterOrderMetadata(ref,
    { finalizers: (latest.metadata.finalizers ?? []).filter((x) => x !== FINALIZER) }, latest.metadata.resourceVersion);
  failpoint("finalize.afterFinalizerRemoval"); // fault suite: killed after the finalizer is dropped
  deps.memory.delete(orderKey(ref));
  return { action: "deleted" };
}

/**
 * Observes, plans the deletion and reports it (status and events); a conflict is observed again.
 * Returns how many workers the report kept (their BMIs not confirmed gone).
 */
async function reportDeletion(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, seen: DeletionSeen,
  opts: { extraEvents?: readonly PlannedEvent[]; order?: ClusterOrder } = {}): Promise<{ kept: number; held: boolean }> {
  for (let attempt = 1; ; attempt++) {
    let observed;
    try {
      observed = await observeAndPlan(deps, ref, mem, { countErrors: attempt === 1, order: attempt === 1 ? opts.order : undefined });
    } catch (err) {
      if (err instanceof OrderNotFoundError) return { kept: 0, held: false };
      throw err;
    }
    // A deletion the approval policy holds is reported as planned: nothing Deleting, ApprovalRequired listing it.
    const held = observed.plan.paused?.reason === REASON_APPROVAL_REQUIRED;
    const r = held ? { plan: observed.plan, events: [] } : deletionReport(observed.snapshot.order, observed.plan, seen, observed.snapshot.now);
    try {
      await report(deps, mem, { snapshot: observed.snapshot, plan: r.plan }, { extraEvents: [...r.events, ...(opts.extraEvents ?? [])] });
      return { kept: r.plan.status.workers.length, held };
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= 5) throw err;
    }
  }
}
