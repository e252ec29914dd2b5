// Observation: everything the planner needs about one ClusterOrder, read from the hub and the
// fulfillment-service, turned into a planner Snapshot. This is the only place where live objects are
// translated into planner types; the planner itself never does I/O.
import type { FulfillmentApi } from "../clients/fulfillment";
import {
  Filter, InconsistentListError, isTransient, PermissionDeniedError, SYSTEM_TENANT, UnauthenticatedError,
} from "../clients/fulfillment";
import { fetchIgnition } from "../clients/ignition";
import type { ObserveCache } from "./observeCache";
import { incarnationNames, nameSeed } from "./incarnationNames";
import { confirmOrderBmis, SystemTenantInvisibleError } from "./orderBmis";
import { catalogInputs, type FulfillmentTally, loadSharedCatalog } from "./sharedCatalog";
import { observationReads, resolveOrderDiskImage } from "./diskImage";
import { clusterDeploymentNamespaces, findClusterDeployment, unwatchedDigest, unwatchedKeys } from "./unwatched";
import type { AgentObject, HubReader } from "../clients/kube";
import { hubCapped, othersInFlight } from "./hubInFlight";
import { orderHubDigest } from "./hubDigest";
import { INFRAENV_AGENT_LABEL, INFRAENV_UID_ANNOTATION, infraEnvName, NODE_SET_LABEL, ORDER_LABEL } from "../planner/names";
import type {
  ClusterOrder, DiskImageResolution, IgnitionFetch, InFlight, InstanceTypeInfo, ObservedAgent, ObservedBmi, ObservedInfraEnv,
  ObservedNodePool, PlannerConfig, Snapshot,
} from "../planner/types";

export { confirmUnlisted, recordedBmiIds, seesSystemTenant, SystemTenantInvisibleError } from "./orderBmis";
export { instanceTypeInfo } from "./sharedCatalog";

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
  /**
   * The hub's creates and deletes in flight per order (hubInFlight.ts), read only under a hub-wide cap;
   * without it, or when it fails, the snapshot has no hub count and nothing of a capped kind starts.
   */
  hubInFlight?: () => Promise<ReadonlyMap<string, InFlight>>;
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
  /** The versions of the hub objects read for the order (io/hubDigest.ts), what a settled record holds. */
  hubDigest?: string;
  /** The inputs no watch follows (io/unwatched.ts), what a settled order's resync compares. */
  unwatchedDigest?: string;
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

export { CLUSTER_ID_LABEL } from "./diskImage";

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

/** The order's objects on the hub that the planner correlates with it. */
interface HubObjects {
  infraEnvs: Awaited<ReturnType<HubReader["listInfraEnvs"]>>;
  infraEnv: ObservedInfraEnv | undefined;
  agents: AgentObject[];
  /** Those of the order's HostedCluster (all of the namespace before it is known). */
  nodePools: Awaited<ReturnType<HubReader["listNodePools"]>>;
  clusterDeployment: Snapshot["clusterDeployment"];
  /** The versions of the InfraEnvs, Agents and NodePools read (all of them, before any filter). */
  digest: string;
}

/** Reads the order's InfraEnv, Agents, NodePools and ClusterDeployment from the hub, all at once. */
async function readHubObjects(kube: HubReader, order: ClusterOrder, ns: string): Promise<HubObjects> {
  const keys = unwatchedKeys(order);
  const [infraEnvs, agents, nodePools, ...cdLists] = await Promise.all([
    kube.listInfraEnvs(ns), listOrderAgents(kube, order), kube.listNodePools(ns),
    ...clusterDeploymentNamespaces(keys).map((n) => kube.listClusterDeployments(n)),
  ]);
  return {
    infraEnvs, infraEnv: ownedInfraEnv(infraEnvs, order), agents,
    nodePools: nodePoolsOfCluster(nodePools, keys.clusterReference?.hostedClusterName),
    // No clusterReference yet means the cluster is not there yet: no ClusterDeployment, nothing to bind to.
    clusterDeployment: findClusterDeployment(keys, cdLists.flat().map((c) => c.metadata ?? {})),
    digest: orderHubDigest({ namespace: ns, name: order.metadata.name, uid: order.metadata.uid },
      { agents: agents.map((a) => a.metadata), infraEnvs: infraEnvs.map((i) => i.metadata), nodePools: nodePools.map((n) => n.metadata) }),
  };
}

/**
 * What the fulfillment-service told this observation. The reads fill it as they go: when one fails, the
 * fields keep what the reads before it found, and the calls count what was made.
 */
interface FulfillmentReading extends FulfillmentTally {
  error?: string;
  errorKind?: FulfillmentErrorKind;
  catalogItemError?: string;
  bmis?: ObservedBmi[];
  goneBmiIds?: string[];
  diskImage: DiskImageResolution;
  instanceTypes: Record<string, InstanceTypeInfo>;
  /** "" is "unresolved": the planner's gate then blocks every create (never a name sent as an id). */
  catalogItem: string;
}

