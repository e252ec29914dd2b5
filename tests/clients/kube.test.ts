// The Kubernetes access layer against the run's real kube-apiserver: server-side apply ownership,
// resourceVersion/uid preconditions, typed errors, events, leases and watches.
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import {
  ConflictError, ForbiddenError, Kube, loadKubeConfig, NotFoundError, type AgentObject, type NodePoolObject,
} from "../../clients/kube";
import { listOrderAgents, observe } from "../../io/observe";
import { listHubDigests } from "../../io/hubDigest";
import { listUnwatchedDigests, unwatchedKeys } from "../../io/unwatched";
import { defaultPlannerConfig } from "../../planner/config";
import { fakeFulfillment } from "../fakes/fulfillment";
import { FIELD_MANAGER, INFRAENV_AGENT_LABEL, infraEnvName, ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";
import { runDir } from "../support/env";
import { eventually } from "../support/eventually";
import { createTestNamespace, kubeConfig } from "../support/kube";

let kc: k8s.KubeConfig;
let kube: Kube;
let custom: k8s.CustomObjectsApi;

beforeAll(() => {
  kc = kubeConfig();
  kube = new Kube(loadKubeConfig(process.env.KUBECONFIG));
  custom = kc.makeApiClient(k8s.CustomObjectsApi);
});

async function newOrder(ns: string, name = "order-1"): Promise<ClusterOrder> {
  return custom.createNamespacedCustomObject({
    group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders",
    body: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name, namespace: ns }, spec: { templateID: "osac.templates.ocp" } },
  });
}

async function newAgent(ns: string, name: string, labels: Record<string, string> = {}): Promise<AgentObject> {
  return kube.createAgent({ metadata: { name, namespace: ns, labels }, spec: { approved: false, role: "worker" } });
}

const condition = (type: string) => ({ type, status: "True" as const, reason: "Fine", message: "ok", lastTransitionTime: "2026-01-01T00:00:00Z" });

