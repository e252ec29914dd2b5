// Invariant I1, checked once more over the finished plan, independently of how it was made: a BMI
// that backs a Binding or Ready slot, or whose host has an Agent bound, leaves the declared set only
// when the slot's retirement (Unbinding, Deleting, Failed) is already persisted, or the order is being
// deleted. The persisted status is the order's current status (snapshot.order.status.workers).
import { hasIncarnation, confirmedGone } from "./context";
import { isOurAgent, labelledAgent, macsIntersect } from "./correlation";
import { desiredBinding, desiredBmi, observedBmiOf } from "./desired";
import { isDeleting } from "./management";
import { ACTIVE_PHASES, BOUND_PHASES } from "./phases";
import type { DesiredWorker, ObservedBmi, Plan, Snapshot, WorkerStatus } from "./types";

export const REASON_HOST_SAFETY_REFUSED = "HostSafetyRefused";

export interface HostSafetyViolation {
  entry: WorkerStatus;
  bmiName: string;
}

function persistedEntries(snapshot: Snapshot): WorkerStatus[] {
  return (snapshot.order.status?.workers ?? []).filter((w) => w.kind === "BareMetalInstance");
}

/** An Agent of this order bound to a cluster that is this slot's (by label) or this host's (by MAC). */
function agentBound(snapshot: Snapshot, entry: WorkerStatus, bmi: ObservedBmi | undefined): boolean {
  const { agents, order } = snapshot;
  const macs = bmi && bmi.macs.length > 0 ? bmi.macs : undefined;
  const labelled = labelledAgent(agents, order, entry.name, macs);
  if (labelled?.clusterDeploymentName?.name) return true;
  return macs !== undefined && agents.some((a) =>
    isOurAgent(a, order) && Boolean(a.clusterDeploymentName?.name) && a.macs !== undefined && macsIntersect(a.macs, macs));
}

/** Persisted entries whose BMI must stay declared: bound (or with a bound Agent), and not confirmed gone. */
export function protectedEntries(snapshot: Snapshot): WorkerStatus[] {
  if (isDeleting(snapshot.order)) return [];
  return persistedEntries(snapshot).filter((e) => {
    if (!hasIncarnation(e) || confirmedGone(snapshot, e)) return false;
    if (BOUND_PHASES.has(e.phase)) return true;
    return ACTIVE_PHASES.has(e.phase) && agentBound(snapshot, e, observedBmiOf(snapshot, e));
  });
}

/** The protected BMIs that `plan` does not declare (by name or by adopted id). */
export function hostSafetyViolations(snapshot: Snapshot, plan: Plan): HostSafetyViolation[] {
  const names = new Set(plan.workers.map((w) => w.bmi.name));
  const ids = new Set(plan.workers.map((w) => w.bmi.adoptId).filter((id): id is string => Boolean(id)));
  return protectedEntries(snapshot)
    .filter((e) => !names.has(e.bareMetalInstance?.name ?? "") && !(e.bareMetalInstance?.id && ids.has(e.bareMetalInstance.id)))
    .map((e) => ({ entry: e, bmiName: e.bareMetalInstance?.name ?? "?" }));
}

/** Declarations that keep each violated BMI (and its binding) exactly where it is. */
export function keepDeclarations(snapshot: Snapshot, violations: readonly HostSafetyViolation[]): DesiredWorker[] {
  return violations.map(({ entry }) => {
    const worker: DesiredWorker = { slot: entry.name, nodeSet: entry.nodeSet, bmi: desiredBmi(snapshot, entry, undefined) };
    const agent = labelledAgent(snapshot.agents, snapshot.order, entry.name, undefined);
    const binding = agent ? desiredBinding(snapshot, entry, agent) : undefined;
    if (binding) worker.binding = binding;
    else worker.retainBinding = true;
    return worker;
  });
}

export function hostSafetyMessage(violations: readonly HostSafetyViolation[]): string {
  const slots = violations.map((v) => `worker ${v.entry.name} (${v.entry.phase}, BareMetalInstance ${v.bmiName})`);
  return `the plan would have released the BareMetalInstance of ${slots.join(", ")} without a persisted Unbinding, ` +
    "Deleting or Failed phase; nothing is changed and every existing worker stays declared (a planner defect: please report it)";
}
