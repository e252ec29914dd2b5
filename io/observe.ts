// Observation: everything the planner needs about one ClusterOrder, read from the hub and the
// fulfillment-service, turned into a planner Snapshot. This is the only place where live objects are
// translated into planner types; the planner itself never does I/O.
import type { FulfillmentApi } from "../clients/fulfillment";
import {
  catalogHostType, ensureSystemCatalogItem, Filter, InconsistentListError, isTransient, NotFoundError, observedBmi, PermissionDeniedError,
  resolveDiskImage, SYSTEM_TENANT, UnauthenticatedError, usableInterfaces,
} from "../clients/fulfillment";
import type {
  BareMetalInstanceOut, BareMetalInstanceTypeOut, CatalogHostType, ClusterOut, ClusterVersionOut,
} from "../clients/fulfillment";
import { fetchIgnition } from "../clients/ignition";
import type { ObserveCache } from "./observeCache";
import { incarnationNames, nameSeed } from "./incarnationNames";
import type { AgentObject, HubReader } from "../clients/kube";
import {
  INFRAENV_AGENT_LABEL, INFRAENV_UID_ANNOTATION, infraEnvName, NODE_SET_LABEL, ORDER_LABEL, SYSTEM_CATALOG_ITEM,
} from "../planner/names";
import type {
  ClusterOrder, DiskImageResolution, IgnitionFetch, InstanceTypeInfo, ObservedAgent, ObservedBmi, ObservedInfraEnv,
  ObservedNodePool, PlannerConfig, Snapshot,
} from "../planner/types";

type FulfillmentErrorKind = NonNullable<Snapshot["fulfillmentErrorKind"]>;

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
  kube: HubReader;
  fulfillment: FulfillmentApi;
  config: PlannerConfig;
  /** CA bundle that signs the assisted-service ignition endpoint (PEM), if not a public CA. */
  ignitionCaFile?: string;
  ignitionTimeoutMs?: number;
  /** Names of new slots and incarnations; default: derived from the order's uid and resourceVersion (incarnationNames.ts). */
  newName?: () => string;
  /** Reuse of the shared catalog and of ignitions between reconciles (the reconciler's loop); none when absent. */
  cache?: ObserveCache;
  /**
   * Create the system catalog item when it is missing (design §2.6). Only a real update and the
   * reconciler set this; a preview and the read-only commands only look (default).
   */
  createCatalogItem?: boolean;
}