describe("ClusterOrder", () => {
  it("gets, lists, and reads a missing order as undefined", async () => {
    const ns = await createTestNamespace(kc, "kco");
    await newOrder(ns, "a");
    await newOrder(ns, "b");
    expect((await kube.getClusterOrder(ns, "a"))?.metadata.uid).toBeTruthy();
    expect(await kube.getClusterOrder(ns, "missing")).toBeUndefined();
    expect((await kube.listClusterOrders(ns)).map((o) => o.metadata.name).sort()).toEqual(["a", "b"]);
    expect((await kube.listClusterOrders()).filter((o) => o.metadata.namespace === ns)).toHaveLength(2);
  });

  it("applies status as its own field manager: other managers' fields survive, its own omitted ones go", async () => {
    const ns = await createTestNamespace(kc, "kssa");
    await newOrder(ns);
    // osac-operator owns the phase and a condition.
    await custom.patchNamespacedCustomObjectStatus({
      group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders", name: "order-1",
      body: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name: "order-1" },
        status: { phase: "Progressing", conditions: [condition("ClusterAvailable")] } },
      fieldManager: "osac-operator", force: true,
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply));

    const ref = { namespace: ns, name: "order-1" };
    await kube.applyClusterOrderStatus(ref, {
      desiredWorkers: 2, conditions: [condition("WorkersReady")],
      workers: [{ name: "slot-a", nodeSet: "compute", kind: "BareMetalInstance", phase: "Provisioning" },
        { name: "slot-b", nodeSet: "compute", kind: "BareMetalInstance", phase: "Provisioning" }],
    });
    let order = (await kube.getClusterOrder(ns, "order-1"))!;
    expect(order.status?.phase).toBe("Progressing");
    expect(order.status?.conditions?.map((c) => c.type).sort()).toEqual(["ClusterAvailable", "WorkersReady"]);
    expect(order.status?.workers?.map((w) => w.name)).toEqual(["slot-a", "slot-b"]);

    // slot-b is no longer reported: server-side apply removes the entry this manager owned.
    await kube.applyClusterOrderStatus(ref, {
      desiredWorkers: 1, conditions: [condition("WorkersReady")],
      workers: [{ name: "slot-a", nodeSet: "compute", kind: "BareMetalInstance", phase: "Ready" }],
    });
    order = (await kube.getClusterOrder(ns, "order-1"))!;
    expect(order.status?.workers).toEqual([{ name: "slot-a", nodeSet: "compute", kind: "BareMetalInstance", phase: "Ready" }]);
    expect(order.status?.phase).toBe("Progressing");
    expect(order.status?.conditions?.map((c) => c.type).sort()).toEqual(["ClusterAvailable", "WorkersReady"]);
    const managers = (order.metadata as { managedFields?: { manager: string; subresource?: string }[] }).managedFields ?? [];
    expect(managers.some((m) => m.manager === FIELD_MANAGER && m.subresource === "status")).toBe(true);
  });

  it("never forces: a field another manager owns with another value keeps that value, and the rest is written", async () => {
    const ns = await createTestNamespace(kc, "kforce");
    await newOrder(ns);
    // osac-operator owns the phase, a condition of its own and (say) a condition type we also write.
    await custom.patchNamespacedCustomObjectStatus({
      group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders", name: "order-1",
      body: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name: "order-1" },
        status: { phase: "Ready", desiredWorkers: 7, conditions: [condition("ClusterAvailable"), { ...condition("WorkersFailed"), reason: "OperatorSays" }] } },
      fieldManager: "osac-operator", force: true,
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply));

    const ref = { namespace: ns, name: "order-1" };
    const conflicts: string[][] = [];
    await kube.applyClusterOrderStatus(ref, {
      desiredWorkers: 2, currentWorkers: 0, readyWorkers: 0,
      conditions: [{ ...condition("WorkersFailed"), status: "False", reason: "NoFailures" }, condition("InfraEnvReady")],
      workers: [{ name: "slot-a", nodeSet: "compute", kind: "BareMetalInstance", phase: "Provisioning" }],
    }, { onFieldConflict: (f) => conflicts.push(f) });
    const order = (await kube.getClusterOrder(ns, "order-1"))!;
    // The other manager's values stand ...
    expect(order.status?.phase).toBe("Ready");
    expect(order.status?.desiredWorkers).toBe(7);
    expect(order.status?.conditions?.find((c) => c.type === "WorkersFailed")).toMatchObject({ status: "True", reason: "OperatorSays" });
    expect(order.status?.conditions?.find((c) => c.type === "ClusterAvailable")).toBeDefined();
    // ... and everything nobody else owns is written.
    expect(order.status?.conditions?.find((c) => c.type === "InfraEnvReady")?.status).toBe("True");
    expect(order.status?.workers?.map((w) => w.name)).toEqual(["slot-a"]);
    expect(order.status?.currentWorkers).toBe(0);
    expect(conflicts.flat().sort()).toEqual(expect.arrayContaining([".status.desiredWorkers", '.status.conditions[type="WorkersFailed"].status']));
  });

  it("makes a status write conditional on resourceVersion (409 → ConflictError)", async () => {
    const ns = await createTestNamespace(kc, "kcond");
    const created = await newOrder(ns);
    const ref = { namespace: ns, name: "order-1" };
    const stale = created.metadata.resourceVersion!;
    const fresh = await kube.applyClusterOrderStatus(ref, { desiredWorkers: 1 }, { resourceVersion: stale });
    expect(fresh.status?.desiredWorkers).toBe(1);
    const err = await kube.applyClusterOrderStatus(ref, { desiredWorkers: 5 }, { resourceVersion: stale }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).message).toMatch(/ClusterOrder .*order-1: 409/);
    expect((await kube.getClusterOrder(ns, "order-1"))?.status?.desiredWorkers).toBe(1);
  });

  it("patches finalizers and annotations with a resourceVersion precondition", async () => {
    const ns = await createTestNamespace(kc, "kmeta");
    const created = await newOrder(ns);
    const ref = { namespace: ns, name: "order-1" };
    const patched = await kube.patchClusterOrderMetadata(ref, { finalizers: ["example.com/f"], annotations: { a: "1" } },
      created.metadata.resourceVersion!);
    expect(patched.metadata.finalizers).toEqual(["example.com/f"]);
    await expect(kube.patchClusterOrderMetadata(ref, { finalizers: [] }, created.metadata.resourceVersion!)).rejects.toBeInstanceOf(ConflictError);
    await expect(kube.patchClusterOrderMetadata(ref, { finalizers: [] })).rejects.toThrow(/needs the observed resourceVersion/);
    const unannotated = await kube.patchClusterOrderMetadata(ref, { annotations: { a: null, b: "2" } });
    expect(unannotated.metadata.annotations).toEqual({ b: "2" });
    await kube.patchClusterOrderMetadata(ref, { finalizers: [] }, unannotated.metadata.resourceVersion!);
  });
});

