// One ClusterOrder's stack under Pulumi's runtime mocks: the hub provider, the InfraEnv, the NodePool
// replica patches and one worker per planned slot, with the names, parents and options `up` relies on.
import * as k8s from "@pulumi/kubernetes";
import { BareMetalWorker } from "../../components/bareMetalWorker";
import { ClusterWorkers, type ClusterWorkersArgs } from "../../components/clusterWorkers";
import type { Plan } from "../../planner/types";
import { bmRequest, NS, ORDER, planOf, UID } from "../planner/builders";
import { allRegistered, created, installMocks, recorder, type Registered } from "./mocks";

const FULFILLMENT = { address: "fulfillment.example:8443", tokenFile: "/run/secrets/fulfillment/token" };
const KUBECONFIG = "/run/secrets/hub/kubeconfig";
const INFRAENV_TYPE = "kubernetes:agent-install.openshift.io/v1beta1:InfraEnv";
const NODEPOOL_PATCH_TYPE = "kubernetes:hypershift.openshift.io/v1beta1:NodePoolPatch";

beforeAll(installMocks);

function args(plan: ClusterWorkersArgs["plan"]): ClusterWorkersArgs {
  return { plan, namespace: NS, orderName: ORDER, orderUid: UID, fulfillment: FULFILLMENT, kubeconfigPath: KUBECONFIG };
}

async function declare(name: string, plan: ClusterWorkersArgs["plan"]): Promise<{ component: ClusterWorkers; registered: Registered[] }> {
  const { record, registered } = recorder();
  const component = new ClusterWorkers(name, args(plan), { transformations: [record] });
  await allRegistered(registered);
  return { component, registered };
}

function ofType(registered: Registered[], type: string): Registered[] {
  return registered.filter((r) => r.type === type);
}

/** A new order of two compute workers across two node sets' pools, as the planner declares it. */
function twoPoolPlan(): Plan {
  return planOf({
    nodeRequests: [bmRequest("compute", 2), bmRequest("gpu", 1, "bm.gpu")],
    nodePools: [
      { name: "np-gpu", namespace: NS, nodeSet: "gpu", replicas: 0, statusReplicas: 0 },
      { name: "np-compute", namespace: NS, nodeSet: "compute", replicas: 0, statusReplicas: 0 },
    ],
  });
}

