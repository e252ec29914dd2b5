// A stable hash of what `up` would declare and of which declared objects were missing when it was
// planned. The loop skips `pulumi up` when it is unchanged. Secret content (ignition) enters only as its
// sha256; an adopted BMI contributes its identity only, because its create-only inputs are ignored for an
// existing BMI. An absence enters only as a flag, so a plan whose declarations all exist hashes as it
// would without presence.
import * as crypto from "node:crypto";
import type { DesiredWorker, Plan, PlanPresence } from "./types";

export function sha256(text: string): string {
  return crypto.createHash("sha256").update(text).digest("hex");
}

/** JSON with object keys sorted at every level, so equal values hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function workerShape(w: DesiredWorker, presence: PlanPresence | undefined): unknown {
  const { userData, ...inputs } = w.bmi;
  const bmi = w.bmi.adoptId ? { name: w.bmi.name, adoptId: w.bmi.adoptId } : { ...inputs, userDataSha256: sha256(userData) };
  return {
    slot: w.slot, nodeSet: w.nodeSet, bmi, binding: w.binding, requiresFence: w.requiresFence, retainBinding: w.retainBinding,
    bmiAbsent: presence?.bmiAbsent.includes(w.slot) || undefined,
    agentAbsent: (w.binding && presence?.agentAbsent.includes(w.slot)) || undefined,
  };
}

export function fingerprint(plan: Plan): string {
  const presence = plan.presence;
  const workers = [...plan.workers].sort((a, b) => a.slot.localeCompare(b.slot)).map((w) => workerShape(w, presence));
  return sha256(canonicalJson({
    paused: plan.paused?.reason, infraEnv: plan.infraEnv, nodePoolReplicas: plan.nodePoolReplicas, workers,
    infraEnvAbsent: (plan.infraEnv && presence && !presence.infraEnv) || undefined,
  }));
}

/**
 * `before` as it stands once the BMIs it creates exist: each worker whose BMI `before` would create and
 * `after` declares as adopted under the same slot and BMI name takes `after`'s form, and absences are
 * `after`'s. An update that changed nothing but making those BMIs leaves a plan that hashes as this does:
 * the next `up` would only adopt them, which changes nothing.
 */
export function withCreatesDone(before: Plan, after: Plan): Plan {
  const adopted = new Map(after.workers.filter((w) => w.bmi.adoptId).map((w) => [w.slot, w]));
  const workers = before.workers.map((w) => {
    const done = adopted.get(w.slot);
    return !w.bmi.adoptId && done && done.bmi.name === w.bmi.name ? { ...w, bmi: done.bmi, requiresFence: done.requiresFence } : w;
  });
  return { ...before, workers, ...(after.presence ? { presence: after.presence } : {}) };
}
