// Whether an update did what a preview of it showed: the engine's steps of both, compared as sets of
// (URN, operation). Refresh and same steps count too: a preview that would read or keep a resource the
// update then deletes has not shown that update.
import type { EngineStep } from "./eventLog";

export interface StepDifference {
  /** Steps the preview showed that the update did not make. */
  onlyInPreview: EngineStep[];
  /** Steps the update made that the preview did not show. */
  onlyInUpdate: EngineStep[];
}

const key = (s: EngineStep) => `${s.op}\u0000${s.urn}`;

function distinct(steps: readonly EngineStep[]): Map<string, EngineStep> {
  return new Map(steps.map((s) => [key(s), s]));
}

export function stepDifference(preview: readonly EngineStep[], update: readonly EngineStep[]): StepDifference {
  const p = distinct(preview);
  const u = distinct(update);
  return {
    onlyInPreview: [...p].filter(([k]) => !u.has(k)).map(([, s]) => s),
    onlyInUpdate: [...u].filter(([k]) => !p.has(k)).map(([, s]) => s),
  };
}

export function sameSteps(d: StepDifference): boolean {
  return d.onlyInPreview.length === 0 && d.onlyInUpdate.length === 0;
}

/** Steps that change something (everything but same, refresh and read). */
export function changingSteps(steps: readonly EngineStep[]): EngineStep[] {
  return steps.filter((s) => s.op !== "same" && s.op !== "refresh" && s.op !== "read");
}

/** `op name` per step, the resource named by the last part of its URN. */
export function describeSteps(steps: readonly EngineStep[]): string {
  return steps.map((s) => `${s.op} ${s.urn.slice(s.urn.lastIndexOf("::") + 2)}`).join(", ");
}

export function describeStepDifference(d: StepDifference): string {
  const parts: string[] = [];
  if (d.onlyInPreview.length) parts.push(`previewed but not done: ${describeSteps(d.onlyInPreview)}`);
  if (d.onlyInUpdate.length) parts.push(`done but not previewed: ${describeSteps(d.onlyInUpdate)}`);
  return parts.join("; ") || "the same steps";
}
