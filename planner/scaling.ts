// Per node set capacity (OSAC-2135 §3.1 counting, §5.1, §5.2): replacements after backoff, new slots,
// and scale-down. Failed slots are not capacity; their replacement is the retry. On scale-down, Failed
// slots are retired first, then slots not yet bound (newest first; they are not in the NodePool so CAPI
// cannot pick them), and only the remainder is left to CAPI through the NodePool's replicas.
import type { PlanContext, Work } from "./context";
import { bmiMayExist, cloneEntry, hasIncarnation, takeCreate } from "./context";
import { fabricInterfaceFor, newBmiName } from "./desired";
import { EV_WORKER_CREATED, slotEvent } from "./events";
import type { NodeSetSpec } from "./gates";
import { ACTIVE_PHASES, moveTo } from "./phases";
import { msOf } from "./time";
import type { WorkerStatus } from "./types";

export interface ScaleResult {
  /** New slots appended by this pass. */
  created: Work[];
  /** Creates (new slots, replacements, reservations) that were wanted, whether or not they could run. */
  wantedCreates: number;
}

function live(works: readonly Work[], nodeSet: string): Work[] {
  return works.filter((w) => !w.drop && w.entry.nodeSet === nodeSet);
}

/** Newest first; entries with nothing created at all go before everything else. */
function retireOrder(a: Work, b: Work): number {
  const ai = hasIncarnation(a.entry) ? 1 : 0;
  const bi = hasIncarnation(b.entry) ? 1 : 0;
  if (ai !== bi) return ai - bi;
  const at = msOf(a.entry.creationTimestamp) ?? 0;
  const bt = msOf(b.entry.creationTimestamp) ?? 0;
  if (at !== bt) return bt - at;
  const as = msOf(a.entry.attemptStartedAt) ?? 0;
  const bs = msOf(b.entry.attemptStartedAt) ?? 0;
  if (as !== bs) return bs - as;
  return b.entry.name.localeCompare(a.entry.name);
}

function retireUnbound(ctx: PlanContext, w: Work): void {
  if (!hasIncarnation(w.entry)) {
    w.drop = { deletedEvent: false };
    return;
  }
  moveTo(w.entry, "Deleting");
  w.entry.attemptStartedAt = ctx.nowIso;
}

/** Fences an entry for a Create: Attempted is persisted before the Create may be sent. */
function fence(ctx: PlanContext, w: Work): void {
  const e = w.entry;
  w.fenced = true;
  ctx.events.push(slotEvent(EV_WORKER_CREATED, e.name, e.attemptCount ?? 1,
    `creating BareMetalInstance ${e.bareMetalInstance?.name ?? "?"} for worker ${e.name} (node set ${e.nodeSet}, attempt ${e.attemptCount ?? 1})`));
}

function startAttempt(ctx: PlanContext, e: WorkerStatus, spec: NodeSetSpec, bmiName: string): void {
  e.bareMetalInstance = { name: bmiName };
  e.bmiCreateState = "Attempted";
  e.instanceType = spec.instanceType;
  e.attemptCount = (e.attemptCount ?? 0) + 1;
  e.attemptStartedAt = ctx.nowIso;
  delete e.nextRetryTime;
  delete e.readySince;
}

function canCreate(ctx: PlanContext, spec: NodeSetSpec | undefined): spec is NodeSetSpec {
  return ctx.createsAllowed && ctx.gates.createBlockers.length === 0 && spec !== undefined && !spec.createBlocked && !spec.frozen;
}

function newSlot(ctx: PlanContext, spec: NodeSetSpec): Work {
  const name = ctx.snapshot.newName();
  const entry: WorkerStatus = {
    name, nodeSet: spec.nodeSet, kind: "BareMetalInstance", phase: "Provisioning", creationTimestamp: ctx.nowIso,
  };
  startAttempt(ctx, entry, spec, newBmiName(ctx.snapshot));
  const w: Work = { prev: entry, entry };
  fence(ctx, w);
  return w;
}

