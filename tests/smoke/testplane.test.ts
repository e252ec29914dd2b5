// The test plane is a real apiserver: TLS with our CA, token auth, RBAC enforced, CRDs with validation.
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { kubeconfigYaml, readControlPlane } from "../../lab/controlplane";
import { runDir } from "../support/env";
import { eventuallyPasses } from "../support/eventually";
import { createTestNamespace, kubeConfig } from "../support/kube";

describe("test plane", () => {
  const kc = kubeConfig();

  it("serves a version-stamped kube-apiserver over TLS", async () => {
    const v = await kc.makeApiClient(k8s.VersionApi).getCode();
    expect(v.gitVersion).toMatch(/^v1\.(3[4-9]|[4-9][0-9])\.\d+$/);
  });

  it("installed the upstream CRDs and the project's ClusterOrder CRD, all Established", async () => {
    const crds = await kc.makeApiClient(k8s.ApiextensionsV1Api).listCustomResourceDefinition();
    const names = crds.items.map((c) => c.metadata!.name);
    expect(names).toEqual(expect.arrayContaining([
      "agents.agent-install.openshift.io", "infraenvs.agent-install.openshift.io", "nodepools.hypershift.openshift.io",
      "hostedclusters.hypershift.openshift.io", "clusterdeployments.hive.openshift.io", "clusterorders.osac.openshift.io",
    ]));
  });

  it("validates ClusterOrders: numberOfNodes must be at least 1", async () => {
    const ns = await createTestNamespace(kc, "cord");
    const api = kc.makeApiClient(k8s.CustomObjectsApi);
    const order = (n: number, name: string) => ({
      apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name, namespace: ns },
      spec: { templateID: "ocp_4_20_small", nodeRequests: [{ nodeSet: "compute", numberOfNodes: n, bareMetal: { instanceType: "compute" } }] },
    });
    const group = { group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders" };
    await api.createNamespacedCustomObject({ ...group, body: order(2, "good") });
    await expect(api.createNamespacedCustomObject({ ...group, body: order(0, "bad") })).rejects.toMatchObject({ code: 422 });
    // templateID is immutable
    await expect(api.patchNamespacedCustomObject({ ...group, name: "good", body: { spec: { templateID: "other" } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch))).rejects.toMatchObject({ code: 422 });
  });

  it("enforces RBAC: an authenticated user without bindings is forbidden", async () => {
    const cp = readControlPlane(path.join(runDir(), "controlplane"))!;
    const token = fs.readFileSync(path.join(runDir(), "controlplane", "pki", "unprivileged.token"), "utf8").trim();
    const other = new k8s.KubeConfig();
    other.loadFromString(kubeconfigYaml(cp.server, cp.caFile, token, "unprivileged"));
    await expect(other.makeApiClient(k8s.CoreV1Api).listNamespace()).rejects.toMatchObject({ code: 403 });
    const review = await other.makeApiClient(k8s.AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    expect(review.status?.userInfo?.username).toBe("unprivileged");
  });

  it("garbage-collects dependents through ownerReferences and finishes namespace deletion", async () => {
    const ns = await createTestNamespace(kc, "gc");
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "owner" } } });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "dependent", ownerReferences: [
      { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata!.uid! }] } } });
    await core.deleteNamespacedConfigMap({ namespace: ns, name: "owner" });
    await eventuallyPasses(async () => {
      await expect(core.readNamespacedConfigMap({ namespace: ns, name: "dependent" })).rejects.toMatchObject({ code: 404 });
    });
    await core.deleteNamespace({ name: ns });
    await eventuallyPasses(async () => {
      await expect(core.readNamespace({ name: ns })).rejects.toMatchObject({ code: 404 });
    });
  });

  it("rejects requests without a valid token", async () => {
    const cp = readControlPlane(path.join(runDir(), "controlplane"))!;
    const anon = new k8s.KubeConfig();
    anon.loadFromString(kubeconfigYaml(cp.server, cp.caFile, "not-a-valid-token", "nobody"));
    await expect(anon.makeApiClient(k8s.CoreV1Api).listNamespace()).rejects.toMatchObject({ code: 401 });
  });
});
