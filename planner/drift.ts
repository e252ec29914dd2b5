// Create-only inputs of live BMIs that differ from what a new incarnation would get (invariant I2).
// An existing BMI is declared with its own inputs (desired.ts), so such a difference never reaches the
// stack; it is reported here (plan.drift and the WorkerSpecDrift condition) and shapes new incarnations only.
import { COND_WORKER_SPEC_DRIFT, cond, type ConditionInput } from "./conditions";
import { fabricInterfaceFor, observedBmiOf } from "./desired";
import type { Gates } from "./gates";
import { ACTIVE_PHASES } from "./phases";
import type { Snapshot, WorkerDrift, WorkerStatus } from "./types";

function sortedList(values: readonly string[]): string {
  return [...values].sort().join(",");
}

/** Per active worker with an observed spec: each create-only field whose live value differs from the request. */
export function specDrift(snapshot: Snapshot, gates: Gates, workers: readonly WorkerStatus[]): WorkerDrift[] {
  const network = snapshot.order.spec.networkAttachment ?? snapshot.order.spec.networkAttachments?.[0];
  const out: WorkerDrift[] = [];
  for (const e of workers) {
    if (!ACTIVE_PHASES.has(e.phase)) continue;
    const bmi = observedBmiOf(snapshot, e);
    const live = bmi?.spec;
    if (!bmi || !live) continue;
    const instanceType = gates.nodeSets.get(e.nodeSet)?.instanceType || e.instanceType || "";
    const fields: [string, string, string][] = [
      ["catalogItem", live.catalogItem, snapshot.catalogItem],
      ["instanceType", live.instanceType, instanceType],
    ];
    if (live.networkAttachment) {
      fields.push(
        ["networkAttachment.subnet", live.networkAttachment.subnet, network?.subnetRef ?? ""],
        ["networkAttachment.securityGroups", sortedList(live.networkAttachment.securityGroups), sortedList(network?.securityGroupRefs ?? [])],
        ["networkAttachment.interface", live.networkAttachment.interface, fabricInterfaceFor(snapshot, e.nodeSet, instanceType)],
      );
    }
    for (const [field, liveValue, requested] of fields) {
      // An unknown request (unresolved catalog item, unknown instance type) is not a difference.
      const unknown = requested === "" && field !== "networkAttachment.securityGroups";
      if (!unknown && liveValue !== requested) out.push({ slot: e.name, bmiName: bmi.name, field, live: liveValue, requested });
    }
  }
  return out.sort((a, b) => a.slot.localeCompare(b.slot) || a.field.localeCompare(b.field));
}

export function driftCondition(drift: readonly WorkerDrift[]): ConditionInput {
  if (drift.length === 0) {
    return cond(COND_WORKER_SPEC_DRIFT, "False", "NoDrift", "every live BareMetalInstance matches the requested create-only inputs");
  }
  const details = drift.map((d) => `worker ${d.slot} (${d.bmiName}) ${d.field}: live "${d.live}", requested "${d.requested}"`);
  return cond(COND_WORKER_SPEC_DRIFT, "True", "CreateOnlyFieldsDiffer",
    `${details.join("; ")}; live BareMetalInstances are kept as they are, new incarnations get the requested values`);
}
