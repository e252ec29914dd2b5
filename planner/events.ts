// The design's events (OSAC-2135 §3.4) plus the warnings this project adds (AmbiguousAgentMatch,
// StaleIgnition, HostSafetyRefused). Each carries a key naming the fact, so the recorder emits a fact once, also across
// restarts. Messages never contain secrets (ignition content, pull secret).
import type { PlannedEvent } from "./types";

export const EV_INFRAENV_CREATED = "InfraEnvCreated";
export const EV_WORKER_CREATED = "WorkerCreated";
export const EV_AGENT_CORRELATED = "AgentCorrelated";
export const EV_WORKER_READY = "WorkerReady";
export const EV_AGENT_REGISTRATION_TIMEOUT = "AgentRegistrationTimeout";
export const EV_WORKER_FAILED = "WorkerFailed";
export const EV_WORKER_DELETED = "WorkerDeleted";
export const EV_IGNITION_SIZE_WARNING = "DiscoveryIgnitionSizeWarning";
export const EV_AMBIGUOUS_AGENT_MATCH = "AmbiguousAgentMatch";
export const EV_STALE_IGNITION = "StaleIgnition";
/** The final host-safety check refused a plan (invariant I1). */
export const EV_HOST_SAFETY_REFUSED = "HostSafetyRefused";
/** An approved saved preview is not what the update would do (planner/savedPreview.ts). */
export const EV_PLAN_DIVERGED = "PlanDiverged";

const WARNINGS: ReadonlySet<string> = new Set([
  EV_AGENT_REGISTRATION_TIMEOUT, EV_WORKER_FAILED, EV_IGNITION_SIZE_WARNING, EV_AMBIGUOUS_AGENT_MATCH, EV_STALE_IGNITION,
  EV_HOST_SAFETY_REFUSED, EV_PLAN_DIVERGED,
]);

/** An event about one incarnation of one slot: keyed by reason, slot and attempt. */
export function slotEvent(reason: string, slot: string, attempt: number, message: string, extra?: string): PlannedEvent {
  const key = [reason, slot, String(attempt), ...(extra ? [extra] : [])].join("/");
  return { type: WARNINGS.has(reason) ? "Warning" : "Normal", reason, message, key };
}

export function orderEvent(reason: string, keyParts: readonly string[], message: string): PlannedEvent {
  return { type: WARNINGS.has(reason) ? "Warning" : "Normal", reason, message, key: [reason, ...keyParts].join("/") };
}

/** Keeps the first event of each key, in order. */
export function dedupeEvents(events: readonly PlannedEvent[]): PlannedEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => (seen.has(e.key) ? false : (seen.add(e.key), true)));
}
