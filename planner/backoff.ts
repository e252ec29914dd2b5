// Retry backoff (OSAC-2135 §4.1). Rule (the design's worked example conflicts with its table; see
// docs/decisions.md): the delay after the failure of attempt n is steps[n-1], and the class cap once
// the steps are used up. Retries never stop.
import type { PlannerConfig } from "./types";

export type FailureClass = "transient" | "resource" | "agentTimeout";

export const REASON_AGENT_REGISTRATION_TIMEOUT = "AgentRegistrationTimeout";
export const REASON_BMI_PROVISIONING_FAILED = "BMIProvisioningFailed";
export const REASON_AGENT_BINDING_FAILED = "AgentBindingFailed";
export const REASON_AGENT_UNBINDING_TIMEOUT = "AgentUnbindingTimeout";
export const REASON_BMI_DELETION_TIMEOUT = "BMIDeletionTimeout";
/** The service refused the Create for good (INVALID_ARGUMENT, FAILED_PRECONDITION, a name held by another owner). */
export const REASON_BMI_CREATE_REJECTED = "BMICreateRejected";

/** BMI failure reasons that mean "no capacity" (OSAC-1201 HostSelectionFailed and the Go classifier's two). */
export const RESOURCE_FAILURE_REASONS: ReadonlySet<string> = new Set(["HostSelectionFailed", "NoHostAvailable", "ResourceExhausted"]);

const CLASSES: ReadonlySet<string> = new Set(["transient", "resource", "agentTimeout"]);

/** The class of a failure reason: a worker failure reason or a BMI failureReason. */
export function classifyFailure(reason: string | undefined): FailureClass {
  if (reason === REASON_AGENT_REGISTRATION_TIMEOUT) return "agentTimeout";
  if (reason !== undefined && RESOURCE_FAILURE_REASONS.has(reason)) return "resource";
  return "transient";
}

function isFailureClass(value: string): value is FailureClass {
  return CLASSES.has(value);
}

/**
 * Delay before the replacement of a slot whose attempt `attemptCount` (1 = first) failed.
 * `reason` is a FailureClass or a failure reason to classify.
 */
export function backoffFor(reason: FailureClass | string, attemptCount: number, config: PlannerConfig): number {
  const cls = isFailureClass(reason) ? reason : classifyFailure(reason);
  const [steps, cap] =
    cls === "transient" ? [config.transientBackoffMs, config.transientCapMs]
      : cls === "resource" ? [config.resourceBackoffMs, config.resourceCapMs]
        : [config.agentTimeoutBackoffMs, config.agentTimeoutCapMs];
  const n = Math.max(1, Math.floor(attemptCount));
  return n <= steps.length ? steps[n - 1] : cap;
}
