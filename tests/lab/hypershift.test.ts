// The sample order world and the HyperShift/CAPI stand-in: NodePool scale-up installs bound, approved
// Agents matching the selector; scale-down unbinds one into unbinding-pending-user-action.
import * as fs from "node:fs";
import * as k8s from "@kubernetes/client-node";
import type { Lab, SampleOrder } from "../../lab";
import { statusFor } from "../../lab/controllers/assisted/agentStates";
import type { Agent, NodePool } from "../../lab/controllers/types";
import { Kube, KubeObject, RESOURCES } from "../../lab/kube";
import { eventually, eventuallyPasses } from "../support/eventually";
import { startTestLab } from "./helpers";

let lab: Lab;
let kube: Kube;

beforeAll(async () => {
  lab = await startTestLab("hypershift");
  kube = new Kube(lab.kubeConfig());
});

afterAll(async () => {
  await lab?.stop();
  if (lab) fs.rmSync(lab.dir, { recursive: true, force: true });
});

/** Every debugInfo.state each Agent of `ns` passes through, from a watch (no polling gaps). */
function recordStates(ns: string): { states: Map<string, string[]>; stop: () => void } {
  const states = new Map<string, string[]>();
  let ctrl: AbortController | undefined;
  void new k8s.Watch(lab.kubeConfig()).watch(`/apis/agent-install.openshift.io/v1beta1/namespaces/${ns}/agents`, {},
    (_phase: string, obj: Agent) => {
      const s = obj.status?.debugInfo?.state;
      if (!s) return;
      const seen = states.get(obj.metadata.name) ?? [];
      if (seen[seen.length - 1] !== s) seen.push(s);
      states.set(obj.metadata.name, seen);
    }, () => undefined).then((c) => (ctrl = c));
  return { states, stop: () => ctrl?.abort() };
}

async function registeredAgent(ns: string, name: string, labels: Record<string, string>): Promise<void> {
  await kube.create<Agent>(RESOURCES.agent, {
    metadata: { name, namespace: ns, labels: { "infraenvs.agent-install.openshift.io": "x-infraenv", ...labels } },
    spec: { approved: false, role: "" },
  });
  await kube.patchStatus(RESOURCES.agent, ns, name, {
    ...statusFor("known-unbound", new Date().toISOString()),
    inventory: { interfaces: [{ name: "eno1", macAddress: `52:54:00:00:00:${name.slice(-2)}`, flags: [], ipV4Addresses: [], ipV6Addresses: [] }] },
  });
}

async function bind(order: SampleOrder, name: string, approved = true): Promise<void> {
  await kube.patch(RESOURCES.agent, order.namespace, name, { spec: { approved, role: "worker", clusterDeploymentName: order.clusterDeployment } });
}

const stateOf = async (ns: string, name: string) => (await kube.get<Agent>(RESOURCES.agent, ns, name))?.status?.debugInfo?.state;
const npReplicas = async (o: SampleOrder) => (await kube.get<NodePool>(RESOURCES.nodePool, o.namespace, o.nodePools.compute))?.status?.replicas ?? 0;
const scale = (o: SampleOrder, replicas: number) => kube.patch(RESOURCES.nodePool, o.namespace, o.nodePools.compute, { spec: { replicas } });

test("createSampleOrder leaves the world AAP and the fulfillment controller leave", async () => {
  const ns = `lab-order-${process.pid}-${Date.now().toString(36)}`;
  const order = await lab.createSampleOrder({
    namespace: ns, name: "shop",
    nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }, { nodeSet: "gpu", numberOfNodes: 1, instanceType: "gpu" }],
  });
  const co = await kube.get<KubeObject<{ nodeRequests: unknown[]; networkAttachment: unknown }, { clusterReference: Record<string, string> }>>(RESOURCES.clusterOrder, ns, "shop");
  expect(co?.metadata.labels?.["osac.openshift.io/clusterorder-uuid"]).toBe(order.clusterId);
  expect(co?.spec?.nodeRequests).toEqual([
    { nodeSet: "compute", numberOfNodes: 2, bareMetal: { instanceType: "compute" } },
    { nodeSet: "gpu", numberOfNodes: 1, bareMetal: { instanceType: "gpu" } },
  ]);
  expect(co?.spec?.networkAttachment).toEqual({ subnetRef: "acme-workers-subnet", securityGroupRefs: ["acme-workers-sg"] });
  expect(co?.status?.clusterReference).toEqual(expect.objectContaining({ namespace: ns, hostedClusterName: "shop" }));

  const np = await kube.get<NodePool>(RESOURCES.nodePool, ns, order.nodePools.gpu);
  expect(np?.metadata.labels).toEqual({ "osac.openshift.io/clusterorder": "shop", "osac.openshift.io/node-set": "gpu" });
  expect(np?.spec?.replicas).toBe(0);
  expect(np?.spec?.platform).toEqual({ type: "Agent", agent: { agentLabelSelector: { matchLabels: { agentBareMetal: "true", "osac.openshift.io/node-set": "gpu" } } } });
  expect(await kube.get(RESOURCES.hostedCluster, ns, "shop")).toBeDefined();
  expect(await kube.get(RESOURCES.clusterDeployment, order.clusterDeployment.namespace, "shop")).toBeDefined();
  const secret = await kube.core.readNamespacedSecret({ namespace: ns, name: "shop-pull-secret" });
  expect(secret.type).toBe("kubernetes.io/dockerconfigjson");
  expect(Buffer.from(secret.data?.[".dockerconfigjson"] ?? "", "base64").toString()).toContain(lab.pullSecret.token);

  const client = lab.fulfillmentClient();
  try {
    const cluster = await client.clusters.get(order.clusterId);
    expect(cluster.metadata?.tenant).toBe("acme");
    expect(Object.keys(cluster.spec?.node_sets ?? {}).sort()).toEqual(["compute", "gpu"]);
  } finally {
    client.close();
  }
  // Creating it again adopts what exists.
  expect((await lab.createSampleOrder({ namespace: ns, name: "shop", nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }, { nodeSet: "gpu", numberOfNodes: 1, instanceType: "gpu" }] })).uid).toBe(order.uid);
});