function scaleNodeSet(ctx: PlanContext, works: Work[], nodeSet: string, spec: NodeSetSpec | undefined, out: ScaleResult): void {
  const desired = spec?.desired ?? 0;
  const mine = live(works, nodeSet);
  const active = mine.filter((w) => ["Provisioning", "WaitingForAgent", "Binding", "Ready"].includes(w.entry.phase));
  const failed = mine.filter((w) => w.entry.phase === "Failed");
  let excess = active.length - desired;
  if (excess > 0) {
    const unbound = active.filter((w) => w.entry.phase === "Provisioning" || w.entry.phase === "WaitingForAgent").sort(retireOrder);
    for (const w of unbound) {
      if (excess === 0) break;
      retireUnbound(ctx, w);
      excess--;
    }
  }
  const need = Math.max(0, desired - active.length);
  const byRetry = [...failed].sort((a, b) =>
    (msOf(a.entry.nextRetryTime) ?? 0) - (msOf(b.entry.nextRetryTime) ?? 0) || a.entry.name.localeCompare(b.entry.name));
  const keep = byRetry.slice(0, need);
  for (const w of byRetry.slice(need)) {
    // Not needed any more: its BMI leaves the desired set; the entry goes once the BMI is gone.
    if (!bmiMayExist(w)) w.drop = { deletedEvent: true };
  }
  const creatable = canCreate(ctx, spec);
  for (const w of keep) {
    const due = msOf(w.entry.nextRetryTime) ?? ctx.nowMs;
    if (due > ctx.nowMs) {
      ctx.deadlines.push(due);
      continue;
    }
    if (bmiMayExist(w)) continue; // the failed BMI is deleted (and confirmed gone) before its replacement is created
    out.wantedCreates++;
    if (creatable && takeCreate(ctx)) {
      moveTo(w.entry, "Provisioning");
      startAttempt(ctx, w.entry, spec, newBmiName(ctx.snapshot));
      fence(ctx, w);
    }
  }
  // Slots reserved but never attempted (bmiCreateState Reserved or imported): attempt them now.
  for (const w of active) {
    if (w.drop || w.entry.phase !== "Provisioning" || hasIncarnation(w.entry)) continue;
    out.wantedCreates++;
    if (creatable && takeCreate(ctx)) {
      const name = w.entry.bareMetalInstance?.name ?? newBmiName(ctx.snapshot);
      startAttempt(ctx, w.entry, spec, name);
      fence(ctx, w);
    }
  }
  const fresh = need - keep.length;
  out.wantedCreates += Math.max(0, fresh);
  if (creatable) for (let i = 0; i < fresh; i++) if (takeCreate(ctx)) out.created.push(newSlot(ctx, spec));
}

/**
 * Under an ambiguous NodePool mapping an unbinding may be CAPI installing one pool's Agent for another,
 * not a scale-down: a worker that would enter Unbinding this pass keeps its previous phase, so its BMI
 * and binding stay declared. Retirements persisted earlier go on; failures are handled as always.
 */
function holdRetirements(works: readonly Work[], nodeSet: string): void {
  for (const w of works) {
    if (w.drop || w.entry.nodeSet !== nodeSet) continue;
    if (!ACTIVE_PHASES.has(w.prev.phase) || w.entry.phase !== "Unbinding") continue;
    const bmi = w.entry.bareMetalInstance;
    w.entry = { ...cloneEntry(w.prev), ...(bmi ? { bareMetalInstance: { ...bmi } } : {}) };
  }
}

/** Scales every node set that is requested or still has workers. Frozen node sets are left alone. */
export function scale(ctx: PlanContext, works: Work[]): ScaleResult {
  const out: ScaleResult = { created: [], wantedCreates: 0 };
  const nodeSets = new Set<string>([...ctx.gates.nodeSets.keys(), ...works.map((w) => w.entry.nodeSet)]);
  for (const nodeSet of [...nodeSets].sort()) {
    const spec = ctx.gates.nodeSets.get(nodeSet);
    if (spec?.poolConflict) holdRetirements(works, nodeSet);
    if (spec?.frozen) continue;
    scaleNodeSet(ctx, works, nodeSet, spec, out);
  }
  return out;
}

/** Whether an existing attempted-but-unconfirmed incarnation can be declared (its create inputs are known). */
export function createInputsKnown(ctx: PlanContext, e: WorkerStatus): boolean {
  return ctx.gates.inputs !== undefined && Boolean(e.instanceType) && fabricInterfaceFor(ctx.snapshot, e.nodeSet, e.instanceType) !== "";
}