describe("Agent", () => {
  it("merge-patches with a resourceVersion precondition: a stale one is a ConflictError", async () => {
    const ns = await createTestNamespace(kc, "kag");
    const agent = await newAgent(ns, "agent-1", { keep: "yes", drop: "yes" });
    const rv = agent.metadata.resourceVersion!;
    const patched = await kube.patchAgent(ns, "agent-1", {
      metadata: { labels: { added: "1", drop: null } }, spec: { approved: true, clusterDeploymentName: { name: "cd", namespace: ns } },
    }, rv);
    expect(patched.metadata.labels).toEqual({ keep: "yes", added: "1" });
    expect(patched.spec).toMatchObject({ approved: true, role: "worker", clusterDeploymentName: { name: "cd", namespace: ns } });
    const err = await kube.patchAgent(ns, "agent-1", { spec: { approved: false } }, rv).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((await kube.getAgent(ns, "agent-1"))?.spec?.approved).toBe(true);
    expect(await kube.getAgent(ns, "nope")).toBeUndefined();
    expect((await kube.listAgents(ns, "added=1")).map((a) => a.metadata.name)).toEqual(["agent-1"]);
  });

  it("writes status through the subresource", async () => {
    const ns = await createTestNamespace(kc, "kags");
    await newAgent(ns, "agent-1");
    const withStatus = await kube.patchAgentStatus(ns, "agent-1", {
      debugInfo: { state: "known-unbound" },
      inventory: { interfaces: [{ name: "eth0", macAddress: "52:54:00:00:00:01", flags: [], ipV4Addresses: [], ipV6Addresses: [] }] },
    });
    expect(withStatus.status?.debugInfo?.state).toBe("known-unbound");
    expect(withStatus.status?.inventory?.interfaces?.[0].macAddress).toBe("52:54:00:00:00:01");
  });

  it("deletes only with matching uid and resourceVersion preconditions", async () => {
    const ns = await createTestNamespace(kc, "kdel");
    const agent = await newAgent(ns, "agent-1");
    const { uid, resourceVersion } = agent.metadata;
    await expect(kube.deleteAgent(ns, "agent-1", { uid: "00000000-0000-0000-0000-000000000000" })).rejects.toBeInstanceOf(ConflictError);
    const touched = await kube.patchAgent(ns, "agent-1", { metadata: { labels: { touched: "1" } } }, resourceVersion!);
    await expect(kube.deleteAgent(ns, "agent-1", { uid: uid!, resourceVersion })).rejects.toBeInstanceOf(ConflictError);
    expect(await kube.getAgent(ns, "agent-1")).toBeDefined();
    await kube.deleteAgent(ns, "agent-1", { uid: uid!, resourceVersion: touched.metadata.resourceVersion });
    expect(await kube.getAgent(ns, "agent-1")).toBeUndefined();
    await expect(kube.deleteAgent(ns, "agent-1", { uid: uid! })).rejects.toBeInstanceOf(NotFoundError);
  });

  it("watches: events arrive until stopped, and onDone runs once", async () => {
    const ns = await createTestNamespace(kc, "kwatch");
    const seen: string[] = [];
    let doneCalls = 0;
    const stop = kube.watch<AgentObject>(`/apis/agent-install.openshift.io/v1beta1/namespaces/${ns}/agents`, {},
      (type, obj) => seen.push(`${type}:${obj.metadata.name}`), () => doneCalls++);
    try {
      // The watch starts asynchronously: create until the first event shows it is established.
      await eventually(async () => {
        if (!seen.length) await newAgent(ns, `w-${Date.now()}`).catch(() => undefined);
        return seen.length ? true : undefined;
      });
      expect(seen[0]).toMatch(/^ADDED:w-/);
    } finally {
      stop();
    }
    await new Promise((r) => setTimeout(r, 200));
    const count = seen.length;
    await newAgent(ns, "after-stop");
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.length).toBe(count);
    expect(doneCalls).toBeLessThanOrEqual(1);
  });

  it("a watch started from a collection's resourceVersion delivers only what came after it (no replay of existing objects)", async () => {
    const ns = await createTestNamespace(kc, "kresume");
    const path = `/apis/agent-install.openshift.io/v1beta1/namespaces/${ns}/agents`;
    await newAgent(ns, "before");
    const rv = await kube.collectionVersion(path);
    expect(rv).toMatch(/^\d+$/);
    // The cluster-wide collection has a version as well (what the loop's watches use).
    expect(await kube.collectionVersion("/apis/agent-install.openshift.io/v1beta1/agents")).toMatch(/^\d+$/);
    await newAgent(ns, "after");
    const resumed: string[] = [];
    const stop = kube.watch<AgentObject>(path, { allowWatchBookmarks: true, resourceVersion: rv },
      (type, obj) => { if (type !== "BOOKMARK") resumed.push(`${type}:${obj.metadata.name}`); }, () => undefined);
    try {
      await eventually(async () => (resumed.length ? true : undefined));
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      stop();
    }
    expect(resumed).toEqual(["ADDED:after"]);
    await expect(kube.collectionVersion("/api/v1/pods")).rejects.toThrow(/not a custom resource collection/);
  });
});

