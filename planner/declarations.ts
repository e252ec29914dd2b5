// What a plan declares: the BMIs (and bindings) the stack keeps or makes. A BMI left out is deleted by the
// update, so every rule here is about when a BMI may be left out: after its worker's new phase is
// persisted (heldByTransition), and within the in-flight delete caps (takeDelete).
import { bmiMayExist, hasIncarnation, takeDelete, type PlanContext, type Work } from "./context";
import { labelledAgent } from "./correlation";
import { desiredBinding, desiredBmi } from "./desired";
import type { Gates } from "./gates";
import { ACTIVE_PHASES, BOUND_PHASES } from "./phases";
import { createInputsKnown } from "./scaling";
import type { DesiredWorker, Snapshot, WorkerStatus } from "./types";

/** The declarations of the entries as they are (paused plans: `up` must not delete anything). */
export function existingDeclarations(snapshot: Snapshot, gates: Gates, entries: readonly WorkerStatus[]): DesiredWorker[] {
  const out: DesiredWorker[] = [];
  for (const e of entries) {
    if (!ACTIVE_PHASES.has(e.phase) || !hasIncarnation(e)) continue;
    if (!e.bareMetalInstance?.id && !gates.inputs) continue; // a create without its inputs is never declared
    const worker: DesiredWorker = { slot: e.name, nodeSet: e.nodeSet, bmi: desiredBmi(snapshot, e, gates.inputs) };
    if (BOUND_PHASES.has(e.phase)) {
      const agent = labelledAgent(snapshot.agents, snapshot.order, e.name, undefined);
      const binding = agent ? desiredBinding(snapshot, e, agent) : undefined;
      if (binding) worker.binding = binding;
      else worker.retainBinding = true;
    }
    out.push(worker);
  }
  return out;
}

/**
 * A worker leaving the declared set (Failed, Unbinding, Deleting) keeps its declaration for the pass
 * that decides it: the BMI (and the retry history) goes only after the new phase is persisted.
 */
function heldByTransition(w: Work): boolean {
  return ACTIVE_PHASES.has(w.prev.phase) && !ACTIVE_PHASES.has(w.entry.phase) && bmiMayExist(w) && hasIncarnation(w.prev);
}

/** Leaving this worker out deletes a BMI: one the service shows, not already being deleted, known by id (declared as adopted if kept). */
function deletes(w: Work): boolean {
  return Boolean(w.bmi && w.bmi.state !== "Deleting" && w.entry.bareMetalInstance?.id);
}

export function declare(ctx: PlanContext, works: readonly Work[]): { workers: DesiredWorker[]; held: number } {
  const workers: DesiredWorker[] = [];
  let held = 0;
  for (const w of works) {
    if (w.drop) continue;
    const e = w.entry;
    const hold = heldByTransition(w);
    let declared = hold;
    if (ACTIVE_PHASES.has(e.phase)) {
      declared = Boolean(w.fenced || e.bareMetalInstance?.id ||
        (e.bmiCreateState === "Attempted" && e.bareMetalInstance?.name && createInputsKnown(ctx, e)));
      if (!declared && hasIncarnation(e)) ctx.deadlines.push(ctx.nowMs + ctx.config.ignitionPollMs);
    }
    // A live BMI this pass would delete waits, declared as it is, while the in-flight delete caps are reached.
    const deferred = !declared && !ACTIVE_PHASES.has(e.phase) && deletes(w) && !takeDelete(ctx);
    if (deferred) declared = true;
    if (!declared) continue;
    if (hold) held++;
    const source = hold ? w.prev : e;
    const worker: DesiredWorker = { slot: e.name, nodeSet: e.nodeSet, bmi: desiredBmi(ctx.snapshot, source, ctx.gates.inputs) };
    if (w.fenced) worker.requiresFence = true;
    const bound = BOUND_PHASES.has(e.phase) || (hold && BOUND_PHASES.has(w.prev.phase)) || ((hold || deferred) && e.phase === "Unbinding");
    if (bound && w.agent) {
      const binding = desiredBinding(ctx.snapshot, e, w.agent);
      if (binding) worker.binding = binding;
    } else if (bound && w.retainBinding) {
      worker.retainBinding = true;
    }
    workers.push(worker);
  }
  return { workers, held };
}

