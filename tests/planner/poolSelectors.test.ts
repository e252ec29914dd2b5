// Overlapping NodePool selectors (issue 15, finding 14): a NodePool whose agentLabelSelector may select
// another node set's Agents lets CAPI install one pool's Agent for the other and unbind workers, which
// the planner would replace, over and over. Such a mapping is refused: NodePoolUnmapped names the pools
// and node sets, and the node sets concerned get no creates, no deletes and no replica change.
import fc from "fast-check";
import { matchesSelector } from "../../lab/kube";
import { boundAgentLabels, maySelectNodeSet, poolConflicts } from "../../planner/agentSelectors";
import { desiredBinding } from "../../planner/desired";
import { NODE_SET_LABEL, WORKER_NAME_LABEL } from "../../planner/names";
import type { ObservedNodePool, WorkerStatus } from "../../planner/types";
import {
  agentFor, bmiFor, bmRequest, boundAgent, conditionOf, entry, iso, makeOrder, MIN, NS, planOf, snap, SnapOptions, statusOf,
} from "./builders";

type Selector = ObservedNodePool["agentSelector"];

const readyEntry = (name: string, nodeSet: string) =>
  entry(name, { nodeSet, phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) });
const agentOf = (name: string, nodeSet: string, state = "added-to-existing-cluster") => {
  const a = boundAgent(name, name, state);
  return { ...a, labels: { ...a.labels, [NODE_SET_LABEL]: nodeSet } };
};
const pinned = (set: string): Selector => ({ matchLabels: { agentBareMetal: "true", [NODE_SET_LABEL]: set } });
const broad: Selector = { matchLabels: { agentBareMetal: "true" } };

/** compute: c1, c2 Ready; gpu: g1 Ready (same instance type); pools labelled for their node sets. */
function twoSets(selectors: { compute?: Selector; gpu?: Selector }, o: SnapOptions & { compute?: number; gpu?: number } = {}): SnapOptions {
  const { compute = 2, gpu = 1, ...rest } = o;
  const pool = (name: string, nodeSet: string, replicas: number, sel?: Selector): ObservedNodePool =>
    ({ name, namespace: NS, nodeSet, replicas, statusReplicas: replicas, ...(sel ? { agentSelector: sel } : {}) });
  return {
    nodeRequests: [bmRequest("compute", compute), bmRequest("gpu", gpu)],
    workers: [readyEntry("c1", "compute"), readyEntry("c2", "compute"), readyEntry("g1", "gpu")],
    bmis: [bmiFor("c1"), bmiFor("c2"), bmiFor("g1")],
    agents: [agentOf("c1", "compute"), agentOf("c2", "compute"), agentOf("g1", "gpu")],
    nodePools: [pool("np-compute", "compute", 2, selectors.compute), pool("np-gpu", "gpu", 1, selectors.gpu)],
    ...rest,
  };
}

const phases = (p: ReturnType<typeof planOf>) => Object.fromEntries(p.status.workers.map((w: WorkerStatus) => [w.name, w.phase]));

describe("today's mappings are unchanged", () => {
  test.each([
    ["no selectors", {}],
    ["selectors pinned to their own node set", { compute: pinned("compute"), gpu: pinned("gpu") }],
  ])("%s: mapped, scale-up creates, scale-down lowers replicas", (_name, selectors) => {
    const steady = planOf(twoSets(selectors));
    expect(conditionOf(steady, "NodePoolUnmapped")).toMatchObject({ status: "False", reason: "NodePoolsMapped" });
    expect(steady.nodePoolReplicas).toEqual({ "np-compute": 2, "np-gpu": 1 });
    const up = planOf(twoSets(selectors, { compute: 3 }));
    expect(up.fence.map((e) => e.nodeSet)).toEqual(["compute"]);
    const down = planOf(twoSets(selectors, { compute: 1 }));
    expect(down.nodePoolReplicas).toEqual({ "np-compute": 1, "np-gpu": 1 });
  });

  test("the plan with pinned selectors is the plan without selectors", () => {
    const a = planOf(twoSets({}));
    const b = planOf(twoSets({ compute: pinned("compute"), gpu: pinned("gpu") }));
    expect(b.workers).toEqual(a.workers);
    expect(b.status.workers).toEqual(a.status.workers);
    expect(b.status.conditions).toEqual(a.status.conditions);
  });

  test("a single node set has nothing to tell apart: a broad selector is fine", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 3)], workers: [readyEntry("c1", "compute")], bmis: [bmiFor("c1")],
      agents: [agentOf("c1", "compute")],
      nodePools: [{ name: "np", namespace: NS, nodeSet: "compute", replicas: 1, statusReplicas: 1, agentSelector: broad }],
    });
    expect(conditionOf(p, "NodePoolUnmapped")?.status).toBe("False");
    expect(p.fence).toHaveLength(2);
  });
});

