// What a failed stack update means for the ClusterOrder: the reason and a secret-free message for the
// UpdateFailed condition and its Warning event, read from the engine's error text. The BMI provider
// marks the failures that need a decision (providers/createRejection.ts, providers/deleteRefusal.ts);
// everything else is an engine error, reported by its most telling line.
import { parseCreateRejections } from "../providers/createRejection";
import { parseDeleteRefusals, type DeleteRefusal } from "../providers/deleteRefusal";
import { redact } from "../planner/redact";
import type { CreateRejection } from "../planner/types";

export const REASON_DELETE_REFUSED = "DeleteRefused";
export const REASON_CREATE_REJECTED = "CreateRejected";
export const REASON_STACK_LOCKED = "StackLocked";
export const REASON_ENGINE_ERROR = "EngineError";

/** Longest message kept: the condition and event say what failed, the pod log keeps the rest. */
export const MAX_FAILURE_MESSAGE = 512;

export interface UpdateFailure {
  reason: string;
  /** Secret-free, one line: which update failed and why. */
  message: string;
  /** Why, without which update (the same cause repeated is the same detail). */
  detail: string;
  createRejections: CreateRejection[];
  deleteRefusals: DeleteRefusal[];
}

/** Everything an error carries as text: its message and, for a failed pulumi process, its whole output. */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cr = (err as { commandResult?: { stdout?: string; stderr?: string } }).commandResult;
  return [err.message, cr?.stdout ?? "", cr?.stderr ?? ""].join("\n");
}

const GENERIC = /^(error:\s*)?(update failed|preview failed|destroy failed|an error occurred)\b|^pulumi \w+ failed with exit code/i;

/** The line that says what went wrong: the first specific `error:` line of the output, else the first line. */
export function relevantLine(text: string): string {
  const lines = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "" && !/^(stdout|stderr):\s*$/i.test(l));
  const errors = lines.map((l) => l.replace(/^(stdout|stderr):\s*/i, ""))
    .filter((l) => /\berror\b/i.test(l) && !GENERIC.test(l) && !/^Diagnostics:/i.test(l));
  const pick = errors[0] ?? lines.find((l) => !GENERIC.test(l)) ?? lines[0] ?? "the update failed";
  return pick.replace(/^error:\s*/i, "");
}

function clip(s: string): string {
  const flat = s.replace(/\s+/g, " ").trim();
  return flat.length > MAX_FAILURE_MESSAGE ? `${flat.slice(0, MAX_FAILURE_MESSAGE - 1)}…` : flat;
}

/** Classifies a failed update (`which`, e.g. "update of stack ns--name started <time>") and builds its message. */
export function describeUpdateFailure(err: unknown, which: string): UpdateFailure {
  const text = errorText(err);
  const deleteRefusals = parseDeleteRefusals(text);
  const createRejections = parseCreateRejections(text).map((r) => ({ ...r, message: clip(redact(r.message)) }));
  let reason: string;
  let detail: string;
  if (deleteRefusals.length > 0) {
    reason = REASON_DELETE_REFUSED;
    detail = deleteRefusals.map((r) => `the BMI provider refused to delete BareMetalInstance ${r.bmiName} of worker ${r.slot}: ${r.reason}`).join("; ");
  } else if (createRejections.length > 0) {
    reason = REASON_CREATE_REJECTED;
    detail = createRejections.map((r) => `the fulfillment-service rejected the Create of BareMetalInstance ${r.bmiName} (${r.code}): ${r.message}`)
      .join("; ");
  } else if (/currently locked by|Another update is currently in progress/i.test(text)) {
    reason = REASON_STACK_LOCKED;
    detail = "another operation holds the stack's lock";
  } else {
    reason = REASON_ENGINE_ERROR;
    detail = relevantLine(text);
  }
  const safe = clip(redact(detail));
  return { reason, message: clip(`${which} failed: ${safe}`), detail: safe, createRejections, deleteRefusals };
}