describe("NodePool, Secret, Event, Lease", () => {
  it("applies NodePool spec.replicas only, and reports a missing NodePool as NotFoundError", async () => {
    const ns = await createTestNamespace(kc, "knp");
    await custom.createNamespacedCustomObject({
      group: "hypershift.openshift.io", version: "v1beta1", namespace: ns, plural: "nodepools",
      body: { apiVersion: "hypershift.openshift.io/v1beta1", kind: "NodePool", metadata: { name: "hc1-workers", namespace: ns, labels: { l: "1" } },
        spec: { clusterName: "hc1", replicas: 2, management: { upgradeType: "InPlace" },
          platform: { type: "Agent", agent: { agentLabelSelector: { matchLabels: { agentBareMetal: "true" } } } },
          release: { image: "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64" } } },
    });
    const np: NodePoolObject = await kube.applyNodePoolReplicas(ns, "hc1-workers", 5);
    expect(np.spec?.replicas).toBe(5);
    expect(np.spec?.clusterName).toBe("hc1");
    expect(np.metadata.labels).toEqual({ l: "1" });
    expect((await kube.listNodePools(ns)).map((p) => p.spec?.replicas)).toEqual([5]);
    await expect(kube.applyNodePoolReplicas(ns, "missing", 1)).rejects.toBeInstanceOf(NotFoundError);
    expect(await kube.listNodePools(ns)).toHaveLength(1);
  });

  it("records an Event regarding the order once per name", async () => {
    const ns = await createTestNamespace(kc, "kev");
    const order = await newOrder(ns);
    expect(await kube.createEvent(order, { type: "Normal", reason: "WorkerCreated", message: "created worker slot-a", name: "order-1.abc" })).toBe(true);
    expect(await kube.createEvent(order, { type: "Normal", reason: "WorkerCreated", message: "again", name: "order-1.abc" })).toBe(false);
    expect(await kube.createEvent(order, { type: "Warning", reason: "Big", message: "m".repeat(5000) })).toBe(true);
    const events = (await custom.listNamespacedCustomObject({ group: "events.k8s.io", version: "v1", namespace: ns, plural: "events" })) as {
      items: { reason: string; note: string; type: string; reportingController: string; regarding: { uid: string; kind: string } }[] };
    expect(events.items).toHaveLength(2);
    const created = events.items.find((e) => e.reason === "WorkerCreated")!;
    expect(created).toMatchObject({ type: "Normal", note: "created worker slot-a", reportingController: FIELD_MANAGER,
      regarding: { uid: order.metadata.uid, kind: "ClusterOrder" } });
    expect(events.items.find((e) => e.reason === "Big")!.note.length).toBeLessThanOrEqual(1024);
  });

  it("creates, reads and conditionally replaces Leases", async () => {
    const ns = await createTestNamespace(kc, "klease");
    const now = "2026-01-01T00:00:00.000000Z";
    const lease = await kube.createLease({ metadata: { name: "bmw", namespace: ns },
      spec: { holderIdentity: "a", leaseDurationSeconds: 15, acquireTime: now, renewTime: now } });
    await expect(kube.createLease({ metadata: { name: "bmw", namespace: ns }, spec: { holderIdentity: "b" } })).rejects.toBeInstanceOf(ConflictError);
    const renewed = await kube.replaceLease({ ...lease, spec: { ...lease.spec, renewTime: "2026-01-01T00:00:05.000000Z" } });
    expect(renewed.spec?.renewTime).toBe("2026-01-01T00:00:05.000000Z");
    await expect(kube.replaceLease({ ...lease, spec: { ...lease.spec, holderIdentity: "b" } })).rejects.toBeInstanceOf(ConflictError);
    expect((await kube.getLease(ns, "bmw"))?.spec?.holderIdentity).toBe("a");
    expect(await kube.getLease(ns, "missing")).toBeUndefined();
  });
});

