// Observe-only mode's report (issue 17, point 4): where this controller's plan differs from the workers the
// incumbent recorded in status.workers[]; nothing when both agree.
import { observeReport } from "../../planner/observeReport";
import { bmiFor, bmRequest, boundAgent, entry, iso, MIN, makeOrder, planOf, type SnapOptions } from "./builders";

const ready = (name: string) => entry(name, { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) });
/** Two Ready workers, as the incumbent recorded them, with the counts it wrote. */
function recorded(o: SnapOptions = {}): SnapOptions {
  return {
    nodeRequests: [bmRequest("compute", 2)], workers: ["r1", "r2"].map(ready), bmis: ["r1", "r2"].map((x) => bmiFor(x)),
    agents: ["r1", "r2"].map((x) => boundAgent(x, x, "added-to-existing-cluster")),
    orderPatch: (order) => Object.assign(order.status!, { desiredWorkers: 2, currentWorkers: 2, readyWorkers: 2 }), ...o,
  };
}
const report = (o: SnapOptions) => {
  return observeReport(makeOrder(o), planOf(o));
};

describe("the observe-only report", () => {
  it("agrees when the plan would change nothing the incumbent recorded", () => {
    expect(report(recorded())).toMatchObject({ agrees: true, differences: [] });
  });

  it("names what it would do that the incumbent has not: a scale-up's create, a new slot, the counts", () => {
    const r = report(recorded({ nodeRequests: [bmRequest("compute", 3)] }));
    expect(r.agrees).toBe(false);
    expect(r.differences).toEqual(["would create 1 new worker(s) in node set compute",
      "desiredWorkers: recorded 2, planned 3", "currentWorkers: recorded 2, planned 3"]);
  });

  it("names a recorded worker it would move to another phase", () => {
    const r = report(recorded({ agents: [boundAgent("r1", "r1", "added-to-existing-cluster"), boundAgent("r2", "r2", "unbinding-pending-user-action")] }));
    expect(r.differences).toContain("worker r2: recorded Ready, planned Unbinding");
  });

  it("carries the engine's preview: a new stack that only adopts agrees; a failed preview or one that would change or delete does not", () => {
    const o = recorded();
    const ok = observeReport(makeOrder(o), planOf(o), { ok: true, create: 7, update: 0, delete: 0 });
    expect(ok).toMatchObject({ agrees: true, preview: "a new stack: 7 to create (recorded BMIs adopted by id), 0 to update, 0 to delete" });
    expect(observeReport(makeOrder(o), planOf(o), { ok: false, error: "provider host: connection refused" }).differences)
      .toEqual(["the program's preview failed: provider host: connection refused"]);
    expect(observeReport(makeOrder(o), planOf(o), { ok: true, create: 5, update: 1, delete: 1 }).differences)
      .toEqual(["the preview would update 1 and delete 1 resource(s)"]);
  });

  it("survives a version of skew either way: a status written without the optional fields, or with annotations of a newer release, agrees", () => {
    // An older writer: no readySince, attempt count, instance type or create state on its entries.
    const older = ["r1", "r2"].map((name) => {
      const { readySince: _r, attemptCount: _a, instanceType: _i, bmiCreateState: _b, ...rest } = ready(name);
      void _r; void _a; void _i; void _b;
      return rest;
    });
    expect(report(recorded({ workers: older }))).toMatchObject({ agrees: true, differences: [] });
    // A newer release's records on the order (its own annotations) change nothing of the comparison.
    const newer = recorded({ annotations: { "osac.openshift.io/workers-applied": "another-digest.x", "osac.openshift.io/some-future-record": "{}" } });
    expect(report(newer)).toMatchObject({ agrees: true, differences: [] });
  });
});
