// Reading a ClusterOrder and its BMIs in tests, with the invariants every end-to-end step must keep:
// no duplicate BMI per slot, no orphaned BMI (every live BMI of the order belongs to a status entry).
import * as k8s from "@kubernetes/client-node";
import { Filter, type FulfillmentClient } from "../../clients/fulfillment";
import { INFRAENV_AGENT_LABEL, infraEnvName, ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";

const GVP = { group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders" };

export class OrderProbe {
  private readonly api: k8s.CustomObjectsApi;
  constructor(kc: k8s.KubeConfig, readonly namespace: string, readonly name: string, private readonly f: FulfillmentClient) {
    this.api = kc.makeApiClient(k8s.CustomObjectsApi);
  }

  async order(): Promise<ClusterOrder | undefined> {
    try {
      return (await this.api.getNamespacedCustomObject({ ...GVP, namespace: this.namespace, name: this.name })) as ClusterOrder;
    } catch {
      return undefined;
    }
  }

  async bmis(uid: string) {
    return this.f.bareMetalInstances.listAll(Filter.labelsMatch({ [ORDER_LABEL]: uid }));
  }

  /** Names of the Agents of the order's InfraEnv. */
  async agents(): Promise<string[]> {
    const list = await this.api.listNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", plural: "agents",
      namespace: this.namespace, labelSelector: `${INFRAENV_AGENT_LABEL}=${infraEnvName(this.name)}` }) as { items: { metadata: { name: string } }[] };
    return list.items.map((a) => a.metadata.name);
  }

  async setCount(index: number, n: number): Promise<void> {
    await this.api.patchNamespacedCustomObject({ ...GVP, namespace: this.namespace, name: this.name,
      body: [{ op: "replace", path: `/spec/nodeRequests/${index}/numberOfNodes`, value: n }] },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch));
  }

  async annotate(key: string, value: string | null): Promise<void> {
    await this.api.patchNamespacedCustomObject({ ...GVP, namespace: this.namespace, name: this.name,
      body: { metadata: { annotations: { [key]: value } } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
  }

  async delete(): Promise<void> {
    await this.api.deleteNamespacedCustomObject({ ...GVP, namespace: this.namespace, name: this.name });
  }

  /** Duplicates and orphans among the live (not deleting) BMIs of the order; empty lists when sound. */
  async invariants(uid: string): Promise<{ duplicates: string[]; orphans: string[]; live: number }> {
    const order = await this.order();
    const live = (await this.bmis(uid)).filter((b) => !b.metadata?.deletion_timestamp);
    const names = live.map((b) => b.metadata?.name ?? "");
    const duplicates = names.filter((n, i) => names.indexOf(n) !== i);
    const known = new Set((order?.status?.workers ?? []).map((w) => w.bareMetalInstance?.name).filter(Boolean));
    const orphans = order ? names.filter((n) => !known.has(n)) : [];
    return { duplicates, orphans, live: live.length };
  }
}
