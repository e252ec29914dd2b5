// Observe-only mode (issue 17, point 4): the whole loop observes and plans, but acts on nothing; per order
// it reports where its plan differs from the workers another controller (the incumbent) recorded in
// `status.workers[]`. A new controller is rolled out this way beside the incumbent, dormant, and switched
// on once both agree.
import type { PlannedChange } from "./changeControl";
import type { ClusterOrder, Plan } from "./types";

/** The report, ours alone: the only thing an observing controller writes on a ClusterOrder. */
export const OBSERVE_REPORT_ANNOTATION = "osac.openshift.io/baremetal-workers-observed";

export interface ObserveReport {
  /** True when this controller would change nothing the incumbent recorded. */
  agrees: boolean;
  /**
   * Each difference, in words that stay the same from one observation to the next (no new slot's or new
   * incarnation's name: those derive from the resourceVersion, and a report that changed with every write
   * would write on every pass, beside the incumbent's conditional writes).
   */
  differences: string[];
  /** What the engine's preview of this plan on a new stack showed (the program and its providers run, dormant). */
  preview?: string;
}

/** The engine's preview of the plan, run on a stack of the observer's own (controller/observeOnly.ts). */
export type PreviewOutcome = { ok: true; create: number; update: number; delete: number } | { ok: false; error: string };

/** A change as the report names it: deletes and retries by their (existing) slot and BMI, new creates by node set. */
function stableChanges(changes: readonly PlannedChange[]): string[] {
  const creates = new Map<string, number>();
  const out: string[] = [];
  for (const c of changes) {
    if (c.op === "delete") out.push(`would delete ${c.bmi} (${c.kind}, worker ${c.slot})`);
    else if (c.kind === "retry") out.push(`would create a new incarnation for worker ${c.slot} (retry)`);
    else creates.set(c.nodeSet, (creates.get(c.nodeSet) ?? 0) + 1);
  }
  for (const [nodeSet, n] of [...creates].sort()) out.push(`would create ${n} new worker(s) in node set ${nodeSet}`);
  return out;
}

/** Where `plan` (made from the order as the incumbent left it) differs from what the incumbent recorded. */
export function observeReport(order: ClusterOrder, plan: Plan, preview?: PreviewOutcome): ObserveReport {
  const differences: string[] = [];
  if (preview && !preview.ok) differences.push(`the program's preview failed: ${preview.error}`);
  // A new stack adopts the recorded BMIs by id: its preview creates resources and changes or deletes none.
  if (preview?.ok && preview.update + preview.delete > 0) {
    differences.push(`the preview would update ${preview.update} and delete ${preview.delete} resource(s)`);
  }
  if (plan.paused && plan.paused.reason !== "Unmanaged" && plan.paused.reason !== "ApprovalRequired") {
    differences.push(`would change nothing: ${plan.paused.reason}`);
  }
  differences.push(...stableChanges(plan.changes ?? plan.approval?.changes ?? []));
  if (plan.approval) differences.push("the changes would wait for approval");
  const recorded = new Map((order.status?.workers ?? []).map((w) => [w.name, w]));
  const planned = new Map(plan.status.workers.map((w) => [w.name, w]));
  for (const [name, w] of recorded) {
    const next = planned.get(name);
    if (!next) differences.push(`worker ${name}: recorded ${w.phase}, would be dropped`);
    else if (next.phase !== w.phase) differences.push(`worker ${name}: recorded ${w.phase}, planned ${next.phase}`);
    else if ((next.bareMetalInstance?.id ?? "") !== (w.bareMetalInstance?.id ?? "")) {
      differences.push(`worker ${name}: recorded BMI ${w.bareMetalInstance?.id ?? "none"}, planned ${next.bareMetalInstance?.id ?? "none"}`);
    }
  }
  const s = order.status;
  for (const k of ["desiredWorkers", "currentWorkers", "readyWorkers"] as const) {
    if (s?.[k] !== undefined && s[k] !== plan.status[k]) differences.push(`${k}: recorded ${s[k]}, planned ${plan.status[k]}`);
  }
  return {
    agrees: differences.length === 0, differences,
    ...(preview?.ok ? { preview: `a new stack: ${preview.create} to create (recorded BMIs adopted by id), ${preview.update} to update, ${preview.delete} to delete` } : {}),
  };
}
