// The UpdateFailed condition: the outcome of the last update of the order's stack as the reconciler
// knows it. A failure stays visible on the order (reason, message, and through lastTransitionTime since
// when) until an update succeeds; an unknown outcome (a fresh process) leaves the previous condition.
import { COND_UPDATE_FAILED, cond, type ConditionInput } from "./conditions";
import { redact } from "./redact";
import type { Snapshot } from "./types";

/** metav1.Condition's reason pattern; anything else would make the status write fail. */
const REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const MAX_MESSAGE = 2048;

/** The reconciler passes a secret-free message; redacting again guards against a credential an engine error quotes. */
function boundedMessage(text: string): string {
  const clean = redact(text).trim();
  return clean.length <= MAX_MESSAGE ? clean : `${clean.slice(0, MAX_MESSAGE - 1)}…`;
}

/** The condition to write, or undefined to keep the previous one. */
export function updateFailedCondition(snapshot: Snapshot): ConditionInput | undefined {
  const last = snapshot.lastUpdate;
  if (!last) return undefined;
  if (last.ok) return cond(COND_UPDATE_FAILED, "False", "UpdateSucceeded", "the last update of this order's stack succeeded");
  const reason = REASON_PATTERN.test(last.reason) && last.reason.length <= 128 ? last.reason : "UpdateFailed";
  return cond(COND_UPDATE_FAILED, "True", reason,
    `the update of this order's stack failed and is retried: ${boundedMessage(last.message) || "no detail was reported"}`);
}
