// A definitive Create rejection travels from the BMI provider (which fails the resource) to the
// reconciler (which reads the failed update's error text) as one marked line. The planner then fails
// that worker with a backoff instead of the loop retrying the same Create every pass.
import type { CreateRejection } from "../planner/types";
import { markedLine } from "./markedLine";

const LINE = markedLine("bmw:create-rejected", [["name", "[a-z0-9-]+"], ["code", "[A-Z_]+"]], "name");

/** The error message the provider throws; the message must already be free of secrets. */
export function formatCreateRejection(r: CreateRejection): string {
  return LINE.format({ name: r.bmiName, code: r.code }, r.message);
}

/** Every rejection named in an engine's error output (the last one per BMI name wins). */
export function parseCreateRejections(text: string): CreateRejection[] {
  return LINE.parse(text).map(({ fields, message }) => ({ bmiName: fields.name, code: fields.code, message }));
}
