// A definitive Create rejection travels from the BMI provider (which fails the resource) to the
// reconciler (which reads the failed update's error text) as one marked line. The planner then fails
// that worker with a backoff instead of the loop retrying the same Create every pass.
import type { CreateRejection } from "../planner/types";

const MARK = "bmw:create-rejected";
const LINE = new RegExp(`\\[${MARK} name=([a-z0-9-]+) code=([A-Z_]+)\\] ([^\\n]*)`, "g");

/** The error message the provider throws; the message must already be free of secrets. */
export function formatCreateRejection(r: CreateRejection): string {
  return `[${MARK} name=${r.bmiName} code=${r.code}] ${r.message.replace(/\s*\n\s*/g, " ")}`;
}

/** Every rejection named in an engine's error output (the last one per BMI name wins). */
export function parseCreateRejections(text: string): CreateRejection[] {
  const byName = new Map<string, CreateRejection>();
  for (const m of text.matchAll(LINE)) byName.set(m[1], { bmiName: m[1], code: m[2], message: m[3].trim() });
  return [...byName.values()];
}