describe("errors and configuration", () => {
  it("maps 403 to ForbiddenError with the operation in the message", async () => {
    const ns = await createTestNamespace(kc, "kforbid");
    const token = fs.readFileSync(path.join(runDir(), "controlplane", "pki", "unprivileged.token"), "utf8").trim();
    const restricted = new k8s.KubeConfig();
    restricted.loadFromClusterAndUser(kc.getCurrentCluster()!, { name: "unprivileged", token });
    const err = await new Kube(restricted).listAgents(ns).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ForbiddenError);
    expect((err as Error).message).toMatch(new RegExp(`list agents in ${ns}: 403`));
    expect((err as Error).message).not.toContain(token);
  });

  it("loads a kubeconfig from a path or $KUBECONFIG, and fails clearly without one", () => {
    expect(loadKubeConfig(process.env.KUBECONFIG).getCurrentCluster()?.server).toMatch(/^https:\/\/127\.0\.0\.1:/);
    const saved = process.env.KUBECONFIG;
    try {
      delete process.env.KUBECONFIG;
      const savedHost = process.env.KUBERNETES_SERVICE_HOST;
      delete process.env.KUBERNETES_SERVICE_HOST;
      expect(() => loadKubeConfig()).toThrow(/no Kubernetes configuration/);
      if (savedHost) process.env.KUBERNETES_SERVICE_HOST = savedHost;
    } finally {
      process.env.KUBECONFIG = saved;
    }
    expect(loadKubeConfig().getCurrentCluster()).toBeTruthy();
  });
});

