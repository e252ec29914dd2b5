// The `status` command shows a failing update next to the workers: which order, since when, why and
// which update (issue 15, finding 12).
import { driftReport, statusRows, updateFailureRows } from "../../controller/app";
import { formatStatus } from "../../cli/main";
import { OrderNotFoundError } from "../../io/observe";
import type { WorkerDrift } from "../../planner/types";
import { entry } from "../planner/builders";

describe("status output", () => {
  const failed = {
    type: "UpdateFailed", status: "True" as const, reason: "CreateRejected", lastTransitionTime: "2026-12-01T10:00:00Z",
    message: "the update of this order's stack failed and is retried: update of stack ns--co started 2026-12-01T10:00:00.000Z failed: rejected",
  };

  it("lists the orders whose UpdateFailed is True, with since, reason and message", () => {
    const report = {
      workers: statusRows("ns/co", [entry("w1", { phase: "Failed", lastFailureReason: "CreateRejected" })]),
      updateFailures: [...updateFailureRows("ns/co", [failed]), ...updateFailureRows("ns/ok", [{ ...failed, status: "False" as const }])],
      drift: [],
    };
    expect(report.updateFailures).toEqual([{ order: "ns/co", since: "2026-12-01T10:00:00Z", reason: "CreateRejected", message: failed.message }]);
    const text = formatStatus(report);
    expect(text).toMatch(/WORKER\s+NODESET\s+PHASE/);
    expect(text).toContain("UPDATE FAILED");
    expect(text).toMatch(/ns\/co\s+2026-12-01T10:00:00Z\s+CreateRejected\s+the update of this order's stack failed/);
    expect(text).toContain("started 2026-12-01T10:00:00.000Z");
  });

  it("shows only the workers when every update succeeds", () => {
    const text = formatStatus({ workers: statusRows("ns/co", [entry("w1")]), updateFailures: [], drift: [] });
    expect(text).not.toContain("UPDATE FAILED");
    expect(text).not.toContain("DRIFT");
  });

  it("lists, per worker, the create-only field that differs, its live and its requested value", () => {
    const text = formatStatus({
      workers: statusRows("ns/co", [entry("w1", { phase: "Ready" })]), updateFailures: [],
      drift: [{ order: "ns/co", slot: "w1", bmiName: "co-w1a", field: "networkAttachment.securityGroups", live: "sg-a", requested: "sg-a,sg-b" }],
    });
    expect(text).toContain("CREATE-ONLY DRIFT");
    expect(text).toMatch(/ns\/co\s+w1\s+co-w1a\s+networkAttachment\.securityGroups\s+sg-a\s+sg-a,sg-b/);
  });
});

describe("status drift of many orders", () => {
  const orders = Array.from({ length: 10 }, (_, i) => ({ metadata: { namespace: "ns", name: `co-${i}` } }));
  const row = (name: string): WorkerDrift => ({ slot: "w1", bmiName: `${name}-w1a`, field: "networkAttachment.securityGroups", live: "a", requested: "b" });

  it("observes at most 4 orders at a time", async () => {
    let running = 0;
    let peak = 0;
    const report = await driftReport(orders, async (o) => {
      peak = Math.max(peak, ++running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return [row(o.metadata.name)];
    });
    expect(peak).toBe(4);
    expect(report.drift.map((d) => d.order)).toEqual(orders.map((o) => `ns/${o.metadata.name}`));
    expect(report.driftUnknown).toBeUndefined();
  });

  it("an order deleted meanwhile, or one that cannot be observed, gets a note; the others are reported", async () => {
    const report = await driftReport(orders.slice(0, 3), async (o) => {
      if (o.metadata.name === "co-1") throw new OrderNotFoundError({ namespace: "ns", name: "co-1" });
      if (o.metadata.name === "co-2") throw new Error("the fulfillment-service could not be read (UNAVAILABLE)");
      return [row(o.metadata.name)];
    });
    expect(report.drift.map((d) => d.order)).toEqual(["ns/co-0"]);
    expect(report.driftUnknown).toEqual([
      { order: "ns/co-1", message: "the ClusterOrder was deleted meanwhile" },
      { order: "ns/co-2", message: "drift unknown: the fulfillment-service could not be read (UNAVAILABLE)" },
    ]);
    const text = formatStatus({ workers: [], updateFailures: [], ...report });
    expect(text).toContain("DRIFT UNKNOWN");
    expect(text).toMatch(/ns\/co-1\s+the ClusterOrder was deleted meanwhile/);
  });
});
