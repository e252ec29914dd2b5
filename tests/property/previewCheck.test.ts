// The preview check itself (tests/support/previewCheck.ts): it must see a BMI replace or an unexpected
// delete in every form a suite has a preview in, and let everything else through.
import type { EngineEvent } from "@pulumi/pulumi/automation";
import { assertNoBmiReplace, assertSummaryKeepsHosts, BMI_TYPE, bmiStepsFromText } from "../support/previewCheck";

const urn = (name: string, type = BMI_TYPE) =>
  `urn:pulumi:ns--co::baremetal-workers::baremetal-workers:index:BareMetalWorker$${type}::${name}`;

// The `--diff` display of the engine (same layout from `pulumi preview --diff` and Stack.preview({ diff: true })).
const display = (op: string, prefix: string, name: string) => `  pulumi:pulumi:Stack: (same)
    [urn=urn:pulumi:ns--co::baremetal-workers::pulumi:pulumi:Stack::baremetal-workers-ns--co]
        ${prefix}${BMI_TYPE}: (${op})
            [id=3f0c]
            [urn=${urn(name)}]
          ~ networkAttachment: {
          }
        ~ kubernetes:hypershift.openshift.io/v1beta1:NodePoolPatch: (update)
            [urn=${urn("co-compute", "kubernetes:hypershift.openshift.io/v1beta1:NodePoolPatch")}]
Resources:
    +-1 to replace
`;

const event = (op: string, name: string, type = BMI_TYPE): EngineEvent => ({
  sequence: 1, timestamp: 0,
  resourcePreEvent: { metadata: { op: op as never, urn: urn(name, type), type, provider: "" } },
});

describe("the preview check", () => {
  it("fails on a BMI replace in the --diff display and names the BMI", () => {
    expect(() => assertNoBmiReplace(display("replace", "+-", "co-a1b2"))).toThrow(/replace co-a1b2/);
    expect(() => assertNoBmiReplace({ stdout: display("create-replacement", "++", "co-a1b2") })).toThrow(/create-replacement co-a1b2/);
  });

  it("fails on a BMI delete unless the test expects that delete", () => {
    expect(() => assertNoBmiReplace(display("delete", "- ", "co-a1b2"))).toThrow(/delete co-a1b2/);
    expect(assertNoBmiReplace(display("delete", "- ", "co-a1b2"), { expectedDeletes: ["co-a1b2"] }).map((s) => s.op)).toEqual(["delete"]);
  });

  it("lets creates and updates of BMIs and changes of other resources through", () => {
    expect(bmiStepsFromText(display("create", "+ ", "co-new")).map((s) => [s.op, s.name])).toEqual([["create", "co-new"]]);
    expect(() => assertNoBmiReplace(display("update", "~ ", "co-a1b2"))).not.toThrow();
  });

  it("reads the engine's events when a suite has them: each of the three replacement steps fails", () => {
    for (const op of ["replace", "create-replacement", "delete-replaced"]) {
      expect(() => assertNoBmiReplace({ events: [event(op, "co-a1b2")] })).toThrow(new RegExp(`${op} co-a1b2`));
    }
    // A replace of another resource is not this check's business.
    expect(() => assertNoBmiReplace({ events: [event("replace", "co-ie", "kubernetes:agent-install.openshift.io/v1beta1:InfraEnv")] })).not.toThrow();
    expect(() => assertNoBmiReplace({ events: [event("delete", "co-old")] }, { expectedDeletes: ["co-old"] })).not.toThrow();
  });

  it("reads the steps of an event log the same way", () => {
    for (const op of ["replace", "create-replacement", "delete-replaced"]) {
      expect(() => assertNoBmiReplace({ steps: [{ op, urn: urn("co-a1b2") }] })).toThrow(new RegExp(`${op} co-a1b2`));
    }
    expect(() => assertNoBmiReplace({ steps: [{ op: "replace", urn: urn("co-ie", "kubernetes:agent-install.openshift.io/v1beta1:InfraEnv") }] })).not.toThrow();
    expect(() => assertNoBmiReplace({ steps: [{ op: "delete", urn: urn("co-old") }] }, { expectedDeletes: ["co-old"] })).not.toThrow();
    expect(() => assertNoBmiReplace({ steps: [{ op: "delete", urn: urn("co-old") }] })).toThrow(/delete co-old/);
  });

  it("on a bare change summary, fails on any replacement and on more deletes than expected", () => {
    expect(() => assertSummaryKeepsHosts({ same: 7 })).not.toThrow();
    expect(() => assertSummaryKeepsHosts({ same: 6, replace: 1 })).toThrow(/replace/);
    expect(() => assertSummaryKeepsHosts({ same: 6, delete: 1 })).toThrow(/delete/);
    expect(() => assertSummaryKeepsHosts({ same: 6, delete: 1 }, { expectedDeleteCount: 1 })).not.toThrow();
  });
});
