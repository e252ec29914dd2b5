// Giving a field up to its owner: the paths of the apiserver's FieldManagerConflict causes are removed
// from what we apply, and nothing else.
import { parseFieldPath, withoutFields } from "../../clients/kube/fieldConflicts";

describe("withoutFields", () => {
  const status = {
    desiredWorkers: 2,
    conditions: [{ type: "WorkersFailed", status: "False", reason: "NoFailures" }, { type: "InfraEnvReady", status: "True", reason: "Ok" }],
    workers: [{ name: "a.b", phase: "Ready", bareMetalInstance: { name: "x", id: "1" } }],
  };

  it("removes a scalar, a field of a list-map entry keyed by type or name, and a nested field", () => {
    const out = withoutFields({ status }, [
      ".status.desiredWorkers", '.status.conditions[type="WorkersFailed"].status', '.status.workers[name="a.b"].bareMetalInstance.id',
    ])!;
    expect(out.status).toEqual({
      conditions: [{ type: "WorkersFailed", reason: "NoFailures" }, { type: "InfraEnvReady", status: "True", reason: "Ok" }],
      workers: [{ name: "a.b", phase: "Ready", bareMetalInstance: { name: "x" } }],
    });
    expect(status.desiredWorkers).toBe(2); // the input is not touched
  });

  it("removes a whole entry when the conflict names the entry", () => {
    expect(withoutFields({ status }, ['.status.conditions[type="InfraEnvReady"]'])!.status.conditions.map((c) => c.type)).toEqual(["WorkersFailed"]);
  });

  it("refuses a path it cannot follow (the conflict then stands)", () => {
    expect(parseFieldPath(".status.items[0]")).toBeUndefined();
    expect(withoutFields({ status }, [".status.workers[=\"a\"]"])).toBeUndefined();
  });
});
