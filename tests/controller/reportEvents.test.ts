// What a report emits and measures (issue 15, findings 8 and 15): events describe what happened (a
// WorkerCreated names a BMI that exists, never a slot of an unfenced plan), the status never carries the
// order's phase, and the design's two duration histograms are fed from the transitions a report records.
import { observeDurations, type OrderMemory, type ReconcileDeps } from "../../controller/reconcile";
import { reportedEvents, reportedWorkers, statusBody } from "../../io/status";
import { plan } from "../../planner";
import type { WorkerStatus } from "../../planner/types";
import { bmiFor, entry, iso, MIN, snap, T0 } from "../planner/builders";

describe("events of a report", () => {
  it("a plan's new slots get no WorkerCreated: its names are not the ones the program fences", () => {
    const p = plan(snap());
    expect(p.fence).toHaveLength(2);
    expect(p.events.filter((e) => e.reason === "WorkerCreated")).toHaveLength(2); // the planner's intention
    const order = snap().order;
    expect(reportedEvents(order, p).filter((e) => e.reason === "WorkerCreated")).toEqual([]);
  });

  it("WorkerCreated follows the status: once the fenced incarnation's BMI is seen, naming that BMI", () => {
    const fenced = entry("w1", { bareMetalInstance: { name: "co1-b-w1" } }); // Attempted, no id yet
    const s = snap({ workers: [fenced], bmis: [bmiFor("w1", { state: "Provisioning", macs: [] })] });
    const p = plan(s);
    const written = reportedWorkers(s.order, p);
    expect(written.find((w) => w.name === "w1")?.bareMetalInstance?.id).toBe("id-w1");
    const created = reportedEvents(s.order, p, written).filter((e) => e.reason === "WorkerCreated");
    expect(created).toHaveLength(1);
    expect(created[0].message).toContain("co1-b-w1");
    expect(created[0].key).toBe("WorkerCreated/w1/1");
    // Once the id is recorded, the next report has nothing to announce.
    const next = snap({ workers: written, bmis: [bmiFor("w1", { state: "Provisioning", macs: [] })] });
    expect(reportedEvents(next.order, plan(next)).filter((e) => e.reason === "WorkerCreated")).toEqual([]);
  });

  it("the status written never carries phase (osac-operator's overview field)", () => {
    const p = plan(snap());
    expect(p.status.phase).toBeDefined();
    expect(Object.keys(statusBody(p)).sort()).toEqual(["conditions", "currentWorkers", "desiredWorkers", "readyWorkers", "workers"]);
  });
});

describe("duration metrics", () => {
  function recorder() {
    const seen: { metric: string; tenant: string; seconds: number }[] = [];
    const deps = {
      durations: {
        observeProvisioning: (tenant: string, seconds: number) => seen.push({ metric: "provisioning", tenant, seconds }),
        observeAgentCorrelation: (tenant: string, seconds: number) => seen.push({ metric: "correlation", tenant, seconds }),
      },
    } as unknown as ReconcileDeps;
    return { seen, deps };
  }
  const orderWith = (workers: WorkerStatus[]) => snap({ workers, annotations: { "osac.openshift.io/tenant": "acme" } }).order;

  it("observes Agent correlation from WaitingForAgent to the match, and provisioning from the attempt's start to Ready", () => {
    const { seen, deps } = recorder();
    const mem: OrderMemory = { consecutiveFulfillmentErrors: 0 };
    const provisioning = entry("w1", { attemptStartedAt: iso(-10 * MIN) });
    const waiting = { ...provisioning, phase: "WaitingForAgent" as const };
    const binding = { ...provisioning, phase: "Binding" as const };
    const ready = { ...provisioning, phase: "Ready" as const, readySince: iso(5 * MIN) };

    observeDurations(deps, mem, orderWith([provisioning]), [waiting], T0.getTime());
    observeDurations(deps, mem, orderWith([waiting]), [binding], T0.getTime() + 90_000);
    observeDurations(deps, mem, orderWith([binding]), [ready], T0.getTime() + 5 * MIN);
    expect(seen).toEqual([
      { metric: "correlation", tenant: "acme", seconds: 90 },
      { metric: "provisioning", tenant: "acme", seconds: 15 * 60 },
    ]);
    // A repeat report of the same state observes nothing again.
    observeDurations(deps, mem, orderWith([ready]), [ready], T0.getTime() + 6 * MIN);
    expect(seen).toHaveLength(2);
  });

  it("does not invent a correlation time it did not see start (restart, or a match in the pass the BMI came up)", () => {
    const { seen, deps } = recorder();
    const mem: OrderMemory = { consecutiveFulfillmentErrors: 0 };
    const provisioning = entry("w1");
    observeDurations(deps, mem, orderWith([provisioning]), [{ ...provisioning, phase: "Binding" }], T0.getTime());
    expect(seen).toEqual([]);
  });
});
