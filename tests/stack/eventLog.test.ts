// The engine's event log is read instead of asking the CLI for the summary and outputs after each update.
import { changeCounts, summarizeEventLog } from "../../stack/eventLog";

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
