// Conditions with Kubernetes semantics: lastTransitionTime moves only when the status flips, and
// observedGeneration records which spec the condition speaks about. Only this planner's types are
// returned (status is applied with our own field manager, so other controllers' conditions survive).
import type { Condition } from "./types";

export const COND_WORKERS_FAILED = "WorkersFailed";
export const COND_INFRAENV_READY = "InfraEnvReady";
export const COND_RHCOS_IMAGE_NOT_FOUND = "RHCOSImageNotFound";
export const COND_FULFILLMENT_UNAVAILABLE = "FulfillmentServiceUnavailable";
export const COND_INVALID_NODE_REQUEST = "InvalidNodeRequest";
export const COND_CLUSTER_NOT_READY = "ClusterNotReady";
export const COND_AGENT_MATCH_AMBIGUOUS = "AgentMatchAmbiguous";
export const COND_NODEPOOL_UNMAPPED = "NodePoolUnmapped";
export const COND_MANAGED = "Managed";
/** The last update of the order's stack failed (reason, secret-free message, since when). */
export const COND_UPDATE_FAILED = "UpdateFailed";
/** The system pass-through BareMetalInstanceCatalogItem could not be resolved: no creates. */
export const COND_CATALOG_ITEM_NOT_FOUND = "CatalogItemNotFound";
/** A live BMI's create-only inputs differ from what a new incarnation would get (reported, never applied: I2). */
export const COND_WORKER_SPEC_DRIFT = "WorkerSpecDrift";
/** The planner's final host-safety check refused a plan that would have dropped a bound worker's BMI (I1). */
export const COND_HOST_SAFETY_REFUSED = "HostSafetyRefused";
/** The order follows a rollback pin: which update's counts, and which requests wait for `unpin`. */
export const COND_PINNED = "Pinned";
/** Planned changes of kinds the approval policy names wait for `baremetal-workers approve` (planner/changeControl.ts). */
export const COND_APPROVAL_REQUIRED = "ApprovalRequired";
/** An approved saved preview (`preview --save`) is not what the update would do: the order is held (planner/savedPreview.ts). */
export const COND_PLAN_DIVERGED = "PlanDiverged";

/** Every condition type this planner owns, in the order it writes them. */
export const PLANNER_CONDITION_TYPES: readonly string[] = [
  COND_WORKERS_FAILED, COND_INFRAENV_READY, COND_RHCOS_IMAGE_NOT_FOUND, COND_FULFILLMENT_UNAVAILABLE,
  COND_INVALID_NODE_REQUEST, COND_CLUSTER_NOT_READY, COND_AGENT_MATCH_AMBIGUOUS, COND_NODEPOOL_UNMAPPED, COND_MANAGED,
  COND_UPDATE_FAILED, COND_CATALOG_ITEM_NOT_FOUND, COND_WORKER_SPEC_DRIFT, COND_HOST_SAFETY_REFUSED, COND_PINNED,
  COND_APPROVAL_REQUIRED, COND_PLAN_DIVERGED,
];

export type ConditionInput = Omit<Condition, "lastTransitionTime" | "observedGeneration">;

export function cond(type: string, status: Condition["status"], reason: string, message: string): ConditionInput {
  return { type, status, reason, message };
}

/**
 * Merges `next` over the previous conditions of our types. A type absent from `next` keeps its
 * previous value (paused plans update only what they know).
 */
export function mergeConditions(
  previous: readonly Condition[] | undefined,
  next: readonly ConditionInput[],
  nowIso: string,
  generation: number | undefined,
): Condition[] {
  const prev = new Map((previous ?? []).map((c) => [c.type, c]));
  const byType = new Map(next.map((c) => [c.type, c]));
  const out: Condition[] = [];
  for (const type of PLANNER_CONDITION_TYPES) {
    const n = byType.get(type);
    const p = prev.get(type);
    if (!n) {
      if (p) out.push(p);
      continue;
    }
    const lastTransitionTime = p && p.status === n.status && p.lastTransitionTime ? p.lastTransitionTime : nowIso;
    out.push({ ...n, lastTransitionTime, ...(generation !== undefined ? { observedGeneration: generation } : {}) });
  }
  return out;
}
