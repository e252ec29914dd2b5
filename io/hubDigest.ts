// A digest of each order's hub objects that the loop's watches follow (Agents, InfraEnvs, NodePools), by
// name and resourceVersion: how a restarted reconciler tells that nothing it would have been told about
// by a watch changed for an order settled before the restart (controller/settledOrders.ts). It covers the
// objects a watch event of which ends the order's settled state in a running process (controller/loop.ts
// orderOf), no more: a restored record is exactly as strict as the watches. The same objects digest alike
// whether an observation read them whole (io/observe.ts) or a listing read only their metadata. A digest
// only ever lets a reconcile be skipped; it never stands in for an observation.
import * as crypto from "node:crypto";
import type { ObjectMeta } from "../clients/kube";
import { INFRAENV_AGENT_LABEL, infraEnvName, NODEPOOL_ORDER_LABEL, ORDER_LABEL } from "../planner/names";

export type HubMeta = Pick<ObjectMeta, "name" | "namespace" | "resourceVersion" | "labels"> & {
  ownerReferences?: { kind?: string; name?: string }[];
};

/** Objects of one namespace, or of the order's selection of it (its Agents), by kind. */
export interface HubObjects {
  agents: readonly HubMeta[];
  infraEnvs: readonly HubMeta[];
  nodePools: readonly HubMeta[];
}

export interface OrderIdentity {
  namespace: string;
  name: string;
  uid: string;
}

/**
 * The order's objects among those given: its Agents (its InfraEnv label or its order label), the InfraEnvs
 * it owns and the NodePools labelled with its name, all in its namespace.
 */
export function orderHubDigest(order: OrderIdentity, objects: HubObjects): string {
  const ie = infraEnvName(order.name);
  const inNs = (o: HubMeta) => (o.namespace ?? order.namespace) === order.namespace;
  const agent = (a: HubMeta) => a.labels?.[INFRAENV_AGENT_LABEL] === ie || a.labels?.[ORDER_LABEL] === order.uid;
  const owned = (i: HubMeta) => (i.ownerReferences ?? []).some((o) => o.kind === "ClusterOrder" && o.name === order.name);
  const pool = (n: HubMeta) => n.labels?.[NODEPOOL_ORDER_LABEL] === order.name;
  const lines = [
    ...objects.agents.filter((a) => inNs(a) && agent(a)).map((o) => line("Agent", o)),
    ...objects.infraEnvs.filter((i) => inNs(i) && owned(i)).map((o) => line("InfraEnv", o)),
    ...objects.nodePools.filter((n) => inNs(n) && pool(n)).map((o) => line("NodePool", o)),
  ].sort();
  return crypto.createHash("sha256").update(lines.join("\n")).digest("hex");
}

function line(kind: string, o: HubMeta): string {
  return `${kind}\t${o.name ?? ""}\t${o.resourceVersion ?? ""}`;
}

/** The hub's objects of the three kinds by metadata alone, one paged list each, grouped by namespace. */
export async function listHubDigests(kube: { listMetadata(kind: "Agent" | "InfraEnv" | "NodePool"): Promise<HubMeta[]> }):
  Promise<(order: OrderIdentity) => string> {
  const [agents, infraEnvs, nodePools] = await Promise.all([kube.listMetadata("Agent"), kube.listMetadata("InfraEnv"), kube.listMetadata("NodePool")]);
  const byNs = new Map<string, { agents: HubMeta[]; infraEnvs: HubMeta[]; nodePools: HubMeta[] }>();
  const add = (kind: keyof HubObjects, list: HubMeta[]) => {
    for (const o of list) {
      const ns = o.namespace ?? "";
      const group = byNs.get(ns) ?? { agents: [], infraEnvs: [], nodePools: [] };
      group[kind].push(o);
      byNs.set(ns, group);
    }
  };
  add("agents", agents);
  add("infraEnvs", infraEnvs);
  add("nodePools", nodePools);
  const none: HubObjects = { agents: [], infraEnvs: [], nodePools: [] };
  return (order) => orderHubDigest(order, byNs.get(order.namespace) ?? none);
}