describe("the Agents observed for an order", () => {
  it("are those with its InfraEnv label or its order label, each once; other orders' Agents are not read", async () => {
    const ns = await createTestNamespace(kc, "kag");
    const order = await newOrder(ns, "order-a");
    const other = await newOrder(ns, "order-b");
    await newAgent(ns, "by-infraenv", { [INFRAENV_AGENT_LABEL]: infraEnvName("order-a") });
    await newAgent(ns, "by-order", { [ORDER_LABEL]: order.metadata.uid });
    await newAgent(ns, "by-both", { [INFRAENV_AGENT_LABEL]: infraEnvName("order-a"), [ORDER_LABEL]: order.metadata.uid });
    // Claimed by another order while carrying our InfraEnv label: listed, and the planner's isOurAgent rejects it.
    await newAgent(ns, "claimed", { [INFRAENV_AGENT_LABEL]: infraEnvName("order-a"), [ORDER_LABEL]: other.metadata.uid });
    await newAgent(ns, "other-order", { [INFRAENV_AGENT_LABEL]: infraEnvName("order-b"), [ORDER_LABEL]: other.metadata.uid });
    await newAgent(ns, "unlabelled");
    const names = (await listOrderAgents(kube, order)).map((a) => a.metadata.name).sort();
    expect(names).toEqual(["by-both", "by-infraenv", "by-order", "claimed"]);
  });

  it("digest alike from the order's observation and from one metadata listing of the hub; a change to one of them moves it", async () => {
    const ns = await createTestNamespace(kc, "kdig");
    const order = await newOrder(ns, "order-a");
    const other = await newOrder(ns, "order-b");
    const mine = await newAgent(ns, "mine", { [INFRAENV_AGENT_LABEL]: infraEnvName("order-a") });
    const theirs = await newAgent(ns, "theirs", { [ORDER_LABEL]: other.metadata.uid });
    const id = { namespace: ns, name: "order-a", uid: order.metadata.uid };
    const fulfillment = await fakeFulfillment();
    const observed = async () => (await observe({ kube, fulfillment, config: defaultPlannerConfig() }, id)).hubDigest;
    const listed = async () => (await listHubDigests(kube))(id);
    const before = await observed();
    expect(await listed()).toBe(before);
    expect((await kube.listMetadata("Agent")).find((m) => m.name === "mine")).toMatchObject({ namespace: ns, resourceVersion: mine.metadata.resourceVersion });
    await kube.patchAgent(ns, "theirs", { metadata: { labels: { extra: "1" } } }, theirs.metadata.resourceVersion!);
    expect(await listed()).toBe(before); // another order's Agent
    await kube.patchAgent(ns, "mine", { metadata: { labels: { extra: "1" } } }, mine.metadata.resourceVersion!);
    const after = await listed();
    expect(after).not.toBe(before);
    expect(await observed()).toBe(after);
  });

  it("the unwatched inputs digest alike from the observation and from one pass's listing of every ClusterDeployment", async () => {
    const ns = await createTestNamespace(kc, "kuw");
    await newOrder(ns, "order-a");
    await custom.patchNamespacedCustomObjectStatus({ group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders",
      name: "order-a", body: { status: { clusterReference: { namespace: ns, hostedClusterName: "hc-a", roleBindingName: "rb", serviceAccountName: "sa" } } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const fulfillment = await fakeFulfillment();
    const observed = () => observe({ kube, fulfillment, config: defaultPlannerConfig() }, { namespace: ns, name: "order-a" });
    const listed = async () => {
      const order = (await kube.getClusterOrder(ns, "order-a"))!;
      const digestOf = await listUnwatchedDigests({ listClusterDeployments: () => kube.listMetadata("ClusterDeployment"), fulfillment });
      return digestOf(unwatchedKeys(order));
    };
    const newCd = (namespace: string) => custom.createNamespacedCustomObject({ group: "hive.openshift.io", version: "v1", namespace,
      plural: "clusterdeployments", body: { apiVersion: "hive.openshift.io/v1", kind: "ClusterDeployment", metadata: { name: "hc-a" },
        spec: { baseDomain: "example.com", clusterName: "hc-a", platform: { agentBareMetal: { agentSelector: {} } } } } });
    const seen: (string | undefined)[] = [];
    for (const [step, where] of [["none", undefined], ["beside the HostedCluster", ns], ["in the hosted control plane namespace", `${ns}-hc-a`]] as const) {
      if (where === `${ns}-hc-a`) await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: where } } });
      if (where) await newCd(where);
      const o = await observed();
      expect([step, o.snapshot.clusterDeployment]).toEqual([step, where ? { name: "hc-a", namespace: where } : undefined]);
      expect([step, await listed()]).toEqual([step, o.unwatchedDigest]);
      seen.push(o.unwatchedDigest);
    }
    expect(new Set(seen).size).toBe(3);
  });

  it("skips a label value no Agent can carry (an InfraEnv name over 63 characters) instead of failing", async () => {
    const ns = await createTestNamespace(kc, "kag");
    const long = await newOrder(ns, `o-${"x".repeat(60)}`);
    await newAgent(ns, "by-order", { [ORDER_LABEL]: long.metadata.uid });
    expect((await listOrderAgents(kube, long)).map((a) => a.metadata.name)).toEqual(["by-order"]);
  });
});
