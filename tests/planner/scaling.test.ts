// Counting, scale-up, scale-down and NodePool replicas (OSAC-2135 §3.1, §5.1, §5.2, §5.5, §11.11, §11.15).
import { countWorkers } from "../../planner";
import type { WorkerPhase } from "../../planner/types";
import {
  bmiFor, bmRequest, boundAgent, conditionOf, entry, iso, MIN, NS, ORDER, planOf, statusOf,
} from "./builders";

const readyEntry = (name: string, o = {}) => entry(name, { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN), ...o });

describe("counting (§11.11)", () => {
  test("current = Provisioning+WaitingForAgent+Binding+Ready, ready = Ready, Failed/Unbinding/Deleting not counted", () => {
    const phases: WorkerPhase[] = ["Provisioning", "WaitingForAgent", "Binding", "Ready", "Ready", "Failed", "Unbinding", "Deleting"];
    expect(countWorkers(phases.map((phase, i) => entry(`w${i}`, { phase })))).toEqual({ current: 5, ready: 2, failed: 1 });
  });

  test("desiredWorkers sums bare-metal node sets only", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 2), bmRequest("gpu", 3, "bm.gpu"), { nodeSet: "vm", numberOfNodes: 7 }],
      nodePools: [],
    });
    expect(p.status.desiredWorkers).toBe(5);
    expect(p.fence.map((f) => f.nodeSet).sort()).toEqual(["compute", "compute", "gpu", "gpu", "gpu"]);
  });

  test("status counts are computed from the planned entries", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 3)],
      workers: [readyEntry("a"), entry("b", { phase: "WaitingForAgent" }), entry("c", { phase: "Failed", nextRetryTime: iso(MIN) })],
      bmis: [bmiFor("a"), bmiFor("b")],
      agents: [boundAgent("a", "a", "added-to-existing-cluster")],
    });
    expect([p.status.desiredWorkers, p.status.currentWorkers, p.status.readyWorkers]).toEqual([3, 2, 1]);
  });
});

describe("scale-up (§5.1)", () => {
  test("creates desired − current new slots, each fenced with a fresh slot and BMI name", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 3)], workers: [readyEntry("a")], bmis: [bmiFor("a")], agents: [boundAgent("a", "a", "added-to-existing-cluster")] });
    expect(p.fence.map((f) => [f.name, f.bareMetalInstance?.name])).toEqual([["n1", `${ORDER}-n2`], ["n3", `${ORDER}-n4`]]);
    expect(p.fence[0]).toEqual({
      name: "n1", nodeSet: "compute", instanceType: "bm.small", kind: "BareMetalInstance", phase: "Provisioning",
      bareMetalInstance: { name: `${ORDER}-n2` }, bmiCreateState: "Attempted", attemptCount: 1,
      attemptStartedAt: iso(0), creationTimestamp: iso(0),
    });
    expect(p.workers.filter((w) => w.requiresFence).map((w) => w.slot)).toEqual(["n1", "n3"]);
    expect(p.status.workers.map((w) => w.name)).toEqual(["a", "n1", "n3"]);
    expect(p.status.currentWorkers).toBe(3);
  });

  test("Failed slots are not capacity; a waiting Failed slot holds its place (its replacement is the retry)", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 3)],
      workers: [readyEntry("a"), entry("f", { phase: "Failed", nextRetryTime: iso(MIN) })],
      bmis: [bmiFor("a")], agents: [boundAgent("a", "a", "added-to-existing-cluster")],
    });
    expect(p.status.currentWorkers).toBe(2); // a + one new slot
    expect(p.fence.map((f) => f.name)).toEqual(["n1"]);
    expect(statusOf(p, "f")?.phase).toBe("Failed");
  });

  test("each node set scales independently with its own instance type and fabric port", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1), bmRequest("gpu", 1, "bm.gpu")], nodePools: [] });
    const byNodeSet = Object.fromEntries(p.workers.map((w) => [w.nodeSet, [w.bmi.instanceType, w.bmi.networkAttachment.interface]]));
    expect(byNodeSet).toEqual({ compute: ["bm.small", "eth1"], gpu: ["bm.gpu", "ens3f0"] });
  });
});