/** Reads the order's BMIs, the shared catalog and the order's disk image; a failure is recorded, never thrown. */
async function readFulfillment(deps: ObserveDeps, order: ClusterOrder): Promise<FulfillmentReading> {
  const reading: FulfillmentReading = {
    calls: 0, systemSeen: false, instanceTypes: {}, catalogItem: "",
    diskImage: { ok: false, reason: "ClusterVersionNotFound", message: "not resolved yet" },
  };
  try {
    await readFulfillmentInto(deps, order, reading);
  } catch (err) {
    // Any failure leaves the BMI list unknown; the planner then changes nothing.
    ({ kind: reading.errorKind, message: reading.error } = describeFulfillmentFailure(err));
    reading.bmis = undefined;
    reading.goneBmiIds = undefined;
  }
  return reading;
}

/** The reads behind readFulfillment, in the order they depend on each other; throws at the first that fails. */
async function readFulfillmentInto(deps: ObserveDeps, order: ClusterOrder, reading: FulfillmentReading): Promise<void> {
  const { fulfillment } = deps;
  const orderFilter = Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid }));
  const loadCatalog = () => loadSharedCatalog(fulfillment, deps.createCatalogItem === true, reading);
  const [listed, [types, item, hostType]] = await Promise.all([
    fulfillment.bareMetalInstances.listAll(orderFilter),
    deps.cache ? deps.cache.catalog(loadCatalog, ([, i]) => i.ok) : loadCatalog(),
  ]);
  reading.calls += 1;
  ({ bmis: reading.bmis, goneBmiIds: reading.goneBmiIds } = await confirmOrderBmis(fulfillment, order, listed, reading));
  Object.assign(reading, catalogInputs([types, item, hostType]));
  const reads = observationReads(fulfillment, reading);
  reading.diskImage = await resolveOrderDiskImage(reads, unwatchedKeys(order), deps.cache);
}

/** Fetches the discovery ignition of the order's InfraEnv (through the cache when there is one), once it has a URL. */
async function fetchInfraEnvIgnition(deps: ObserveDeps, hub: HubObjects): Promise<IgnitionFetch | undefined> {
  const { infraEnv } = hub;
  if (!infraEnv?.ignitionUrl) return undefined;
  const url = infraEnv.ignitionUrl;
  const load = () => fetchIgnition(url, { caFile: deps.ignitionCaFile, timeoutMs: deps.ignitionTimeoutMs, maxBytes: deps.config.ignitionMaxBytes });
  const rv = hub.infraEnvs.find((ie) => ie.metadata?.uid === infraEnv.uid)?.metadata?.resourceVersion ?? "";
  return await (deps.cache ? deps.cache.ignition(`${infraEnv.uid}/${rv}/${url}`, load) : load());
}

/** Reads the order, its hub objects and its BMIs. Throws OrderNotFoundError when the order is gone. */
export async function observe(deps: ObserveDeps, ref: OrderRef, now: Date = new Date()): Promise<Observation> {
  const order = await deps.kube.getClusterOrder(ref.namespace, ref.name);
  if (!order) throw new OrderNotFoundError(ref);
  const hub = await readHubObjects(deps.kube, order, ref.namespace);
  const reading = await readFulfillment(deps, order);
  const ignition = await fetchInfraEnvIgnition(deps, hub);
  const others = hubCapped(deps.config) && deps.hubInFlight
    ? await deps.hubInFlight().then((counts) => othersInFlight(counts, order.metadata.uid), () => undefined) : undefined;
  const { error: fulfillmentError, errorKind: fulfillmentErrorKind, goneBmiIds } = reading;
  const snapshot: Snapshot = {
    now,
    order,
    infraEnv: hub.infraEnv,
    recordedInfraEnvUid: order.metadata.annotations?.[INFRAENV_UID_ANNOTATION],
    ignition,
    diskImage: reading.diskImage,
    instanceTypes: reading.instanceTypes,
    catalogItem: reading.catalogItem,
    bmis: reading.bmis,
    ...(goneBmiIds ? { goneBmiIds } : {}),
    agents: hub.agents.map(toObservedAgent),
    nodePools: hub.nodePools.map(toObservedNodePool),
    clusterDeployment: hub.clusterDeployment,
    fulfillmentErrors: fulfillmentError ? 1 : 0,
    ...(fulfillmentErrorKind ? { fulfillmentErrorKind } : {}),
    config: deps.config,
    newName: deps.newName ?? incarnationNames(nameSeed(order)),
    ...(others ? { hub: others } : {}),
  };
  return {
    snapshot, fulfillmentError, fulfillmentErrorKind, catalogItemError: reading.catalogItemError,
    fulfillmentCalls: reading.calls, nameSeed: nameSeed(order), hubDigest: hub.digest,
    ...(reading.bmis ? { unwatchedDigest: unwatchedDigest(snapshot) } : {}),
  };
}
