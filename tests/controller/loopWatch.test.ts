// The loop's watches against the run's real kube-apiserver: a watch that ends (client-node's 30 s idle
// timeout, here forced every second) resumes where it stopped instead of listing every object again,
// so idle orders are not reconciled again on each restart, and changes still arrive afterwards.
import * as k8s from "@kubernetes/client-node";
import { Kube, loadKubeConfig } from "../../clients/kube";
import { ReconcileLoop } from "../../controller/loop";
import { eventually } from "../support/eventually";
import { createTestNamespace, kubeConfig } from "../support/kube";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The real access layer, except that every watch is ended after `afterMs` the way client-node ends an idle one. */
function endingWatches(kube: Kube, afterMs: number): { kube: Kube; restarts: () => number } {
  let restarts = 0;
  const wrapped = Object.create(kube) as Kube;
  wrapped.watch = (path, query, onEvent, onDone) => {
    const stop = kube.watch(path, query, onEvent, () => undefined);
    const timer = setTimeout(() => {
      stop();
      restarts++;
      onDone(new DOMException("The operation was aborted due to timeout", "TimeoutError"));
    }, afterMs);
    return () => {
      clearTimeout(timer);
      stop();
    };
  };
  return { kube: wrapped, restarts: () => restarts };
}

describe("ReconcileLoop watches on a real apiserver", () => {
  let loop: ReconcileLoop | undefined;
  afterEach(() => loop?.stop());

  it("restarted watches do not re-enqueue unchanged orders, and still deliver changes", async () => {
    const kc = kubeConfig();
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const ns = await createTestNamespace(kc, "lwatch");
    const names = ["o1", "o2", "o3"];
    for (const name of names) {
      await custom.createNamespacedCustomObject({
        group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders",
        body: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name, namespace: ns }, spec: { templateID: "osac.templates.ocp" } },
      });
    }
    const { kube, restarts } = endingWatches(new Kube(loadKubeConfig(process.env.KUBECONFIG)), 1_000);
    const runs = new Map<string, number>();
    loop = new ReconcileLoop({
      kube, log: () => undefined, namespaces: [ns], intervalMs: 600_000, debounceMs: 0,
      reconcile: async (ref) => {
        runs.set(ref.name, (runs.get(ref.name) ?? 0) + 1);
        return { action: "skipped" };
      },
    });
    await loop.start();
    // The tick and the watches' first listing (ADDED for each order) settle.
    await eventually(async () => (names.every((n) => runs.get(n)) ? true : undefined));
    await sleep(1_500);
    const settled = new Map(runs);
    const restartsBefore = restarts();
    await sleep(6_000);
    // Every watch ended and restarted several times; no order was reconciled again for it.
    expect(restarts() - restartsBefore).toBeGreaterThanOrEqual(4 * 4);
    expect(runs).toEqual(settled);
    // A change after those restarts still reaches the loop.
    await custom.patchNamespacedCustomObject({
      group: "osac.openshift.io", version: "v1alpha1", namespace: ns, plural: "clusterorders", name: "o2",
      body: { metadata: { labels: { touched: "yes" } } },
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    await eventually(async () => ((runs.get("o2") ?? 0) > settled.get("o2")! ? true : undefined));
    expect(runs.get("o1")).toBe(settled.get("o1"));
  });
});
