// The seam between the program and the hub's apiserver: the calls product code makes, and nothing
// else. Kube implements it; what the lab and tests alone call (Agent creation, Agent status, NodePool
// replicas) stays on Kube. Each consumer takes the slice it uses (e.g. HubReader for observation).
import type { ClusterOrder } from "../../planner/types";
import type {
  AgentObject, AgentPatch, ClusterDeploymentObject, EventInput, InfraEnvObject, LeaseObject, NodePoolObject, ObjectRef,
  WatchEventType,
} from "./types";

export interface HubApi {
  // ClusterOrders
  /** undefined on any 404. */
  getClusterOrder(namespace: string, name: string): Promise<ClusterOrder | undefined>;
  /** undefined only on a 404 that names this very object; any other 404 is thrown. */
  getClusterOrderStrict(namespace: string, name: string): Promise<ClusterOrder | undefined>;
  listClusterOrders(namespace?: string): Promise<ClusterOrder[]>;
  /** Server-side apply of status as the program's field manager; conditional with resourceVersion. */
  applyClusterOrderStatus(ref: ObjectRef, status: NonNullable<ClusterOrder["status"]>,
    opts?: { resourceVersion?: string; onFieldConflict?: (fields: string[]) => void }): Promise<ClusterOrder>;
  /** Merge patch of finalizers (needs resourceVersion) and annotations (null removes one). */
  patchClusterOrderMetadata(ref: ObjectRef, changes: { finalizers?: string[]; annotations?: Record<string, string | null> },
    resourceVersion?: string): Promise<ClusterOrder>;

  // Agents
  listAgents(namespace: string, labelSelector?: string): Promise<AgentObject[]>;
  getAgent(namespace: string, name: string): Promise<AgentObject | undefined>;
  /** Conditional on resourceVersion (ConflictError when stale). */
  patchAgent(namespace: string, name: string, patch: AgentPatch, resourceVersion: string): Promise<AgentObject>;
  /** Conditional on uid (and resourceVersion when given). */
  deleteAgent(namespace: string, name: string, pre: { uid: string; resourceVersion?: string }): Promise<void>;

  // Objects of the hosted cluster the program only reads
  listInfraEnvs(namespace: string): Promise<InfraEnvObject[]>;
  getInfraEnv(namespace: string, name: string): Promise<InfraEnvObject | undefined>;
  listNodePools(namespace: string, labelSelector?: string): Promise<NodePoolObject[]>;
  listClusterDeployments(namespace: string): Promise<ClusterDeploymentObject[]>;

  /** An Event regarding the order; with event.name created once (false when it already was). */
  createEvent(order: Pick<ClusterOrder, "metadata">, event: EventInput, now?: Date): Promise<boolean>;

  // Leader election
  listLeases(namespace: string, labelSelector?: string): Promise<LeaseObject[]>;
  getLease(namespace: string, name: string): Promise<LeaseObject | undefined>;
  createLease(lease: LeaseObject): Promise<LeaseObject>;
  replaceLease(lease: LeaseObject): Promise<LeaseObject>;

  // Watches
  /** Returns a stop function; onDone is called once when the watch ends. */
  watch<T>(path: string, query: Record<string, string | number | boolean | undefined>,
    onEvent: (type: WatchEventType, object: T) => void, onDone: (err?: unknown) => void): () => void;
  collectionVersion(path: string): Promise<string | undefined>;
}

/** What observation reads from the hub (io/observe.ts). */
export type HubReader = Pick<HubApi,
  "getClusterOrder" | "listAgents" | "listInfraEnvs" | "listNodePools" | "listClusterDeployments">;