describe("an ambiguous mapping is refused", () => {
  test("overlapping selectors: NodePoolUnmapped names the pools and node sets; the current workers stay declared", () => {
    const p = planOf(twoSets({ compute: broad, gpu: broad }));
    const c = conditionOf(p, "NodePoolUnmapped");
    expect(c).toMatchObject({ status: "True", reason: "AmbiguousAgentSelector" });
    expect(c?.message).toContain("NodePool np-compute (node set compute) may also select the Agents of node set gpu");
    expect(c?.message).toContain("NodePool np-gpu (node set gpu) may also select the Agents of node set compute");
    expect(c?.message).toContain("node sets compute, gpu are frozen");
    expect(p.workers.map((w) => [w.slot, w.binding?.agentName])).toEqual([["c1", "agent-c1"], ["c2", "agent-c2"], ["g1", "agent-g1"]]);
    expect(p.nodePoolReplicas).toEqual({});
  });

  test("no creates and no scale-down in the frozen node sets", () => {
    const up = planOf(twoSets({ compute: broad, gpu: broad }, { compute: 3, gpu: 2 }));
    expect(up.fence).toEqual([]);
    expect(up.nodePoolReplicas).toEqual({});
    const down = planOf(twoSets({ compute: broad, gpu: broad }, {
      compute: 1,
      workers: [readyEntry("c1", "compute"), readyEntry("c2", "compute"), entry("c3", { phase: "WaitingForAgent" }), readyEntry("g1", "gpu")],
      bmis: [bmiFor("c1"), bmiFor("c2"), bmiFor("c3"), bmiFor("g1")],
    }));
    expect(phases(down)).toEqual({ c1: "Ready", c2: "Ready", c3: "WaitingForAgent", g1: "Ready" });
    expect(down.workers.map((w) => w.slot)).toEqual(["c1", "c2", "c3", "g1"]);
    expect(down.nodePoolReplicas).toEqual({});
  });

  test("a worker CAPI unbinds while the mapping is ambiguous is kept (no Unbinding, BMI and binding declared)", () => {
    const unbinding = [agentOf("c1", "compute"), agentOf("c2", "compute", "unbinding-pending-user-action"), agentOf("g1", "gpu")];
    const clean = planOf(twoSets({ compute: pinned("compute"), gpu: pinned("gpu") }, { agents: unbinding }));
    expect(statusOf(clean, "c2")?.phase).toBe("Unbinding"); // an unambiguous pool's unbinding is a scale-down
    const frozen = planOf(twoSets({ compute: broad, gpu: pinned("gpu") }, { agents: unbinding }));
    expect(statusOf(frozen, "c2")).toEqual(readyEntry("c2", "compute"));
    expect(frozen.workers.find((w) => w.slot === "c2")).toMatchObject({ bmi: { adoptId: "id-c2" }, binding: { agentName: "agent-c2" } });
    expect(frozen.events.map((e) => e.reason)).not.toContain("WorkerDeleted");
  });

  test("a retirement persisted before the conflict appeared goes on", () => {
    const p = planOf(twoSets({ compute: broad, gpu: broad }, {
      workers: [readyEntry("c1", "compute"), entry("c2", { phase: "Deleting", attemptStartedAt: iso(-MIN) }), readyEntry("g1", "gpu")],
      agents: [agentOf("c1", "compute"), agentOf("g1", "gpu")],
    }));
    expect(statusOf(p, "c2")?.phase).toBe("Deleting");
    expect(p.workers.map((w) => w.slot)).not.toContain("c2");
  });

  test("one broad pool freezes its node set and the one it may take from; the pinned pool is not named", () => {
    const p = planOf(twoSets({ compute: pinned("compute"), gpu: broad }, { compute: 3 }));
    const c = conditionOf(p, "NodePoolUnmapped");
    expect(c?.message).toContain("NodePool np-gpu (node set gpu) may also select the Agents of node set compute");
    expect(c?.message).not.toContain("NodePool np-compute");
    expect(p.fence).toEqual([]);
  });

  test("a third node set that no pool can confuse keeps working", () => {
    const world = twoSets({ compute: pinned("compute"), gpu: { matchExpressions: [{ key: NODE_SET_LABEL, operator: "In", values: ["gpu", "compute"] }] } });
    world.nodeRequests!.push(bmRequest("storage", 1));
    world.nodePools!.push({ name: "np-storage", namespace: NS, nodeSet: "storage", replicas: 0, statusReplicas: 0, agentSelector: pinned("storage") });
    const p = planOf(world);
    expect(p.fence.map((e) => e.nodeSet)).toEqual(["storage"]);
    expect(p.nodePoolReplicas).toEqual({ "np-storage": 1 });
    expect(conditionOf(p, "NodePoolUnmapped")?.message).toContain("node sets compute, gpu are frozen");
  });

  test("the mapping clears once the selectors are fixed: the node sets scale again", () => {
    const broken = planOf(twoSets({ compute: broad, gpu: broad }, { compute: 3 }));
    const fixed = planOf(twoSets({ compute: pinned("compute"), gpu: pinned("gpu") }, {
      compute: 3, now: new Date(Date.parse(iso(MIN))), orderPatch: (o) => { o.status!.conditions = broken.status.conditions; },
    }));
    expect(conditionOf(fixed, "NodePoolUnmapped")).toMatchObject({ status: "False", lastTransitionTime: iso(MIN) });
    expect(fixed.fence).toHaveLength(1);
  });
});

