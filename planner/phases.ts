// The worker phase machine (OSAC-2135 §3.1) and the three extensions this project adds, each recorded
// in docs/decisions.md: Binding → Unbinding (CAPI can pick an Agent that is still installing),
// Provisioning/WaitingForAgent → Deleting (scale-down removes unbound slots first, §5.2 conflict), and
// any phase → Deleting while the cluster is deleted (the finalizer deletes every BMI, §5.3).
import type { WorkerPhase, WorkerStatus } from "./types";

export const PHASES: readonly WorkerPhase[] = [
  "Provisioning", "WaitingForAgent", "Binding", "Ready", "Failed", "Unbinding", "Deleting",
];

/** Phases that count as capacity (currentWorkers) and whose BMI is declared. */
export const ACTIVE_PHASES: ReadonlySet<WorkerPhase> = new Set(["Provisioning", "WaitingForAgent", "Binding", "Ready"]);

/** Phases whose Agent is (being) bound to the cluster, so CAPI may choose them on scale-down. */
export const BOUND_PHASES: ReadonlySet<WorkerPhase> = new Set(["Binding", "Ready"]);

export type TransitionCause = "reconcile" | "clusterDeletion";

const FORWARD: Readonly<Record<WorkerPhase, readonly WorkerPhase[]>> = {
  // Forward moves may skip steps when a restart finds a later live state (§5.6: phases move forward only).
  Provisioning: ["WaitingForAgent", "Binding", "Ready", "Failed", "Deleting"],
  WaitingForAgent: ["Binding", "Ready", "Failed", "Deleting"],
  Binding: ["Ready", "Failed", "Unbinding"],
  Ready: ["Unbinding"],
  // The replacement incarnation of a failed slot.
  Failed: ["Provisioning"],
  Unbinding: ["Deleting"],
  Deleting: [],
};

/** Whether `from → to` is allowed; staying in a phase always is. */
export function allowedTransition(from: WorkerPhase, to: WorkerPhase, cause: TransitionCause = "reconcile"): boolean {
  if (from === to) return true;
  if (cause === "clusterDeletion" && to === "Deleting") return true;
  return FORWARD[from].includes(to);
}

export class IllegalTransitionError extends Error {
  constructor(readonly slot: string, readonly from: WorkerPhase, readonly to: WorkerPhase) {
    super(`worker ${slot}: phase ${from} → ${to} is not an allowed transition`);
    this.name = "IllegalTransitionError";
  }
}

/** Moves an entry to `to`, refusing transitions the phase machine does not allow (a planner bug). */
export function moveTo(entry: WorkerStatus, to: WorkerPhase, cause: TransitionCause = "reconcile"): void {
  if (!allowedTransition(entry.phase, to, cause)) throw new IllegalTransitionError(entry.name, entry.phase, to);
  entry.phase = to;
}

export function isActive(phase: WorkerPhase): boolean {
  return ACTIVE_PHASES.has(phase);
}
