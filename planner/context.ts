// The working state of one planning pass: inputs, the clock, and what the pass accumulates.
import type { ClusterIdentity } from "./correlation";
import type { Gates } from "./gates";
import type { DesiredBinding, InFlight, ObservedAgent, ObservedBmi, PlannedEvent, PlannerConfig, Snapshot, WorkerStatus } from "./types";
import { toIso } from "./time";
import { clusterIdentity } from "./correlation";

export interface PlanContext {
  snapshot: Snapshot;
  config: PlannerConfig;
  nowMs: number;
  nowIso: string;
  gates: Gates;
  identity: ClusterIdentity;
  /** False while a stale-ignition switch is being recorded (no create may use either ignition). */
  createsAllowed: boolean;
  events: PlannedEvent[];
  /** Instants (ms) at which something becomes due; the plan requeues at the earliest. */
  deadlines: number[];
  /** Messages for the AgentMatchAmbiguous condition. */
  ambiguities: string[];
  /** Creates this pass may still start under the in-flight cap (Infinity: no cap). */
  createBudget: number;
  /** Creates the cap made wait for a later pass. */
  createsDeferred: number;
  /** Deletes this pass may still issue under the in-flight caps (Infinity: no cap). */
  deleteBudget: number;
  deletesDeferred: number;
}

/** One status entry on its way through the pass. */
export interface Work {
  /** The entry as persisted (never mutated). */
  prev: WorkerStatus;
  /** The next entry. */
  entry: WorkerStatus;
  bmi?: ObservedBmi;
  /**
   * The recorded BMI id is not in the List and no Get confirmed it gone: absence from a List proves
   * nothing (I3), so the BMI is treated as present but unseen (entry and phase unchanged, still declared).
   */
  unlisted?: boolean;
  /** This slot's Agent, by label or by a unique MAC match. */
  agent?: ObservedAgent;
  binding?: DesiredBinding;
  /** A bound worker whose Agent could not be identified because inventories are unreadable. */
  retainBinding?: boolean;
  /** Remove the entry; `deletedEvent` emits WorkerDeleted. */
  drop?: { deletedEvent: boolean };
  /** A new slot or incarnation fenced by this pass. */
  fenced?: boolean;
}

export function newContext(snapshot: Snapshot, gates: Gates, createsAllowed: boolean): PlanContext {
  const nowMs = snapshot.now.getTime();
  return {
    snapshot, config: snapshot.config, nowMs, nowIso: toIso(nowMs), gates,
    identity: clusterIdentity(snapshot.order, snapshot.clusterDeployment),
    createsAllowed, events: [], deadlines: [], ambiguities: [], createBudget: createBudget(snapshot), createsDeferred: 0,
    deleteBudget: deleteBudget(snapshot), deletesDeferred: 0,
  };
}

/**
 * In flight for the blast-radius caps: creates attempted and not yet bound (Provisioning, WaitingForAgent
 * with an incarnation, as status records them), and deletes issued and not finished (the order's BMIs the
 * service shows Deleting).
 */
export function inFlightOf(snapshot: Snapshot): InFlight {
  return { creates: createsInFlight(snapshot.order.status?.workers ?? []), deletes: (snapshot.bmis ?? []).filter((b) => b.state === "Deleting").length };
}

export function createsInFlight(workers: readonly WorkerStatus[]): number {
  return workers.filter((w) => (w.phase === "Provisioning" || w.phase === "WaitingForAgent") && hasIncarnation(w)).length;
}

/** What the order's cap and the hub's cap (over the other orders' count, unknown: nothing) leave for this pass. */
function budget(own: number, cap: number, hubCap: number, others: number | undefined): number {
  let left = cap ? Math.max(0, cap - own) : Infinity;
  if (hubCap) left = Math.min(left, others === undefined ? 0 : Math.max(0, hubCap - others - own));
  return left;
}

function createBudget(snapshot: Snapshot): number {
  const { config } = snapshot;
  return budget(inFlightOf(snapshot).creates, config.maxCreatesInFlight, config.hubMaxCreatesInFlight, snapshot.hub?.creates);
}

function deleteBudget(snapshot: Snapshot): number {
  const { config } = snapshot;
  return budget(inFlightOf(snapshot).deletes, config.maxDeletesInFlight, config.hubMaxDeletesInFlight, snapshot.hub?.deletes);
}

/** Takes one change from a pass's budget; false (counted, due again at the next poll) when a cap is reached. */
function take(ctx: PlanContext, left: "createBudget" | "deleteBudget", deferred: "createsDeferred" | "deletesDeferred"): boolean {
  if (ctx[left] > 0) {
    ctx[left]--;
    return true;
  }
  ctx[deferred]++;
  ctx.deadlines.push(ctx.nowMs + ctx.config.ignitionPollMs);
  return false;
}

export const takeCreate = (ctx: PlanContext): boolean => take(ctx, "createBudget", "createsDeferred");
export const takeDelete = (ctx: PlanContext): boolean => take(ctx, "deleteBudget", "deletesDeferred");

export function cloneEntry(entry: WorkerStatus): WorkerStatus {
  return { ...entry, ...(entry.bareMetalInstance ? { bareMetalInstance: { ...entry.bareMetalInstance } } : {}) };
}

/** The entry has an incarnation that may exist on the service (a Create was attempted or an id is known). */
export function hasIncarnation(entry: WorkerStatus): boolean {
  return Boolean(entry.bareMetalInstance?.id) || (entry.bmiCreateState === "Attempted" && Boolean(entry.bareMetalInstance?.name));
}

/** Whether the slot's BMI may still exist: observed, or recorded but not confirmed gone. */
export function bmiMayExist(w: Work): boolean {
  return w.bmi !== undefined || Boolean(w.unlisted);
}

/** Whether a Get confirmed the entry's recorded BMI id NOT_FOUND in this observation. */
export function confirmedGone(snapshot: Snapshot, entry: WorkerStatus): boolean {
  const id = entry.bareMetalInstance?.id;
  return id !== undefined && (snapshot.goneBmiIds ?? []).includes(id);
}