/** What observation learned besides the snapshot: errors to report, calls made. */
export interface Observation {
  snapshot: Snapshot;
  /** The fulfillment-service failed this time (message naming the cause), so the BMI list is unknown. */
  fulfillmentError?: string;
  fulfillmentErrorKind?: FulfillmentErrorKind;
  /** Why snapshot.catalogItem is "" (the system catalog item could be neither found nor created). */
  catalogItemError?: string;
  fulfillmentCalls: number;
  /** What the default snapshot.newName derives from (incarnationNames.ts); a plan elsewhere of this observation uses it. */
  nameSeed: string;
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

type AgentSelector = NonNullable<ObservedNodePool["agentSelector"]>;

interface NodePoolLike extends UnstructuredMeta {
  spec?: { replicas?: number; clusterName?: string; platform?: { agent?: { agentLabelSelector?: AgentSelector | null } | null } };
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

/** A copy of a label selector with only the fields a LabelSelector has (undefined when there is none). */
function agentSelectorOf(np: NodePoolLike): AgentSelector | undefined {
  const sel = np.spec?.platform?.agent?.agentLabelSelector;
  if (!sel || typeof sel !== "object") return undefined;
  const out: AgentSelector = {};
  if (sel.matchLabels) out.matchLabels = { ...sel.matchLabels };
  if (sel.matchExpressions) {
    out.matchExpressions = sel.matchExpressions.map((e) => ({
      key: e.key, operator: e.operator, ...(e.values ? { values: [...e.values] } : {}),
    }));
  }
  return out;
}

export function toObservedNodePool(np: NodePoolLike): ObservedNodePool {
  const agentSelector = agentSelectorOf(np);
  return {
    name: np.metadata?.name ?? "",
    namespace: np.metadata?.namespace ?? "",
    nodeSet: np.metadata?.labels?.[NODE_SET_LABEL],
    replicas: np.spec?.replicas ?? 0,
    statusReplicas: np.status?.replicas ?? 0,
    ...(agentSelector ? { agentSelector } : {}),
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

/**
 * An instance type as the planner needs it. Its fabric port is the first one the HostType of the
 * catalog item's template accepts, since the server checks attachments against that HostType; when
 * it accepts none, no port is guessed: the node set's creates are blocked with the reason.
 */
export function instanceTypeInfo(t: BareMetalInstanceTypeOut, hostType: CatalogHostType = NO_HOST_TYPE): InstanceTypeInfo {
  const name = t.metadata?.name ?? t.id;
  const fabric = (t.spec?.hardware?.network_ports ?? []).filter((p) => p.role === "fabric").map((p) => p.name);
  if (hostType.kind === "none") return { name, fabricPort: fabric[0] };
  if (hostType.kind === "unresolved") {
    return { name, interfaceProblem: `${hostType.message}; the fulfillment-service would refuse every network attachment`,
      hostType: { name: "", interfaces: [] } };
  }
  const interfaces = hostType.interfaces.map((i) => ({ ...i }));
  const usable = new Set(usableInterfaces(interfaces).map((i) => i.name));
  const fabricPort = fabric.find((p) => usable.has(p));
  if (fabricPort || fabric.length === 0) return { name, ...(fabricPort ? { fabricPort } : {}), hostType: { name: hostType.hostType, interfaces } };
  return {
    name,
    interfaceProblem: `no fabric port of BareMetalInstanceType ${name} (${fabric.join(", ")}) is a usable interface of HostType ` +
      `${hostType.hostType} (template ${hostType.template}: ${[...usable].join(", ") || "none"}), which the fulfillment-service checks attachments against`,
    hostType: { name: hostType.hostType, interfaces },
  };
}

const NO_HOST_TYPE: CatalogHostType = { kind: "none", note: "not looked up" };

/** The fulfillment Cluster behind a ClusterOrder: its id is the order's clusterorder-uuid label. */
export const CLUSTER_ID_LABEL = "osac.openshift.io/clusterorder-uuid";

async function clusterOf(f: FulfillmentApi, order: ClusterOrder): Promise<ClusterOut | undefined> {
  const id = order.metadata.labels?.[CLUSTER_ID_LABEL];
  if (id) return (await f.clusters.list({ filter: Filter.idEquals(id), limit: 1 })).items[0];
  const byName = await f.clusters.listAll(Filter.nameEquals(order.metadata.name));
  return byName.length === 1 ? byName[0] : undefined;
}

async function resolveOrderDiskImage(f: FulfillmentApi, order: ClusterOrder): Promise<DiskImageResolution> {
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
export async function listOrderAgents(kube: Pick<HubReader, "listAgents">, order: ClusterOrder): Promise<AgentObject[]> {
  const ns = order.metadata.namespace;
  const selectors = [`${INFRAENV_AGENT_LABEL}=${infraEnvName(order.metadata.name)}`, `${ORDER_LABEL}=${order.metadata.uid}`]
    .filter((sel) => LABEL_VALUE.test(sel.slice(sel.indexOf("=") + 1)));
  const byUid = new Map<string, AgentObject>();
  for (const list of await Promise.all(selectors.map((sel) => kube.listAgents(ns, sel)))) {
    for (const a of list) byUid.set(a.metadata?.uid ?? `${a.metadata?.namespace}/${a.metadata?.name}`, a);
  }
  return [...byUid.values()];
}

/** BMI ids the order's status records, in order of appearance, once each. */
export function recordedBmiIds(order: ClusterOrder): string[] {
  const ids = (order.status?.workers ?? []).map((w) => w.bareMetalInstance?.id).filter((id): id is string => !!id);
  return [...new Set(ids)];
}

/**
 * Absence from a List is not proof of deletion (I3): every recorded BMI the List left out is read with
 * a Get. Found → the List missed it; NOT_FOUND → confirmed gone; any other failure throws, so the BMI
 * list is unknown this pass.
 */
export async function confirmUnlisted(f: Pick<FulfillmentApi, "bareMetalInstances">, recorded: string[], listedIds: string[]):
  Promise<{ found: BareMetalInstanceOut[]; gone: string[]; calls: number }> {
  const listed = new Set(listedIds);
  const missing = recorded.filter((id) => !listed.has(id));
  const results = await Promise.all(missing.map(async (id) => {
    try {
      return { id, bmi: await f.bareMetalInstances.get(id) };
    } catch (err) {
      if (err instanceof NotFoundError) return { id, bmi: undefined };
      throw err;
    }
  }));
  return {
    found: results.flatMap((r) => (r.bmi ? [r.bmi] : [])),
    gone: results.filter((r) => !r.bmi).map((r) => r.id),
    calls: missing.length,
  };
}

/**
 * The service answers NOT_FOUND for objects the caller cannot see, not only for deleted ones: a token
 * whose subject lost its admin rights would make every recorded BMI look deleted. NOT_FOUND is taken
 * as proof of deletion only when this observation saw a tenant-system object; this is the error when
 * it could not.
 */
export class SystemTenantInvisibleError extends Error {
  override name = "SystemTenantInvisibleError";
  constructor(notFound: number) {
    super(`every recorded BareMetalInstance (${notFound}) answered NOT_FOUND, but this token cannot be shown to see tenant ` +
      `system (the system BareMetalInstanceCatalogItem '${SYSTEM_CATALOG_ITEM}' is not visible to it), so NOT_FOUND may only mean ` +
      "invisible and none is taken as deleted; the token's subject needs admin access to the private API");
  }
}

/** One cheap read that proves the caller sees tenant system: the system catalog item, listed in tenant system. */
export async function seesSystemTenant(f: Pick<FulfillmentApi, "catalogItems">): Promise<boolean> {
  const page = await f.catalogItems.list({
    filter: Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.nameEquals(SYSTEM_CATALOG_ITEM)), limit: 1,
  });
  return page.items.some((i) => i.metadata?.tenant === SYSTEM_TENANT);
}

/** What kind of failure it was, and a message that names what an operator can do about it (no secrets). */
export function describeFulfillmentFailure(err: unknown): { kind: FulfillmentErrorKind; message: string } {
  const text = err instanceof Error ? err.message : String(err);
  if (err instanceof SystemTenantInvisibleError) return { kind: "PermissionDenied", message: text };
  if (err instanceof UnauthenticatedError) {
    return { kind: "Unauthenticated", message: `the fulfillment-service refused our credentials (UNAUTHENTICATED): ${err.details}; ` +
      "check the bearer token in BMW_FULFILLMENT_TOKEN_FILE (expired or rotated?)" };
  }
  if (err instanceof PermissionDeniedError) {
    return { kind: "PermissionDenied", message: `the fulfillment-service denied ${err.method} (PERMISSION_DENIED): ${err.details}; ` +
      "the token's subject needs admin access to the private API" };
  }
  if (isTransient(err)) return { kind: "Unavailable", message: `the fulfillment-service is unreachable or did not answer in time: ${text}` };
  if (err instanceof InconsistentListError) {
    return { kind: "Other", message: `the BareMetalInstance list did not add up across pages (${text}); the list is treated as unknown` };
  }
  return { kind: "Other", message: `a fulfillment-service call failed: ${text}` };
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
  let fulfillmentErrorKind: FulfillmentErrorKind | undefined;
  let catalogItemError: string | undefined;
  let bmis: ObservedBmi[] | undefined;
  let goneBmiIds: string[] | undefined;
  let diskImage: DiskImageResolution = { ok: false, reason: "ClusterVersionNotFound", message: "not resolved yet" };
  const instanceTypes: Record<string, InstanceTypeInfo> = {};
  // "" is "unresolved": the planner's gate then blocks every create (never a name sent as an id).
  let catalogItem = "";
  try {
    const orderFilter = Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid }));
    // Whether a read of this observation (not the cache) found a tenant-system object: see SystemTenantInvisibleError.
    let systemSeen = false;
    // The template and HostType are cached with the catalog: a steady tick adds no calls per order.
    const loadCatalog = async () => {
      const [types, item] = await Promise.all([
        fulfillment.instanceTypes.listAll(),
        ensureSystemCatalogItem(fulfillment.catalogItems, SYSTEM_CATALOG_ITEM, { create: deps.createCatalogItem === true }),
      ]);
      fulfillmentCalls += 2;
      if (item.ok) systemSeen = true;
      const hostType = item.ok ? await catalogHostType(fulfillment, item.template) : { value: NO_HOST_TYPE, calls: 0 };
      fulfillmentCalls += hostType.calls;
      return [types, item, hostType.value] as const;
    };
    const [listed, [types, item, hostType]] = await Promise.all([
      fulfillment.bareMetalInstances.listAll(orderFilter),
      deps.cache ? deps.cache.catalog(loadCatalog, ([, i]) => i.ok) : loadCatalog(),
    ]);
    fulfillmentCalls += 1;
    const confirmed = await confirmUnlisted(fulfillment, recordedBmiIds(order), listed.map((b) => b.id));
    fulfillmentCalls += confirmed.calls;
    if (confirmed.gone.length > 0) {
      systemSeen ||= listed.length > 0 || confirmed.found.length > 0;
      if (!systemSeen) {
        systemSeen = await seesSystemTenant(fulfillment);
        fulfillmentCalls += 1;
      }
      // Unproven means nothing of tenant system was seen at all: every recorded BMI answered NOT_FOUND.
      if (!systemSeen) throw new SystemTenantInvisibleError(confirmed.gone.length);
    }
    bmis = [...listed, ...confirmed.found].map(observedBmi);
    goneBmiIds = confirmed.gone;
    for (const t of types) instanceTypes[t.metadata?.name ?? t.id] = instanceTypeInfo(t, hostType);
    if (item.ok) catalogItem = item.id;
    else catalogItemError = item.message;
    diskImage = await resolveOrderDiskImage(fulfillment, order);
    fulfillmentCalls += 3;
  } catch (err) {
    // Any failure leaves the BMI list unknown; the planner then changes nothing.
    ({ kind: fulfillmentErrorKind, message: fulfillmentError } = describeFulfillmentFailure(err));
    bmis = undefined;
    goneBmiIds = undefined;
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
    ...(goneBmiIds ? { goneBmiIds } : {}),
    agents: agents.map(toObservedAgent),
    nodePools: nodePoolsOfCluster(nodePools, hc?.hostedClusterName).map(toObservedNodePool),
    clusterDeployment: cd?.metadata?.name ? { name: cd.metadata.name, namespace: cd.metadata.namespace ?? ns } : undefined,
    fulfillmentErrors: fulfillmentError ? 1 : 0,
    ...(fulfillmentErrorKind ? { fulfillmentErrorKind } : {}),
    config: deps.config,
    newName: deps.newName ?? incarnationNames(nameSeed(order)),
  };
  return { snapshot, fulfillmentError, fulfillmentErrorKind, catalogItemError, fulfillmentCalls, nameSeed: nameSeed(order) };
}