describe("ClusterWorkers", () => {
  it("declares one hub provider, the InfraEnv, a patch per NodePool and a worker per planned slot, all under the component", async () => {
    const plan = twoPoolPlan();
    const { component, registered } = await declare("co-a", plan);
    expect(registered.filter((r) => r.opts.parent === component).map((r) => [r.type, r.name])).toEqual([
      ["pulumi:providers:kubernetes", "co-a-hub"],
      [INFRAENV_TYPE, "co-a-infraenv"],
      [NODEPOOL_PATCH_TYPE, "co-a-nodepool-np-compute"],
      [NODEPOOL_PATCH_TYPE, "co-a-nodepool-np-gpu"],
      ...plan.workers.map((w) => ["baremetal-workers:index:BareMetalWorker", w.slot]),
    ]);
    expect(plan.workers).toHaveLength(3);
    expect(component.workers.map((w) => w instanceof BareMetalWorker)).toEqual([true, true, true]);
  });

  it("declares the workers of `later` only when asked, under the same component and names (a new order's BMIs, F18)", async () => {
    const plan = twoPoolPlan();
    const later = plan.workers.slice(1);
    const { record, registered } = recorder();
    const component = new ClusterWorkers("co-l", { ...args(plan), later: new Set(later.map((w) => w.slot)) }, { transformations: [record] });
    await allRegistered(registered);
    expect(component.workers.map((w) => w.bmi)).toHaveLength(1);
    expect(registered.filter((r) => r.type === "baremetal-workers:index:BareMetalWorker").map((r) => r.name)).toEqual([plan.workers[0].slot]);
    for (const w of later) component.declareWorker(w);
    await allRegistered(registered);
    const workers = registered.filter((r) => r.type === "baremetal-workers:index:BareMetalWorker");
    expect(workers.map((r) => r.name)).toEqual(plan.workers.map((w) => w.slot));
    expect(workers.every((r) => r.opts.parent === component)).toBe(true);
  });

  it("talks to the hub through the pulumi process's KUBECONFIG (no kubeconfig of its own), in the order's namespace, with server-side apply", async () => {
    await declare("co-b", twoPoolPlan());
    // "" and not the path: a kubeconfig given to the provider is copied, credentials included, into a temporary file at every run.
    expect(created.get("co-b-hub")!.inputs).toMatchObject({ kubeconfig: "", namespace: NS, enableServerSideApply: "true" });
    // One cluster whatever kubeconfig reaches it: a kubeconfig change never replaces the InfraEnv or the NodePool patch.
    expect(created.get("co-b-hub")!.inputs).toMatchObject({ clusterIdentifier: "osac-hub" });
  });

  it("owns the InfraEnv by the ClusterOrder (no blocking GC) and replaces it delete-first", async () => {
    const plan = twoPoolPlan();
    const { registered } = await declare("co-c", plan);
    const [infraEnv] = ofType(registered, INFRAENV_TYPE);
    expect(infraEnv.opts.deleteBeforeReplace).toBe(true);
    // Its status holds the discovery URLs, whose api_key opens the ignition: encrypted in state.
    expect(infraEnv.opts.additionalSecretOutputs).toEqual(["status"]);
    expect(infraEnv.opts.provider).toBeInstanceOf(k8s.Provider);
    expect(created.get("co-c-infraenv")!.inputs).toMatchObject({
      metadata: {
        name: plan.infraEnv!.name, namespace: NS,
        ownerReferences: [{ apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", name: ORDER, uid: UID, controller: true, blockOwnerDeletion: false }],
      },
      spec: { pullSecretRef: { name: plan.infraEnv!.pullSecretName }, sshAuthorizedKey: "ssh-ed25519 AAAAtest" },
    });
    expect((created.get("co-c-infraenv")!.inputs.spec as Record<string, unknown>).clusterRef).toBeUndefined();
  });

  it("patches only spec.replicas of each NodePool, forced under our field manager, and never releases it on removal", async () => {
    const plan = twoPoolPlan();
    const { registered } = await declare("co-d", plan);
    for (const patch of ofType(registered, NODEPOOL_PATCH_TYPE)) {
      expect(patch.opts.retainOnDelete).toBe(true);
      expect(patch.opts.deleteBeforeReplace).toBeFalsy();
    }
    expect(created.get("co-d-nodepool-np-gpu")!.inputs).toEqual({
      apiVersion: "hypershift.openshift.io/v1beta1", kind: "NodePool",
      metadata: { name: "np-gpu", namespace: NS, annotations: { "pulumi.com/patchForce": "true", "pulumi.com/patchFieldManager": "baremetal-workers" } },
      spec: { replicas: plan.nodePoolReplicas["np-gpu"] },
    });
    expect(plan.nodePoolReplicas).toEqual({ "np-compute": 2, "np-gpu": 1 });
  });

  it("declares no InfraEnv when the plan has none, and nothing but the provider for an empty plan", async () => {
    const { registered } = await declare("co-e", { nodePoolReplicas: {}, workers: [] });
    expect(registered.map((r) => r.type)).toEqual(["baremetal-workers:index:ClusterWorkers", "pulumi:providers:kubernetes"]);
  });

  it("keeps a slot's URN when other slots come and go (workers are named by slot, not position)", async () => {
    const plan = twoPoolPlan();
    const [first, second, third] = plan.workers;
    const urnOf = async (p: ClusterWorkersArgs["plan"], slot: string) => {
      const { registered } = await declare("co-f", p);
      const urns = await allRegistered(registered);
      return urns[registered.findIndex((r) => r.type === "baremetal-workers:index:BareMetalWorker" && r.name === slot)];
    };
    expect(await urnOf({ ...plan, workers: [first, second, third] }, third.slot))
      .toEqual(await urnOf({ ...plan, workers: [third] }, third.slot));
  });
});