describe("which selectors may select another node set's Agents", () => {
  const order = makeOrder();
  test.each<[string, boolean, Selector]>([
    ["matchLabels pinned to compute", false, pinned("compute")],
    ["agentBareMetal only", true, broad],
    ["empty selector (selects everything)", true, {}],
    ["node-set In [compute]", false, { matchExpressions: [{ key: NODE_SET_LABEL, operator: "In", values: ["compute"] }] }],
    ["node-set In [compute, gpu]", true, { matchExpressions: [{ key: NODE_SET_LABEL, operator: "In", values: ["compute", "gpu"] }] }],
    ["node-set NotIn [gpu]", false, { matchExpressions: [{ key: NODE_SET_LABEL, operator: "NotIn", values: ["gpu"] }] }],
    ["node-set Exists", true, { matchExpressions: [{ key: NODE_SET_LABEL, operator: "Exists" }] }],
    ["a hardware label we do not set (both sets may carry it)", true, { matchLabels: { "example.com/resource-class": "fc430" } }],
    ["another order's uid", false, { matchLabels: { "osac.openshift.io/cluster-order": "other-uid" } }],
  ])("a compute pool with %s may select gpu Agents: %s", (_name, expected, selector) => {
    expect(maySelectNodeSet(selector!, order, "gpu")).toBe(expected);
  });

  test("a pool with no node-set label or without a selector is not judged", () => {
    const pools: ObservedNodePool[] = [
      { name: "unlabelled", namespace: NS, replicas: 1, statusReplicas: 1, agentSelector: broad },
      { name: "no-selector", namespace: NS, nodeSet: "compute", replicas: 1, statusReplicas: 1 },
    ];
    expect(poolConflicts(pools, order, ["compute", "gpu"])).toEqual([]);
  });

  test("the labels judged are the ones our binding sets on an Agent", () => {
    const s = snap({ nodeRequests: [bmRequest("gpu", 1)] });
    const binding = desiredBinding(s, entry("g1", { nodeSet: "gpu" }), agentFor("g1"))!;
    const { [WORKER_NAME_LABEL]: _slot, ...setLabels } = binding.labels;
    void _slot;
    expect(boundAgentLabels(s.order, "gpu")).toMatchObject(setLabels);
  });

  test("property: on the labels we set, the judgement is the CAPI stand-in's own selector match", () => {
    const keys = ["agentBareMetal", NODE_SET_LABEL, "osac.openshift.io/cluster-order", "infraenvs.agent-install.openshift.io"];
    const values = ["true", "compute", "gpu", "uid-co1", "co1-infraenv", "x"];
    const requirement = fc.record({
      key: fc.constantFrom(...keys),
      operator: fc.constantFrom("In", "NotIn", "Exists", "DoesNotExist"),
      values: fc.uniqueArray(fc.constantFrom(...values), { minLength: 1, maxLength: 3 }),
    });
    const selector = fc.record({
      matchLabels: fc.dictionary(fc.constantFrom(...keys), fc.constantFrom(...values), { maxKeys: 2 }),
      matchExpressions: fc.array(requirement, { maxLength: 3 }),
    });
    fc.assert(fc.property(selector, fc.constantFrom("compute", "gpu"), (sel, set) => {
      expect(maySelectNodeSet(sel, order, set)).toBe(matchesSelector(sel, boundAgentLabels(order, set)));
    }), { numRuns: 500 });
  });
});