test("scale-up installs bound, approved, matching Agents; scale-down unbinds one into unbinding-pending-user-action", async () => {
  const ns = `lab-np-${process.pid}-${Date.now().toString(36)}`;
  const order = await lab.createSampleOrder({ namespace: ns, name: "np", nodeRequests: [{ nodeSet: "compute", numberOfNodes: 3, instanceType: "compute" }] });
  const rec = recordStates(ns);
  try {
    const compute = { agentBareMetal: "true", "osac.openshift.io/node-set": "compute" };
    for (const a of ["agent-01", "agent-02", "agent-03", "agent-04", "agent-05", "agent-06"]) {
      await registeredAgent(ns, a, a === "agent-06" ? { agentBareMetal: "true", "osac.openshift.io/node-set": "gpu" } : compute);
    }
    for (const a of ["agent-01", "agent-02", "agent-03", "agent-06"]) await bind(order, a);
    await bind(order, "agent-05", false); // bound, never approved
    // agent-04 is approved but never bound.
    await kube.patch(RESOURCES.agent, ns, "agent-04", { spec: { approved: true } });
    await eventuallyPasses(async () => {
      for (const a of ["agent-01", "agent-02", "agent-03", "agent-05", "agent-06"]) expect(await stateOf(ns, a)).toBe("known");
    }, 10_000);

    await scale(order, 2);
    await eventuallyPasses(async () => expect(await npReplicas(order)).toBe(2), 10_000);
    const states = await Promise.all(["agent-01", "agent-02", "agent-03"].map((a) => stateOf(ns, a)));
    expect(states).toEqual(["added-to-existing-cluster", "added-to-existing-cluster", "known"]);
    // The watch may trail the reads above: wait for it to have seen the same.
    await eventuallyPasses(async () => {
      for (const a of ["agent-01", "agent-02"]) expect(rec.states.get(a)).toEqual(["known-unbound", "binding", "known", "installing", "added-to-existing-cluster"]);
    }, 10_000);

    await scale(order, 3);
    await eventuallyPasses(async () => expect(await npReplicas(order)).toBe(3), 10_000);
    expect(await stateOf(ns, "agent-03")).toBe("added-to-existing-cluster");

    await scale(order, 2);
    const released = await eventually(async () => {
      const agents = await kube.list<Agent>(RESOURCES.agent, ns);
      const gone = agents.filter((a) => a.status?.debugInfo?.state === "unbinding-pending-user-action");
      return gone.length === 1 ? gone[0] : undefined;
    }, 10_000);
    expect(released.spec?.clusterDeploymentName?.name).toBeUndefined();
    expect(["agent-01", "agent-02", "agent-03"]).toContain(released.metadata.name);
    await eventuallyPasses(async () => expect(rec.states.get(released.metadata.name)?.slice(-2)).toEqual(["unbinding", "unbinding-pending-user-action"]), 10_000);
    await eventuallyPasses(async () => expect(await npReplicas(order)).toBe(2), 10_000);

    // Never installed: the unbound one, the unapproved one, the one of another node set.
    await new Promise((r) => setTimeout(r, 500));
    expect(await stateOf(ns, "agent-04")).toBe("known-unbound");
    expect(await stateOf(ns, "agent-05")).toBe("known");
    expect(await stateOf(ns, "agent-06")).toBe("known");
    for (const a of ["agent-04", "agent-05", "agent-06"]) expect(rec.states.get(a)).not.toContain("installing");
  } finally {
    rec.stop();
  }
});
