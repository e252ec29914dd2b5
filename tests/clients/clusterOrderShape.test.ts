// The ClusterOrder as it enters from the hub: the fields the planner reads are checked by type, and a
// malformed order fails its reconcile with a Warning event naming the fields, changing nothing else.
import { clusterOrderProblems, InvalidClusterOrderError, validClusterOrder } from "../../clients/kube/clusterOrder";
import type { Kube } from "../../clients/kube";
import { EV_INVALID_CLUSTER_ORDER, reconcileOrder } from "../../controller/reconcile";
import type { ReconcileDeps } from "../../controller/reconcile";
import { statusBody } from "../../io/status";
import { bmRequest, entry, makeOrder, NS, ORDER, planOf, T0, UID } from "../planner/builders";

/** A deep copy of a valid order with one field set (undefined deletes it). */
function withField(path: string, value: unknown): Record<string, unknown> {
  const o = JSON.parse(JSON.stringify(makeOrder({ nodeRequests: [bmRequest("compute", 2)], workers: [entry("w1", { phase: "Ready" })] }))) as Record<string, unknown>;
  const keys = path.split(".");
  let at: Record<string, unknown> = o;
  for (const k of keys.slice(0, -1)) at = at[k] as Record<string, unknown>;
  const last = keys[keys.length - 1];
  if (value === undefined) delete at[last]; else at[last] = value;
  return o;
}

describe("clusterOrderProblems", () => {
  it("accepts the orders the planner's tests build, and the status this controller writes", () => {
    const order = makeOrder({ nodeRequests: [bmRequest("compute", 2), bmRequest("gpu", 0, "bm.gpu", "eth1")], workers: [entry("w1", { phase: "Ready" })] });
    expect(clusterOrderProblems(order)).toEqual([]);
    const written = { ...order, status: { ...order.status, ...statusBody(planOf({ nodeRequests: [bmRequest("compute", 2)] })) } };
    expect(clusterOrderProblems(JSON.parse(JSON.stringify(written)))).toEqual([]);
  });

  it.each([
    ["metadata.uid", undefined, "metadata.uid is missing"],
    ["metadata.name", 7, "metadata.name is not a string"],
    ["metadata.annotations", { a: 1 }, "metadata.annotations[a] is not a string"],
    ["metadata.finalizers", "x", "metadata.finalizers is not a list"],
    ["spec", undefined, "spec is missing"],
    ["spec.nodeRequests", { compute: 2 }, "spec.nodeRequests is not a list"],
    ["spec.nodeRequests", [{ nodeSet: "compute", numberOfNodes: "2" }], "spec.nodeRequests[0].numberOfNodes is not an integer"],
    ["spec.nodeRequests", [{ nodeSet: "compute", numberOfNodes: 1.5 }], "spec.nodeRequests[0].numberOfNodes is not an integer"],
    ["spec.nodeRequests", [{ numberOfNodes: 1 }], "spec.nodeRequests[0].nodeSet is missing"],
    ["spec.nodeRequests", [{ nodeSet: "c", numberOfNodes: 1, bareMetal: { instanceType: 3 } }], "spec.nodeRequests[0].bareMetal.instanceType is not a string"],
    ["spec.networkAttachment", { subnetRef: "s", securityGroupRefs: "sg" }, "spec.networkAttachment.securityGroupRefs is not a list"],
    ["status.workers", [{ phase: "Ready" }], "status.workers[0].name is missing"],
    ["status.workers", [{ name: "w1", attemptCount: "2" }], "status.workers[0].attemptCount is not an integer"],
    ["status.workers", [{ name: "w1", bareMetalInstance: { id: 5 } }], "status.workers[0].bareMetalInstance.id is not a string"],
    ["status.conditions", [{ type: "Ready" }], "status.conditions[0].status is missing"],
    ["status.readyWorkers", "3", "status.readyWorkers is not an integer"],
  ])("names the field: %s = %j", (path, value, problem) => {
    expect(clusterOrderProblems(withField(path, value))).toEqual([problem]);
  });

  it("leaves ranges and meaning to the planner: numberOfNodes 0 and a request without bareMetal pass", () => {
    expect(clusterOrderProblems(withField("spec.nodeRequests", [{ nodeSet: "c", numberOfNodes: 0 }]))).toEqual([]);
  });

  it("throws at most five problems, with the order's metadata when that much is readable", () => {
    const bad = withField("spec.nodeRequests", Array.from({ length: 7 }, () => ({ nodeSet: 1, numberOfNodes: 1 })));
    let err: InvalidClusterOrderError | undefined;
    try {
      validClusterOrder(bad, `${NS}/${ORDER}`);
    } catch (e) {
      err = e as InvalidClusterOrderError;
    }
    expect(err).toBeInstanceOf(InvalidClusterOrderError);
    expect(err!.message).toMatch(new RegExp(`^ClusterOrder ${NS}/${ORDER} cannot be read: spec.nodeRequests\\[0\\].nodeSet is not a string; .* \\(and 2 more\\)$`));
    expect(err!.metadata?.uid).toBe(UID);
    expect(() => validClusterOrder(withField("metadata.uid", 1), "x")).toThrow(expect.objectContaining({ metadata: undefined }));
  });
});

describe("a malformed ClusterOrder in a reconcile", () => {
  it("is reported by one Warning event naming the field; nothing else is read or written", async () => {
    const bad = withField("spec.nodeRequests", [{ nodeSet: "compute", numberOfNodes: "three" }]);
    const events: { reason: string; type: string; message: string; name?: string }[] = [];
    const calls: string[] = [];
    // Only the two calls the reconcile may make; anything else it tried would be recorded and fail the test.
    const kube = new Proxy({
      getClusterOrder: async () => validClusterOrder(bad, `${NS}/${ORDER}`),
      createEvent: async (_o: unknown, e: { reason: string; type: string; message: string; name?: string }) => (events.push(e), true),
    }, { get: (t, p: string) => (p in t ? t[p as keyof typeof t] : (calls.push(p), () => { throw new Error(`unexpected call ${p}`); })) });
    const deps = { kube: kube as unknown as Kube, memory: new Map(), now: () => T0 } as unknown as ReconcileDeps;
    for (let i = 0; i < 2; i++) {
      await expect(reconcileOrder(deps, { namespace: NS, name: ORDER })).rejects.toThrow("spec.nodeRequests[0].numberOfNodes is not an integer");
    }
    expect(calls.filter((c) => c !== "then")).toEqual([]);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ type: "Warning", reason: EV_INVALID_CLUSTER_ORDER });
    expect(events[0].message).toContain("spec.nodeRequests[0].numberOfNodes is not an integer");
    expect(events[1].name).toBe(events[0].name); // the same name: the apiserver keeps one Event
  });
});