describe("scale-down (§5.2, §11.15)", () => {
  test("Failed slots are removed first: no replacement, entry dropped once the BMI is gone (WorkerDeleted)", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 1)],
      workers: [readyEntry("a"), readyEntry("b"), entry("f", { phase: "Failed", nextRetryTime: iso(-MIN) })],
      bmis: [bmiFor("a"), bmiFor("b")],
      agents: [boundAgent("a", "a", "added-to-existing-cluster"), boundAgent("b", "b", "added-to-existing-cluster")],
    });
    expect(p.status.workers.map((w) => [w.name, w.phase])).toEqual([["a", "Ready"], ["b", "Ready"]]);
    expect(p.events).toContainEqual(expect.objectContaining({ reason: "WorkerDeleted", key: `WorkerDeleted/f/${ORDER}-b-f` }));
    expect(p.fence).toEqual([]);
    // The remaining excess (2 Ready for 1 desired) goes to CAPI through the NodePool.
    expect(p.nodePoolReplicas).toEqual({ "np-compute": 1 });
    expect(p.workers.map((w) => w.slot)).toEqual(["a", "b"]);
  });

  test("a surplus Failed slot whose BMI still exists stays Failed, undeclared, until the BMI is gone", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 0)],
      workers: [entry("f", { phase: "Failed", nextRetryTime: iso(-MIN) })], bmis: [bmiFor("f", { state: "Failed" })],
    });
    expect(statusOf(p, "f")?.phase).toBe("Failed");
    expect(p.workers).toEqual([]);
    expect(p.fence).toEqual([]);
  });

  test("then unbound slots (Provisioning/WaitingForAgent), newest first, never a bound one", () => {
    const workers = [
      readyEntry("a", { creationTimestamp: iso(-60 * MIN) }),
      entry("old", { phase: "WaitingForAgent", creationTimestamp: iso(-20 * MIN) }),
      entry("new", { phase: "Provisioning", creationTimestamp: iso(-10 * MIN) }),
      entry("bind", { phase: "Binding", creationTimestamp: iso(-1 * MIN) }),
    ];
    const bmis = [bmiFor("a"), bmiFor("old"), bmiFor("new", { state: "Provisioning", macs: [] }), bmiFor("bind")];
    const agents = [boundAgent("a", "a", "added-to-existing-cluster"), boundAgent("bind", "bind", "installing")];
    const three = planOf({ nodeRequests: [bmRequest("compute", 3)], workers, bmis, agents });
    expect(three.status.workers.map((w) => [w.name, w.phase])).toEqual([["a", "Ready"], ["old", "WaitingForAgent"], ["new", "Deleting"], ["bind", "Binding"]]);
    const one = planOf({ nodeRequests: [bmRequest("compute", 1)], workers, bmis, agents });
    expect(one.status.workers.map((w) => [w.name, w.phase])).toEqual([["a", "Ready"], ["old", "Deleting"], ["new", "Deleting"], ["bind", "Binding"]]);
    // The remainder (a, bind for 1) is CAPI's choice: replicas follow the request.
    expect(one.nodePoolReplicas).toEqual({ "np-compute": 1 });
  });

  test("a slot that never attempted a Create is dropped at once on scale-down", () => {
    const reserved = entry("r", { bareMetalInstance: { name: `${ORDER}-b-r` }, bmiCreateState: "Reserved" });
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [readyEntry("a"), reserved], bmis: [bmiFor("a")], agents: [boundAgent("a", "a", "added-to-existing-cluster")] });
    expect(p.status.workers.map((w) => w.name)).toEqual(["a"]);
    expect(p.events.map((e) => e.reason)).not.toContain("WorkerDeleted");
  });

  test("a retired unbound slot is declared once more, then removed from the declared set once Deleting is persisted", () => {
    const w = entry("p", { phase: "WaitingForAgent" });
    const first = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [w], bmis: [bmiFor("p")] });
    expect(statusOf(first, "p")?.phase).toBe("Deleting");
    expect(first.workers.map((d) => d.slot)).toEqual(["p"]);
    const second = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [statusOf(first, "p")!], bmis: [bmiFor("p", { deleting: true })] });
    expect(second.workers).toEqual([]);
    const third = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [statusOf(second, "p")!], bmis: [] });
    expect(third.status.workers).toEqual([]);
    expect(third.events.map((e) => e.reason)).toEqual(["WorkerDeleted"]);
  });

  test("bound workers are never removed by the planner; CAPI picks through replicas", () => {
    const workers = [readyEntry("a"), readyEntry("b"), readyEntry("c")];
    const p = planOf({
      nodeRequests: [bmRequest("compute", 1)], workers, bmis: workers.map((w) => bmiFor(w.name)),
      agents: workers.map((w) => boundAgent(w.name, w.name, "added-to-existing-cluster")),
    });
    expect(p.status.workers.map((w) => w.phase)).toEqual(["Ready", "Ready", "Ready"]);
    expect(p.workers).toHaveLength(3);
    expect(p.nodePoolReplicas).toEqual({ "np-compute": 1 });
  });

  test("a node set removed from the spec scales to zero (its labelled NodePool too)", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 0)],
      workers: [entry("g", { nodeSet: "gpu", instanceType: "bm.gpu", phase: "WaitingForAgent" })], bmis: [bmiFor("g")],
      nodePools: [
        { name: "np-compute", namespace: NS, nodeSet: "compute", replicas: 0, statusReplicas: 0 },
        { name: "np-gpu", namespace: NS, nodeSet: "gpu", replicas: 1, statusReplicas: 0 },
      ],
    });
    expect(statusOf(p, "g")?.phase).toBe("Deleting");
    expect(p.nodePoolReplicas).toEqual({ "np-compute": 0, "np-gpu": 0 });
  });
});

