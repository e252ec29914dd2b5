// The service's view of one BareMetalInstance in the planner's words; the one translation used by the
// observer (automation/observe.ts) and by the BMI provider's read/create outputs.
import type { ObservedBmi } from "../../planner/types";
import type { BareMetalInstanceOut } from "./types";

const STATE_WORDS: Record<string, ObservedBmi["state"]> = {
  BARE_METAL_INSTANCE_STATE_PROVISIONING: "Provisioning",
  BARE_METAL_INSTANCE_STATE_STARTING: "Provisioning",
  BARE_METAL_INSTANCE_STATE_RUNNING: "Running",
  BARE_METAL_INSTANCE_STATE_FAILED: "Failed",
  BARE_METAL_INSTANCE_STATE_DELETING: "Deleting",
};

export function observedBmi(bmi: BareMetalInstanceOut): ObservedBmi {
  const deleting = Boolean(bmi.metadata?.deletion_timestamp);
  const state = deleting ? "Deleting" : (STATE_WORDS[String(bmi.status?.state ?? "")] ?? "Unknown");
  // A failed BMI carries its reason on a condition (e.g. Provisioned=False, reason HostSelectionFailed).
  const failed = state === "Failed" ? (bmi.status?.conditions ?? []).find((c) => c.reason) : undefined;
  return {
    id: bmi.id,
    name: bmi.metadata?.name ?? "",
    state,
    deleting,
    macs: (bmi.status?.hardware?.nics ?? []).map((n) => n.mac.toLowerCase()).filter((m) => m !== ""),
    ...(failed?.reason ? { failureReason: failed.reason } : {}),
    ...(failed?.message ? { failureMessage: failed.message } : {}),
    labels: { ...(bmi.metadata?.labels ?? {}) },
  };
}
