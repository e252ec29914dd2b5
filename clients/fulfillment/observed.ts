// The service's view of one BareMetalInstance in the planner's words; the one translation used by the
// observer (io/observe.ts) and by the BMI provider's read/create outputs.
import type { ObservedBmi, ObservedBmiSpec } from "../../planner/types";
import { instanceTypeOf } from "./proposals";
import type { BareMetalInstanceOut } from "./types";

// UNSPECIFIED is every BMI before the controller's first pass; STARTING/STOPPING/STOPPED are power
// states of a provisioned host (fulfillment-api.md §3.7), not failures.
const STATE_WORDS: Record<string, ObservedBmi["state"]> = {
  BARE_METAL_INSTANCE_STATE_UNSPECIFIED: "Pending",
  BARE_METAL_INSTANCE_STATE_PROVISIONING: "Provisioning",
  BARE_METAL_INSTANCE_STATE_STARTING: "Starting",
  BARE_METAL_INSTANCE_STATE_RUNNING: "Running",
  BARE_METAL_INSTANCE_STATE_STOPPING: "Stopping",
  BARE_METAL_INSTANCE_STATE_STOPPED: "Stopped",
  BARE_METAL_INSTANCE_STATE_FAILED: "Failed",
  BARE_METAL_INSTANCE_STATE_DELETING: "Deleting",
};

function stateWord(raw: unknown): ObservedBmi["state"] {
  if (raw === undefined || raw === null || raw === "" || raw === 0) return "Pending";
  return STATE_WORDS[String(raw)] ?? "Unknown";
}

/** The create-only inputs as stored; references come back with both id and name, the id is what we send. */
export function observedBmiSpec(bmi: BareMetalInstanceOut): ObservedBmiSpec | undefined {
  const spec = bmi.spec;
  if (!spec) return undefined;
  const att = spec.network_attachments?.[0];
  return {
    catalogItem: spec.catalog_item?.id || spec.catalog_item?.name || "",
    instanceType: instanceTypeOf(bmi) ?? "",
    ...(att ? {
      networkAttachment: {
        subnet: att.subnet?.id || att.subnet?.name || "",
        securityGroups: (att.security_groups ?? []).map((g) => g.id || g.name),
        interface: att.interface ?? "",
      },
    } : {}),
  };
}

export function observedBmi(bmi: BareMetalInstanceOut): ObservedBmi {
  const deleting = Boolean(bmi.metadata?.deletion_timestamp);
  const state = deleting ? "Deleting" : stateWord(bmi.status?.state);
  // A failed BMI carries its reason on a condition (e.g. Provisioned=False, reason HostSelectionFailed).
  const failed = state === "Failed" ? (bmi.status?.conditions ?? []).find((c) => c.reason) : undefined;
  const spec = observedBmiSpec(bmi);
  return {
    id: bmi.id,
    name: bmi.metadata?.name ?? "",
    state,
    deleting,
    macs: (bmi.status?.hardware?.nics ?? []).map((n) => n.mac.toLowerCase()).filter((m) => m !== ""),
    ...(failed?.reason ? { failureReason: failed.reason } : {}),
    ...(failed?.message ? { failureMessage: failed.message } : {}),
    labels: { ...(bmi.metadata?.labels ?? {}) },
    ...(spec ? { spec } : {}),
  };
}
