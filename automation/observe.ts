// Observation: everything the planner needs about one ClusterOrder, read from the hub and the
// fulfillment-service, turned into a planner Snapshot. This is the only place where live objects are
// translated into planner types; the planner itself never does I/O.
import * as crypto from "node:crypto";
import type { FulfillmentClient } from "../clients/fulfillment";
import { Filter, isTransient, observedBmi, resolveDiskImage } from "../clients/fulfillment";
import type { BareMetalInstanceTypeOut, ClusterOut, ClusterVersionOut } from "../clients/fulfillment";
import { fetchIgnition } from "../clients/ignition";
import type { ObserveCache } from "./observeCache";
import type { AgentObject, Kube } from "../clients/kube";
import {
  INFRAENV_AGENT_LABEL, INFRAENV_UID_ANNOTATION, infraEnvName, NODE_SET_LABEL, ORDER_LABEL, SYSTEM_CATALOG_ITEM,
} from "../planner/names";
import type {
  ClusterOrder, DiskImageResolution, IgnitionFetch, InstanceTypeInfo, ObservedAgent, ObservedBmi, ObservedInfraEnv,
  ObservedNodePool, PlannerConfig, Snapshot,
} from "../planner/types";

export interface OrderRef {
  namespace: string;
  name: string;
}

export function parseOrderRef(text: string): OrderRef {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(text);
  if (!m) throw new Error(`'${text}' is not a ClusterOrder reference of the form <namespace>/<name>`);
  return { namespace: m[1], name: m[3] };
}

export interface ObserveDeps {
  kube: Kube;
  fulfillment: FulfillmentClient;
  config: PlannerConfig;
  /** CA bundle that signs the assisted-service ignition endpoint (PEM), if not a public CA. */
  ignitionCaFile?: string;
  ignitionTimeoutMs?: number;
  newName?: () => string;
  /** Reuse of the shared catalog and of ignitions between reconciles (the reconciler's loop); none when absent. */
  cache?: ObserveCache;
}

/** What observation learned besides the snapshot: errors to report, calls made. */
export interface Observation {
  snapshot: Snapshot;
  /** The fulfillment-service failed this time (message), so the BMI list is unknown. */
  fulfillmentError?: string;
  fulfillmentCalls: number;
}

export class OrderNotFoundError extends Error {
  override name = "OrderNotFoundError";
  constructor(ref: OrderRef) {
    super(`ClusterOrder ${ref.namespace}/${ref.name} does not exist`);
  }
}

interface UnstructuredMeta {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string>;
    ownerReferences?: { uid?: string; kind?: string }[] };
}

interface AgentLike extends UnstructuredMeta {
  spec?: { approved?: boolean; clusterDeploymentName?: { name?: string; namespace?: string } | null };
  status?: { inventory?: { interfaces?: { macAddress?: string }[] }; debugInfo?: { state?: string } };
}

export function toObservedAgent(agent: AgentLike): ObservedAgent {
  const interfaces = agent.status?.inventory?.interfaces;
  const cd = agent.spec?.clusterDeploymentName;
  return {
    name: agent.metadata?.name ?? "",
    namespace: agent.metadata?.namespace ?? "",
    uid: agent.metadata?.uid ?? "",
    resourceVersion: agent.metadata?.resourceVersion ?? "",
    labels: { ...(agent.metadata?.labels ?? {}) },
    // An inventory that cannot be read is "unknown", never "no MACs".
    macs: Array.isArray(interfaces)
      ? interfaces.map((i) => (i.macAddress ?? "").toLowerCase()).filter((m) => m !== "")
      : undefined,
    clusterDeploymentName: cd?.name ? { name: cd.name, namespace: cd.namespace } : undefined,
    approved: agent.spec?.approved === true,
    state: agent.status?.debugInfo?.state,
  };
}

interface NodePoolLike extends UnstructuredMeta {
  spec?: { replicas?: number; clusterName?: string };
  status?: { replicas?: number };
}

/**
 * The NodePools of the order's HostedCluster (spec.clusterName). A namespace can hold several hosted
 * clusters, each with a NodePool for the same node set name; without this, each order would see the
 * others' pools as ambiguous. Before the cluster is known, every NodePool of the namespace is a candidate.
 */
export function nodePoolsOfCluster<T extends NodePoolLike>(nodePools: T[], hostedClusterName: string | undefined): T[] {
  return hostedClusterName ? nodePools.filter((np) => np.spec?.clusterName === hostedClusterName) : nodePools;
}

