// Status writes against the real kube-apiserver. The fence (program) and the reports (loop) write the same
// status.workers list; a report planned before a fence landed must not drop the fence's Attempted entries,
// or the BMIs those entries stand for become orphans to the next plan (found by `npm run bench`).
import * as k8s from "@kubernetes/client-node";
import { ConflictError, Kube, loadKubeConfig } from "../../clients/kube";
import { plan } from "../../planner";
import type { ClusterOrder } from "../../planner/types";
import { writeFence, writeStatus } from "../../io/status";
import { createTestNamespace, kubeConfig } from "../support/kube";
import { bmRequest, snap } from "../planner/builders";

let kube: Kube;
let custom: k8s.CustomObjectsApi;

beforeAll(() => {
  kube = new Kube(loadKubeConfig(process.env.KUBECONFIG));
  custom = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
});

async function newOrder(ns: string): Promise<ClusterOrder> {
  await custom.createNamespacedCustomObject({
    group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders",
    body: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name: "order-1", namespace: ns },
      spec: { templateID: "osac.templates.ocp", nodeRequests: [bmRequest("compute", 2)] } },
  });
  return (await kube.getClusterOrder(ns, "order-1"))!;
}

/** The plan for a live order, planned from the builders' world (ignition, catalog, instance types). */
function planFor(order: ClusterOrder) {
  return plan(snap({ nodeRequests: order.spec.nodeRequests, orderPatch: (o) => { o.metadata = order.metadata; o.status = order.status; } }));
}

describe("status writes", () => {
  it("a report planned before the fence landed conflicts instead of dropping the Attempted entries", async () => {
    const ns = await createTestNamespace(kubeConfig(), "kstatus");
    const observed = await newOrder(ns);
    const p = planFor(observed);
    expect(p.fence.map((f) => f.bmiCreateState)).toEqual(["Attempted", "Attempted"]);

    // The program's fence lands (conditional on what it observed) ...
    await writeFence(kube, observed, p);
    // ... while a report of the loop was planned from the same, now stale, observation.
    await expect(writeStatus(kube, observed, p)).rejects.toBeInstanceOf(ConflictError);
    const after = (await kube.getClusterOrder(ns, "order-1"))!;
    expect(after.status?.workers?.map((w) => w.name).sort()).toEqual(p.fence.map((f) => f.name).sort());

    // Observed again, the report goes through and keeps the fenced entries.
    const again = planFor(after);
    await writeStatus(kube, after, again);
    const final = (await kube.getClusterOrder(ns, "order-1"))!;
    expect(final.status?.workers?.map((w) => w.name).sort()).toEqual(p.fence.map((f) => f.name).sort());
    expect(final.status?.workers?.every((w) => w.bmiCreateState === "Attempted")).toBe(true);
  });

  it("a report leaves osac-operator's phase and conditions as they are, and a conflicting count to its owner", async () => {
    const ns = await createTestNamespace(kubeConfig(), "kstatus3");
    await newOrder(ns);
    await custom.patchNamespacedCustomObjectStatus({
      group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders", name: "order-1",
      body: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name: "order-1" }, status: {
        phase: "Ready", readyWorkers: 9,
        conditions: [{ type: "ClusterAvailable", status: "True", reason: "AsExpected", message: "ok", lastTransitionTime: "2026-01-01T00:00:00Z" }] } },
      fieldManager: "osac-operator", force: true,
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply));
    const observed = (await kube.getClusterOrder(ns, "order-1"))!;
    const p = planFor(observed);
    expect(p.status.phase).toBe("Progressing");
    await writeStatus(kube, observed, p);
    const after = (await kube.getClusterOrder(ns, "order-1"))!;
    expect(after.status?.phase).toBe("Ready");
    expect(after.status?.readyWorkers).toBe(9);
    expect(after.status?.desiredWorkers).toBe(2);
    expect(after.status?.conditions?.map((c) => c.type)).toEqual(expect.arrayContaining(["ClusterAvailable", "WorkersFailed", "Managed"]));
  });

  it("a report never persists a new fence entry on its own", async () => {
    const ns = await createTestNamespace(kubeConfig(), "kstatus2");
    const observed = await newOrder(ns);
    const p = planFor(observed);
    expect(p.fence).toHaveLength(2);
    await writeStatus(kube, observed, p);
    const after = (await kube.getClusterOrder(ns, "order-1"))!;
    expect(after.status?.workers ?? []).toEqual([]);
    expect(after.status?.desiredWorkers).toBe(2);
  });
});
