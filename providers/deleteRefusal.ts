// The BMI provider refuses a Delete that the planner did not decide (invariant I1). The refusal fails
// the update with one marked line, which the reconciler reads back to raise a condition and an event
// naming the slot.
import { markedLine } from "./markedLine";

export interface DeleteRefusal {
  slot: string;
  bmiName: string;
  /** Why the Delete was refused (phase of the slot, missing ledger entry, unreadable order). */
  reason: string;
}

const LINE = markedLine("bmw:delete-refused", [["slot", "[^ \\]]+"], ["bmi", "[a-z0-9-]+"]], "bmi");

export function formatDeleteRefusal(r: DeleteRefusal): string {
  return LINE.format({ slot: r.slot, bmi: r.bmiName }, r.reason);
}

/** Every refusal named in an engine's error output (one per BMI name). */
export function parseDeleteRefusals(text: string): DeleteRefusal[] {
  return LINE.parse(text).map(({ fields, message }) => ({ slot: fields.slot, bmiName: fields.bmi, reason: message }));
}