export function toObservedNodePool(np: NodePoolLike): ObservedNodePool {
  return {
    name: np.metadata?.name ?? "",
    namespace: np.metadata?.namespace ?? "",
    nodeSet: np.metadata?.labels?.[NODE_SET_LABEL],
    replicas: np.spec?.replicas ?? 0,
    statusReplicas: np.status?.replicas ?? 0,
  };
}

interface InfraEnvLike extends UnstructuredMeta {
  status?: { bootArtifacts?: { discoveryIgnitionURL?: string } };
}

export function ownedInfraEnv(infraEnvs: InfraEnvLike[], order: ClusterOrder): ObservedInfraEnv | undefined {
  const owned = infraEnvs.find((ie) => (ie.metadata?.ownerReferences ?? []).some((o) => o.uid === order.metadata.uid));
  if (!owned) return undefined;
  return {
    name: owned.metadata?.name ?? "",
    uid: owned.metadata?.uid ?? "",
    ignitionUrl: owned.status?.bootArtifacts?.discoveryIgnitionURL || undefined,
  };
}

export function instanceTypeInfo(t: BareMetalInstanceTypeOut): InstanceTypeInfo {
  const ports = t.spec?.hardware?.network_ports ?? [];
  return { name: t.metadata?.name ?? t.id, fabricPort: ports.find((p) => p.role === "fabric")?.name };
}

/** The fulfillment Cluster behind a ClusterOrder: its id is the order's clusterorder-uuid label. */
export const CLUSTER_ID_LABEL = "osac.openshift.io/clusterorder-uuid";

async function clusterOf(f: FulfillmentClient, order: ClusterOrder): Promise<ClusterOut | undefined> {
  const id = order.metadata.labels?.[CLUSTER_ID_LABEL];
  if (id) return (await f.clusters.list({ filter: Filter.idEquals(id), limit: 1 })).items[0];
  const byName = await f.clusters.listAll(Filter.nameEquals(order.metadata.name));
  return byName.length === 1 ? byName[0] : undefined;
}

async function resolveOrderDiskImage(f: FulfillmentClient, order: ClusterOrder): Promise<DiskImageResolution> {
  const cluster = await clusterOf(f, order);
  const ref = cluster?.spec?.version;
  let cv: ClusterVersionOut | undefined;
  if (ref?.id || ref?.name) {
    const filter = ref.id ? Filter.idEquals(ref.id) : Filter.nameEquals(ref.name);
    cv = (await f.clusterVersions.list({ filter, limit: 1 })).items[0];
  }
  if (!cv) {
    return { ok: false, reason: "ClusterVersionNotFound",
      message: cluster ? `the cluster's current ClusterVersion (${ref?.id || ref?.name || "unset"}) was not found`
        : `no fulfillment Cluster found for ClusterOrder ${order.metadata.namespace}/${order.metadata.name}` };
  }
  const cvName = cv.metadata?.name || cv.id;
  const image = await resolveDiskImage(f.diskImages, cv);
  if (!image) {
    return { ok: false, reason: cv.spec?.disk_image?.id || cv.spec?.disk_image?.name ? "DiskImageNotFound" : "NotLinked",
      message: `ClusterVersion ${cvName} has no resolvable disk_image: link a DiskImage to it` };
  }
  if (String(image.spec?.lifecycle ?? "").endsWith("OBSOLETE")) {
    return { ok: false, reason: "Obsolete", message: `DiskImage ${image.metadata?.name || image.id} of ClusterVersion ${cvName} is OBSOLETE` };
  }
  return { ok: true, id: image.id, name: image.metadata?.name || image.id };
}

/** Reads the order, its hub objects and its BMIs. Throws OrderNotFoundError when the order is gone. */
// A label value: at most 63 characters, alphanumeric at both ends. No Agent can carry anything else.
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/**
 * The Agents the planner can consider for this order (planner/correlation.ts `isOurAgent`): those with
 * the order's InfraEnv label or its order label, listed by label rather than the whole namespace, whose
 * Agents grow with every order in it (130 Agents, 765 KB per reconcile at 30 orders per namespace).
 */
export async function listOrderAgents(kube: Kube, order: ClusterOrder): Promise<AgentObject[]> {
  const ns = order.metadata.namespace;
  const selectors = [`${INFRAENV_AGENT_LABEL}=${infraEnvName(order.metadata.name)}`, `${ORDER_LABEL}=${order.metadata.uid}`]
    .filter((sel) => LABEL_VALUE.test(sel.slice(sel.indexOf("=") + 1)));
  const byUid = new Map<string, AgentObject>();
  for (const list of await Promise.all(selectors.map((sel) => kube.listAgents(ns, sel)))) {
    for (const a of list) byUid.set(a.metadata?.uid ?? `${a.metadata?.namespace}/${a.metadata?.name}`, a);
  }
  return [...byUid.values()];
}

