// The engine's event log is read instead of asking the CLI for the summary and outputs after each update;
// its steps are what a preview is held to (stack/stepParity.ts).
import { changeCounts, summarizeEventLog } from "../../stack/eventLog";
import { changingSteps, describeStepDifference, sameSteps, stepDifference } from "../../stack/stepParity";

const line = (o: unknown) => JSON.stringify(o);

describe("summarizeEventLog", () => {
  it("takes the change summary and the root stack's outputs, secrets masked", () => {
    const text = [
      line({ sequence: 1, preludeEvent: { config: {} } }),
      line({ resOutputsEvent: { metadata: { type: "bmw:index:BareMetalWorker", new: { outputs: { other: 1 } } } } }),
      line({ resOutputsEvent: { metadata: { type: "pulumi:pulumi:Stack", new: { outputs: { workers: ["w1"], token: "[secret]" } } } } }),
      line({ summaryEvent: { resourceChanges: { create: 2, same: 3 } } }),
      '{"summaryEvent": {"resourceChan', // cut short by a kill
      "",
    ].join("\n");
    const r = summarizeEventLog(text);
    expect(r.changes).toEqual({ create: 2, same: 3 });
    expect(r.outputs).toEqual({ workers: ["w1"], token: "[secret]" });
    expect(changeCounts(r.changes)).toEqual({ create: 2, update: 0, delete: 0, replace: 0, same: 3 });
  });

  it("ignores events of an unexpected shape instead of failing the update that wrote them", () => {
    const text = [
      "null", "[1,2]", "42",
      line({ summaryEvent: { resourceChanges: { create: "2", delete: 1 } } }),
      line({ resOutputsEvent: { metadata: { type: "pulumi:pulumi:Stack", new: { outputs: "not an object" } } } }),
      line({ resOutputsEvent: "x" }),
    ].join("\n");
    const r = summarizeEventLog(text);
    expect(r.changes).toEqual({ delete: 1 });
    expect(r.outputs).toEqual({});
  });

  it("reports no summary when the log has none (the engine stopped before it)", () => {
    expect(summarizeEventLog("").changes).toBeUndefined();
    expect(changeCounts(undefined)).toEqual({ create: 0, update: 0, delete: 0, replace: 0, same: 0 });
  });
});

const urn = (name: string) => `urn:pulumi:ns--co::baremetal-workers::baremetal-workers:index:BareMetalWorker$pulumi-nodejs:dynamic/baremetal-workers:BareMetalInstance::${name}`;
const pre = (op: string, name: string) => line({ resourcePreEvent: { metadata: { op, urn: urn(name), type: "x" } } });

describe("the steps of an event log", () => {
  it("lists one step per resourcePreEvent, in order, and skips malformed ones", () => {
    const text = [pre("refresh", "a"), pre("same", "a"), pre("create", "b"), line({ resourcePreEvent: { metadata: { op: 3 } } })].join("\n");
    expect(summarizeEventLog(text).steps.map((s) => `${s.op} ${s.urn.slice(-1)}`)).toEqual(["refresh a", "same a", "create b"]);
  });

  it("compares a preview with an update as sets of (URN, operation), naming what differs", () => {
    const preview = summarizeEventLog([pre("refresh", "a"), pre("same", "a"), pre("create", "b")].join("\n")).steps;
    const sameUpdate = summarizeEventLog([pre("refresh", "a"), pre("create", "b"), pre("same", "a")].join("\n")).steps;
    expect(sameSteps(stepDifference(preview, sameUpdate))).toBe(true);
    const other = summarizeEventLog([pre("refresh", "a"), pre("delete", "a"), pre("create", "b")].join("\n")).steps;
    const d = stepDifference(preview, other);
    expect(sameSteps(d)).toBe(false);
    expect(describeStepDifference(d)).toBe("previewed but not done: same a; done but not previewed: delete a");
    expect(changingSteps(other).map((s) => s.op)).toEqual(["delete", "create"]);
  });
});
