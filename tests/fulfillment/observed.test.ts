// observedBmi: every BMI state the service defines has a meaning (issue 15, finding 9c), and the
// stored create-only inputs are carried so the planner can declare live values and report drift.
import { observedBmi } from "../../clients/fulfillment/observed";
import type { BareMetalInstanceOut } from "../../clients/fulfillment/types";

const bmi = (state: unknown, spec?: object): BareMetalInstanceOut => ({
  id: "id-1",
  metadata: { name: "demo-ab12", labels: { "osac.openshift.io/instance-type": "compute" }, annotations: {}, deletion_timestamp: null },
  spec,
  status: state === undefined ? null : { state, conditions: [] },
} as unknown as BareMetalInstanceOut);

describe("observedBmi", () => {
  it.each([
    ["BARE_METAL_INSTANCE_STATE_UNSPECIFIED", "Pending"],
    [undefined, "Pending"],
    ["BARE_METAL_INSTANCE_STATE_PROVISIONING", "Provisioning"],
    ["BARE_METAL_INSTANCE_STATE_STARTING", "Starting"],
    ["BARE_METAL_INSTANCE_STATE_RUNNING", "Running"],
    ["BARE_METAL_INSTANCE_STATE_STOPPING", "Stopping"],
    ["BARE_METAL_INSTANCE_STATE_STOPPED", "Stopped"],
    ["BARE_METAL_INSTANCE_STATE_FAILED", "Failed"],
    ["BARE_METAL_INSTANCE_STATE_DELETING", "Deleting"],
    ["BARE_METAL_INSTANCE_STATE_HIBERNATING", "Unknown"],
  ])("maps %s to %s", (state, word) => {
    expect(observedBmi(bmi(state)).state).toBe(word);
  });

  it("carries the stored catalog item id, instance type and first network attachment", () => {
    const o = observedBmi(bmi("BARE_METAL_INSTANCE_STATE_RUNNING", {
      catalog_item: { id: "ci-1", name: "system-bmi-passthrough" }, instance_type: "",
      network_attachments: [
        { subnet: { id: "sn-1", name: "tenant" }, security_groups: [{ id: "sg-1", name: "a" }, { id: "", name: "b" }], interface: "ens1f0", primary: true },
        { subnet: { id: "sn-2", name: "" }, security_groups: [], interface: "ens1f1", primary: false },
      ],
    }));
    // instance type from the label when the server dropped the proposal field
    expect(o.spec).toEqual({ catalogItem: "ci-1", instanceType: "compute",
      networkAttachment: { subnet: "sn-1", securityGroups: ["sg-1", "b"], interface: "ens1f0" } });
  });

  it("has no spec when the service returned none", () => {
    expect(observedBmi(bmi("BARE_METAL_INSTANCE_STATE_RUNNING")).spec).toBeUndefined();
  });
});