export async function observe(deps: ObserveDeps, ref: OrderRef, now: Date = new Date()): Promise<Observation> {
  const { kube, fulfillment } = deps;
  const order = await kube.getClusterOrder(ref.namespace, ref.name);
  if (!order) throw new OrderNotFoundError(ref);
  const ns = ref.namespace;
  // HyperShift keeps the ClusterDeployment in the hosted control plane namespace (<ns>-<hostedcluster>).
  const hc = order.status?.clusterReference;
  const cdNamespaces = hc ? [`${hc.namespace}-${hc.hostedClusterName}`, hc.namespace] : [ns];
  const [infraEnvs, agents, nodePools, ...cdLists] = await Promise.all([
    kube.listInfraEnvs(ns), listOrderAgents(kube, order), kube.listNodePools(ns),
    ...cdNamespaces.map((n) => kube.listClusterDeployments(n)),
  ]);
  const infraEnv = ownedInfraEnv(infraEnvs, order);
  // No clusterReference yet means the cluster is not there yet: no ClusterDeployment, nothing to bind to.
  const cd = hc ? cdLists.flat().find((c) => c.metadata?.name === hc.hostedClusterName) : undefined;

  let fulfillmentCalls = 0;
  let fulfillmentError: string | undefined;
  let bmis: ObservedBmi[] | undefined;
  let diskImage: DiskImageResolution = { ok: false, reason: "ClusterVersionNotFound", message: "not resolved yet" };
  const instanceTypes: Record<string, InstanceTypeInfo> = {};
  let catalogItem = SYSTEM_CATALOG_ITEM;
  try {
    const orderFilter = Filter.and(Filter.tenantEquals("system"), Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid }));
    const loadCatalog = async () => {
      const r = await Promise.all([fulfillment.instanceTypes.listAll(), fulfillment.catalogItems.listAll(Filter.nameEquals(SYSTEM_CATALOG_ITEM))]);
      fulfillmentCalls += 2;
      return r;
    };
    const [listed, [types, items]] = await Promise.all([
      fulfillment.bareMetalInstances.listAll(orderFilter),
      deps.cache ? deps.cache.catalog(loadCatalog) : loadCatalog(),
    ]);
    fulfillmentCalls += 1;
    bmis = listed.map(observedBmi);
    for (const t of types) instanceTypes[t.metadata?.name ?? t.id] = instanceTypeInfo(t);
    catalogItem = items[0]?.id ?? SYSTEM_CATALOG_ITEM;
    diskImage = await resolveOrderDiskImage(fulfillment, order);
    fulfillmentCalls += 3;
  } catch (err) {
    // Any failure leaves the BMI list unknown; the planner then changes nothing.
    fulfillmentError = `${isTransient(err) ? "unavailable: " : ""}${err instanceof Error ? err.message : String(err)}`;
    bmis = undefined;
  }

  let ignition: IgnitionFetch | undefined;
  if (infraEnv?.ignitionUrl) {
    const url = infraEnv.ignitionUrl;
    const load = () => fetchIgnition(url, { caFile: deps.ignitionCaFile, timeoutMs: deps.ignitionTimeoutMs, maxBytes: deps.config.ignitionMaxBytes });
    const rv = infraEnvs.find((ie) => ie.metadata?.uid === infraEnv.uid)?.metadata?.resourceVersion ?? "";
    ignition = await (deps.cache ? deps.cache.ignition(`${infraEnv.uid}/${rv}/${url}`, load) : load());
  }

  const snapshot: Snapshot = {
    now,
    order,
    infraEnv,
    recordedInfraEnvUid: order.metadata.annotations?.[INFRAENV_UID_ANNOTATION],
    ignition,
    diskImage,
    instanceTypes,
    catalogItem,
    bmis,
    agents: agents.map(toObservedAgent),
    nodePools: nodePoolsOfCluster(nodePools, hc?.hostedClusterName).map(toObservedNodePool),
    clusterDeployment: cd?.metadata?.name ? { name: cd.metadata.name, namespace: cd.metadata.namespace ?? ns } : undefined,
    fulfillmentErrors: fulfillmentError ? 1 : 0,
    config: deps.config,
    newName: deps.newName ?? (() => crypto.randomBytes(4).toString("hex")),
  };
  return { snapshot, fulfillmentError, fulfillmentCalls };
}
