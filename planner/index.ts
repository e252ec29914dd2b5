// The planner's public surface: a pure function from a Snapshot to a Plan, and its helpers.
export { plan, MIN_REQUEUE_MS, UNKNOWN_BMIS_MESSAGE } from "./plan";
export { defaultPlannerConfig, plannerConfigFromEnv, PLANNER_ENV_LISTS, PLANNER_ENV_NUMBERS, USER_DATA_HARD_LIMIT_BYTES } from "./config";
export { isUnmanaged, isDeleting } from "./management";
export { countWorkers, desiredWorkers, orderPhase, isBareMetalRequest, type WorkerCounts } from "./status";
export {
  backoffFor, classifyFailure, RESOURCE_FAILURE_REASONS, REASON_AGENT_BINDING_FAILED, REASON_AGENT_REGISTRATION_TIMEOUT,
  REASON_AGENT_UNBINDING_TIMEOUT, REASON_BMI_CREATE_REJECTED, REASON_BMI_DELETION_TIMEOUT, REASON_BMI_PROVISIONING_FAILED, type FailureClass,
} from "./backoff";
export { fingerprint, canonicalJson, sha256, withCreatesDone } from "./fingerprint";
export { allowedTransition, ACTIVE_PHASES, BOUND_PHASES, PHASES, IllegalTransitionError, type TransitionCause } from "./phases";
export {
  correlate, correlationCandidates, isOurAgent, labelledAgent, normalizeMac, AGENT_INSTALLED_STATE,
  type CorrelationRequest, type CorrelationResult,
} from "./correlation";
export { evaluateGates, type Gates, type NodeSetSpec, type CreateInputs } from "./gates";
export { mapNodePools } from "./nodepools";
export { desiredInfraEnv, desiredBmi, desiredBinding } from "./desired";
export * from "./conditions";
export * from "./events";