describe("NodePool mapping (§5.5)", () => {
  test("a NodePool labelled with the node set gets the requested count", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 2), bmRequest("gpu", 1, "bm.gpu")],
      nodePools: [
        { name: "np-a", namespace: NS, nodeSet: "gpu", replicas: 0, statusReplicas: 0 },
        { name: "np-b", namespace: NS, nodeSet: "compute", replicas: 0, statusReplicas: 0 },
      ],
    });
    expect(p.nodePoolReplicas).toEqual({ "np-a": 1, "np-b": 2 });
    expect(conditionOf(p, "NodePoolUnmapped")?.status).toBe("False");
  });

  test("a single unlabelled NodePool serves a single node set", () => {
    const p = planOf({ nodePools: [{ name: "np", namespace: NS, replicas: 0, statusReplicas: 0 }] });
    expect(p.nodePoolReplicas).toEqual({ np: 2 });
  });

  test("an unmapped node set is reported and no replicas change", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 2), bmRequest("gpu", 1, "bm.gpu")],
      nodePools: [{ name: "np", namespace: NS, replicas: 0, statusReplicas: 0 }],
    });
    expect(p.nodePoolReplicas).toEqual({});
    expect(conditionOf(p, "NodePoolUnmapped")).toMatchObject({ status: "True", reason: "NodePoolUnmapped" });
    expect(conditionOf(p, "NodePoolUnmapped")?.message).toContain("no NodePool serves node set compute");
    expect(conditionOf(p, "NodePoolUnmapped")?.message).toContain("node set gpu");
  });

  test("two NodePools labelled for one node set are ambiguous and left unchanged", () => {
    const p = planOf({
      nodePools: [
        { name: "np-1", namespace: NS, nodeSet: "compute", replicas: 0, statusReplicas: 0 },
        { name: "np-2", namespace: NS, nodeSet: "compute", replicas: 0, statusReplicas: 0 },
      ],
    });
    expect(p.nodePoolReplicas).toEqual({});
    expect(conditionOf(p, "NodePoolUnmapped")?.message).toContain("np-1, np-2");
  });
});
