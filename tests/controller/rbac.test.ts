// The deploy/ ClusterRole, bound to a real ServiceAccount token in the test plane: it can do what the
// reconciler does (status of ClusterOrders, Agents, InfraEnvs, NodePools, Events, its Lease) and
// cannot read or list any Secret, delete Namespaces or write outside its grants.
import * as k8s from "@kubernetes/client-node";
import { Kube } from "../../clients/kube";
import { kubeReachable } from "../../controller/health";
import { LeaderElector } from "../../controller/leader";
import { createTestNamespace, kubeConfig } from "../support/kube";
import { loadReconcilerRbac, reconcilerServiceAccount, ReconcilerIdentity } from "../support/rbac";

function code(e: unknown): number | undefined {
  return (e as { code?: number }).code;
}

/** The test plane's apiserver answers 429 "storage is (re)initializing" for a CRD's first seconds. */
async function settled<T>(call: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await call();
    } catch (e) {
      if (code(e) !== 429 || i >= 50) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function denied(p: Promise<unknown>): Promise<number | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return code(e);
  }
}

describe("deploy/reconciler.yaml RBAC", () => {
  const admin = kubeConfig();
  let ns = "";
  let system = "";
  let id: ReconcilerIdentity;
  beforeAll(async () => {
    ns = await createTestNamespace(admin, "rbac");
    system = await createTestNamespace(admin, "bmw-system");
    id = await reconcilerServiceAccount(admin, { namespace: system });
  });
  afterAll(async () => {
    await id?.cleanup();
  });

  it("declares the design's rules", () => {
    const { clusterRole, leaseRole } = loadReconcilerRbac();
    const verbs = (group: string, resource: string) =>
      clusterRole.rules!.filter((r) => r.apiGroups!.includes(group) && r.resources!.includes(resource)).flatMap((r) => r.verbs).sort();
    expect(verbs("agent-install.openshift.io", "agents")).toEqual(["delete", "get", "list", "patch", "watch"]);
    expect(verbs("agent-install.openshift.io", "infraenvs")).toEqual(["create", "delete", "get", "list", "patch", "update", "watch"]);
    expect(verbs("osac.openshift.io", "clusterorders/status")).toEqual(["get", "patch", "update"]);
    expect(clusterRole.rules!.some((r) => r.resources!.includes("*") || r.verbs.includes("*") || r.apiGroups!.includes("*"))).toBe(false);
    expect(leaseRole.rules).toEqual([{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "list", "create", "update"] }]);
  });

  it("authenticates as the ServiceAccount", async () => {
    const review = await id.kc.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    expect(review.status?.userInfo?.username).toBe(id.username);
    // the readiness probe's API check works with this identity
    expect(await kubeReachable(id.kc)).toMatchObject({ ok: true, detail: expect.stringMatching(/^kube-apiserver v1\.36/) });
  });

  it("can patch ClusterOrder status and the finalizer, and work with Agents, InfraEnvs, NodePools, Events", async () => {
    const adminCustom = admin.makeApiClient(k8s.CustomObjectsApi);
    await adminCustom.createNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders",
      body: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name: "order1" }, spec: { templateID: "t" } } });
    const kube = new Kube(id.kc);
    const orders = await kube.listClusterOrders();
    expect(orders.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toContain(`${ns}/order1`);
    const applied = await kube.applyClusterOrderStatus({ namespace: ns, name: "order1" }, { desiredWorkers: 2, currentWorkers: 0, readyWorkers: 0 });
    expect(applied.status?.desiredWorkers).toBe(2);

    const custom = id.kc.makeApiClient(k8s.CustomObjectsApi);
    const merge = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
    await custom.patchNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders",
      name: "order1", body: { metadata: { finalizers: ["osac.openshift.io/baremetalworker-finalizer"] } } }, merge);

    await custom.createNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", namespace: ns, plural: "infraenvs",
      body: { apiVersion: "agent-install.openshift.io/v1beta1", kind: "InfraEnv", metadata: { name: "order1-infraenv" },
        spec: { pullSecretRef: { name: "order1-pull-secret" } } } });
    await custom.deleteNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", namespace: ns, plural: "infraenvs", name: "order1-infraenv" });
    // what @pulumi/kubernetes does in server-side-apply mode: a dry-run apply (preview), then an apply that creates
    const apply = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply);
    const infraEnv = { apiVersion: "agent-install.openshift.io/v1beta1", kind: "InfraEnv", metadata: { name: "order1-infraenv", namespace: ns },
      spec: { pullSecretRef: { name: "order1-pull-secret" } } };
    for (const dryRun of ["All", undefined]) {
      await custom.patchNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", namespace: ns, plural: "infraenvs",
        name: "order1-infraenv", body: infraEnv, fieldManager: "baremetal-workers", force: true, dryRun }, apply);
    }
    await adminCustom.createNamespacedCustomObject({ group: "hypershift.openshift.io", version: "v1beta1", namespace: ns, plural: "nodepools",
      body: { apiVersion: "hypershift.openshift.io/v1beta1", kind: "NodePool", metadata: { name: "np1" },
        spec: { clusterName: "c", replicas: 0, management: { upgradeType: "InPlace" }, platform: { type: "Agent" }, release: { image: "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64" } } } });
    const replicas = { apiVersion: "hypershift.openshift.io/v1beta1", kind: "NodePool", metadata: { name: "np1", namespace: ns }, spec: { replicas: 2 } };
    const patched = await custom.patchNamespacedCustomObject({ group: "hypershift.openshift.io", version: "v1beta1", namespace: ns,
      plural: "nodepools", name: "np1", body: replicas, fieldManager: "baremetal-workers", force: true }, apply) as { spec: { replicas: number } };
    expect(patched.spec.replicas).toBe(2);

    await adminCustom.createNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", namespace: ns, plural: "agents",
      body: { apiVersion: "agent-install.openshift.io/v1beta1", kind: "Agent", metadata: { name: "agent1" }, spec: { approved: false, role: "worker" } } });
    await custom.patchNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", namespace: ns, plural: "agents",
      name: "agent1", body: { spec: { approved: true } } }, merge);
    await custom.deleteNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", namespace: ns, plural: "agents", name: "agent1" });

    await settled(() => custom.listNamespacedCustomObject({ group: "hypershift.openshift.io", version: "v1beta1", namespace: ns, plural: "nodepools" }));
    await settled(() => custom.listClusterCustomObject({ group: "hive.openshift.io", version: "v1", plural: "clusterdeployments" }));
    await settled(() => custom.listClusterCustomObject({ group: "hypershift.openshift.io", version: "v1beta1", plural: "hostedclusters" }));

    const order = (await kube.getClusterOrder(ns, "order1"))!;
    expect(await kube.createEvent(order, { type: "Normal", reason: "WorkerCreated", message: "created", name: "order1.workercreated" })).toBe(true);
  });

  it("grants no access to Secrets: the shipped role names none, and the API server refuses every verb", async () => {
    const { clusterRole, leaseRole } = loadReconcilerRbac();
    const secretRules = [...clusterRole.rules!, ...leaseRole.rules!]
      .filter((r) => r.apiGroups!.some((g) => g === "" || g === "*") && r.resources!.some((res) => res === "secrets" || res === "*"));
    expect(secretRules).toEqual([]);

    await admin.makeApiClient(k8s.CoreV1Api).createNamespacedSecret({ namespace: ns, body: { metadata: { name: "order1-pull-secret" },
      stringData: { ".dockerconfigjson": "{}" }, type: "kubernetes.io/dockerconfigjson" } });
    const core = id.kc.makeApiClient(k8s.CoreV1Api);
    expect(await denied(core.readNamespacedSecret({ namespace: ns, name: "order1-pull-secret" }))).toBe(403);
    expect(await denied(core.readNamespacedSecret({ namespace: system, name: "order1-pull-secret" }))).toBe(403);
    expect(await denied(core.listNamespacedSecret({ namespace: ns }))).toBe(403);
    expect(await denied(core.listSecretForAllNamespaces())).toBe(403);
    const review = await id.kc.makeApiClient(k8s.AuthorizationV1Api).createSelfSubjectRulesReview({ body: { spec: { namespace: ns } } });
    expect((review.status?.resourceRules ?? []).filter((r) => (r.resources ?? []).some((res) => res === "secrets" || res === "*"))).toEqual([]);
  });

  it("can hold its Lease in its own namespace only", async () => {
    const e = new LeaderElector({ client: new Kube(id.kc), namespace: system, name: "baremetal-workers", identity: "pod-0",
      leaseDurationSeconds: 5, retryPeriodMs: 500, renewDeadlineMs: 3_000 });
    expect(await e.tryAcquireOrRenew()).toBe(true);
    expect(await e.tryAcquireOrRenew()).toBe(true); // renew = conditional update
    const elsewhere = new LeaderElector({ client: new Kube(id.kc), namespace: ns, name: "baremetal-workers", identity: "pod-0",
      leaseDurationSeconds: 5, retryPeriodMs: 500, renewDeadlineMs: 3_000 });
    await expect(elsewhere.tryAcquireOrRenew()).rejects.toMatchObject({ code: 403 });
  });

  it("cannot list Secrets cluster-wide, delete Namespaces, create NodePools or touch RBAC", async () => {
    const core = id.kc.makeApiClient(k8s.CoreV1Api);
    expect(await denied(core.listSecretForAllNamespaces())).toBe(403);
    expect(await denied(core.listNamespacedSecret({ namespace: ns }))).toBe(403);
    expect(await denied(core.deleteNamespace({ name: ns }))).toBe(403);
    expect(await denied(core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: "x" } } }))).toBe(403);
    const custom = id.kc.makeApiClient(k8s.CustomObjectsApi);
    expect(await denied(custom.createNamespacedCustomObject({ group: "hypershift.openshift.io", version: "v1beta1", namespace: ns,
      plural: "nodepools", body: { apiVersion: "hypershift.openshift.io/v1beta1", kind: "NodePool", metadata: { name: "np" }, spec: {} } }))).toBe(403);
    expect(await denied(custom.deleteNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", namespace: ns,
      plural: "clusterorders", name: "order1" }))).toBe(403);
    expect(await denied(id.kc.makeApiClient(k8s.RbacAuthorizationV1Api).listClusterRole())).toBe(403);
  });
});
