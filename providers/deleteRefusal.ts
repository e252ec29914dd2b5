// The BMI provider refuses a Delete that the planner did not decide (invariant I1). The refusal fails
// the update with one marked line, which the reconciler reads back to raise a condition and an event
// naming the slot.
export interface DeleteRefusal {
  slot: string;
  bmiName: string;
  /** Why the Delete was refused (phase of the slot, missing ledger entry, unreadable order). */
  reason: string;
}

const MARK = "bmw:delete-refused";
const LINE = new RegExp(`\\[${MARK} slot=([^ \\]]+) bmi=([a-z0-9-]+)\\] ([^\\n]*)`, "g");

export function formatDeleteRefusal(r: DeleteRefusal): string {
  return `[${MARK} slot=${r.slot} bmi=${r.bmiName}] ${r.reason.replace(/\s*\n\s*/g, " ")}`;
}

/** Every refusal named in an engine's error output (one per BMI name). */
export function parseDeleteRefusals(text: string): DeleteRefusal[] {
  const byName = new Map<string, DeleteRefusal>();
  for (const m of text.matchAll(LINE)) byName.set(m[2], { slot: m[1], bmiName: m[2], reason: m[3].trim() });
  return [...byName.values()];
}
