// The program's one Kubernetes access layer. Every write is a merge patch or a server-side apply
// (custom resources reject client-node's default strategic-merge patch), and every write that acts on
// an observation carries a precondition (resourceVersion or uid) so a stale decision fails with a
// ConflictError instead of overwriting someone else's change (OSAC-2135 §10).
import * as crypto from "node:crypto";
import * as os from "node:os";
import * as k8s from "@kubernetes/client-node";
import { kubeTimeoutMs } from "../../config/settings";
import { FIELD_MANAGER } from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";
import type { HubApi } from "./api";
import { validClusterOrder } from "./clusterOrder";
import { classifyKubeError, isConflict, isNotFound, KubeError } from "./errors";
import { fieldManagerConflicts, withoutFields } from "./fieldConflicts";
import { within } from "../../lib/deadline";
import type {
  AgentObject, AgentPatch, ClusterDeploymentObject, EventInput, InfraEnvObject, LeaseObject, NodePoolObject, ObjectMeta, ObjectRef,
  WatchEventType,
} from "./types";

/** group/version/plural of every kind the layer talks to. */
export const KINDS = {
  ClusterOrder: { group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", kind: "ClusterOrder" },
  Agent: { group: "agent-install.openshift.io", version: "v1beta1", plural: "agents", kind: "Agent" },
  InfraEnv: { group: "agent-install.openshift.io", version: "v1beta1", plural: "infraenvs", kind: "InfraEnv" },
  NodePool: { group: "hypershift.openshift.io", version: "v1beta1", plural: "nodepools", kind: "NodePool" },
  ClusterDeployment: { group: "hive.openshift.io", version: "v1", plural: "clusterdeployments", kind: "ClusterDeployment" },
  Lease: { group: "coordination.k8s.io", version: "v1", plural: "leases", kind: "Lease" },
  Event: { group: "events.k8s.io", version: "v1", plural: "events", kind: "Event" },
} as const;

type KindInfo = (typeof KINDS)[keyof typeof KINDS];

const apiVersionOf = (k: KindInfo) => `${k.group}/${k.version}`;
const MERGE = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
const APPLY = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.ServerSideApply);
/** A list answered as PartialObjectMetadataList: names, labels and versions, no spec or status. */
const METADATA_ONLY = k8s.setHeaderOptions("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");
const PAGE = 500;
/** events.k8s.io limits `note` to 1 KiB. */
const MAX_NOTE = 1024;

/** The status fields the program may own on a ClusterOrder. */
export type ClusterOrderStatusFields = NonNullable<ClusterOrder["status"]>;

export interface KubeOptions {
  /** events.k8s.io reportingInstance; defaults to the host name. */
  instance?: string;
}

/** MicroTime wants exactly six fractional digits. */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export class Kube implements HubApi {
  private readonly custom: k8s.CustomObjectsApi;
  private readonly instance: string;
  private readonly timeoutMs = kubeTimeoutMs();

  constructor(readonly kc: k8s.KubeConfig, opts: KubeOptions = {}) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.instance = (opts.instance ?? `${FIELD_MANAGER}-${os.hostname()}`).slice(0, 128);
  }

  // ---- ClusterOrder -------------------------------------------------------------------------

  /** InvalidClusterOrderError when a field the planner reads has the wrong type (clusterOrder.ts). */
  async getClusterOrder(namespace: string, name: string): Promise<ClusterOrder | undefined> {
    const o = await this.getOrUndefined<unknown>(KINDS.ClusterOrder, namespace, name);
    return o === undefined ? undefined : validClusterOrder(o, `${namespace}/${name}`);
  }

  /**
   * The ClusterOrder, or undefined only when the apiserver's 404 names this very object (metav1.Status
   * details: its name, kind clusterorders). Any other 404, e.g. the kind not served while its CRD is
   * reinstalled, is thrown: for decisions that must not take "cannot see it" for "it is gone".
   */
  async getClusterOrderStrict(namespace: string, name: string): Promise<ClusterOrder | undefined> {
    const k = KINDS.ClusterOrder;
    try {
      const o = await this.call<unknown>(`get ${k.kind} ${namespace}/${name}`, () => this.custom.getNamespacedCustomObject({ ...gvp(k), namespace, name }));
      return validClusterOrder(o, `${namespace}/${name}`);
    } catch (err) {
      if (isNotFound(err) && notFoundNames(err, k, name)) return undefined;
      throw err;
    }
  }

  /** Every ClusterOrder, in one namespace or all of them. */
  listClusterOrders(namespace?: string): Promise<ClusterOrder[]> {
    return this.list<ClusterOrder>(KINDS.ClusterOrder, namespace);
  }

  /**
   * Server-side apply of `status` on the /status subresource as FIELD_MANAGER, without force. The program
   * owns exactly the fields it passes: fields of other managers survive, and fields it applied before but
   * omits now are removed (workers[] is a map keyed by name, conditions[] one keyed by type, so an omitted
   * entry is deleted). A field another manager owns with a different value is left to that manager: it is
   * dropped from this write (`onFieldConflict` is told which) and the rest is applied. With
   * `resourceVersion` the write is conditional and a stale one fails with ConflictError.
   */
  async applyClusterOrderStatus(ref: ObjectRef, status: ClusterOrderStatusFields,
    opts: { resourceVersion?: string; onFieldConflict?: (fields: string[]) => void } = {}): Promise<ClusterOrder> {
    const apply = (s: ClusterOrderStatusFields) => {
      const body = {
        apiVersion: apiVersionOf(KINDS.ClusterOrder), kind: KINDS.ClusterOrder.kind,
        metadata: { name: ref.name, namespace: ref.namespace, ...(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}) },
        status: s,
      };
      return this.call<ClusterOrder>(`apply status of ClusterOrder ${ref.namespace}/${ref.name}`, () =>
        this.custom.patchNamespacedCustomObjectStatus({
          ...gvp(KINDS.ClusterOrder), namespace: ref.namespace, name: ref.name, body, fieldManager: FIELD_MANAGER, force: false,
        }, APPLY));
    };
    try {
      return await apply(status);
    } catch (err) {
      const fields = fieldManagerConflicts(err);
      const rest = fields.length > 0 ? withoutFields({ status }, fields)?.status : undefined;
      if (!rest) throw err;
      opts.onFieldConflict?.(fields);
      return apply(rest);
    }
  }

  /**
   * Merge patch of finalizers (replaced as a whole) and annotations (null removes one). Conditional on
   * `resourceVersion` when given (required with finalizers); ConflictError when stale.
   */
  async patchClusterOrderMetadata(ref: ObjectRef,
    changes: { finalizers?: string[]; annotations?: Record<string, string | null> }, resourceVersion?: string): Promise<ClusterOrder> {
    // Finalizers are a list a merge patch replaces whole: always pass the observed resourceVersion with them.
    if (changes.finalizers && !resourceVersion) throw new Error("patchClusterOrderMetadata: changing finalizers needs the observed resourceVersion");
    const metadata: Record<string, unknown> = resourceVersion ? { resourceVersion } : {};
    if (changes.finalizers) metadata.finalizers = changes.finalizers;
    if (changes.annotations) metadata.annotations = changes.annotations;
    return this.mergePatch<ClusterOrder>(KINDS.ClusterOrder, ref.namespace, ref.name, { metadata });
  }

  // ---- Agent ----------------------------------------------------------------------------------

  listAgents(namespace: string, labelSelector?: string): Promise<AgentObject[]> {
    return this.list<AgentObject>(KINDS.Agent, namespace, labelSelector);
  }

  getAgent(namespace: string, name: string): Promise<AgentObject | undefined> {
    return this.getOrUndefined<AgentObject>(KINDS.Agent, namespace, name);
  }

  /** One merge patch carrying metadata.resourceVersion: a stale observation fails with ConflictError. */
  patchAgent(namespace: string, name: string, patch: AgentPatch, resourceVersion: string): Promise<AgentObject> {
    const body = { ...patch, metadata: { ...patch.metadata, resourceVersion } };
    return this.mergePatch<AgentObject>(KINDS.Agent, namespace, name, body);
  }

  /** Merge patch of the status subresource: assisted-service's job, used by the lab and tests. */
  patchAgentStatus(namespace: string, name: string, status: NonNullable<AgentObject["status"]>): Promise<AgentObject> {
    return this.call(`patch status of Agent ${namespace}/${name}`, () =>
      this.custom.patchNamespacedCustomObjectStatus({ ...gvp(KINDS.Agent), namespace, name, body: { status } }, MERGE));
  }

  /** Creates an Agent (assisted-service's job; for the lab and tests). */
  createAgent(agent: AgentObject): Promise<AgentObject> {
    return this.create(KINDS.Agent, agent);
  }

  /** Deletes only the Agent that was observed: uid and resourceVersion preconditions (409 otherwise, 404 when gone). */
  async deleteAgent(namespace: string, name: string, pre: { uid: string; resourceVersion?: string }): Promise<void> {
    await this.call(`delete Agent ${namespace}/${name}`, () =>
      this.custom.deleteNamespacedCustomObject({
        ...gvp(KINDS.Agent), namespace, name, body: { preconditions: { uid: pre.uid, resourceVersion: pre.resourceVersion } },
      }));
  }

  // ---- InfraEnv, NodePool, ClusterDeployment, Secret --------------------------------------------

  listInfraEnvs(namespace: string): Promise<InfraEnvObject[]> {
    return this.list<InfraEnvObject>(KINDS.InfraEnv, namespace);
  }

  getInfraEnv(namespace: string, name: string): Promise<InfraEnvObject | undefined> {
    return this.getOrUndefined<InfraEnvObject>(KINDS.InfraEnv, namespace, name);
  }

  listNodePools(namespace: string, labelSelector?: string): Promise<NodePoolObject[]> {
    return this.list<NodePoolObject>(KINDS.NodePool, namespace, labelSelector);
  }

  /**
   * Server-side apply of spec.replicas only, as FIELD_MANAGER (forced: the program takes the field
   * over from whoever created the NodePool). NotFoundError when the NodePool does not exist, rather
   * than letting apply try to create one.
   */
  async applyNodePoolReplicas(namespace: string, name: string, replicas: number): Promise<NodePoolObject> {
    const what = `apply replicas of NodePool ${namespace}/${name}`;
    const current = await this.call<NodePoolObject>(what, () => this.custom.getNamespacedCustomObject({ ...gvp(KINDS.NodePool), namespace, name }));
    const body = {
      apiVersion: apiVersionOf(KINDS.NodePool), kind: KINDS.NodePool.kind,
      metadata: { name, namespace, uid: current.metadata.uid },
      spec: { replicas },
    };
    return this.call(what, () => this.custom.patchNamespacedCustomObject({
      ...gvp(KINDS.NodePool), namespace, name, body, fieldManager: FIELD_MANAGER, force: true,
    }, APPLY));
  }

  listClusterDeployments(namespace: string): Promise<ClusterDeploymentObject[]> {
    return this.list<ClusterDeploymentObject>(KINDS.ClusterDeployment, namespace);
  }

  // ---- Events -----------------------------------------------------------------------------------

  /**
   * An events.k8s.io/v1 Event regarding the ClusterOrder, reported by FIELD_MANAGER. With `event.name`
   * the Event is created once: a second create of the same name returns false (already recorded).
   * Never put secrets in `message`.
   */
  async createEvent(order: Pick<ClusterOrder, "metadata">, event: EventInput, now: Date = new Date()): Promise<boolean> {
    const md = order.metadata;
    const note = Buffer.byteLength(event.message) > MAX_NOTE ? Buffer.from(event.message).subarray(0, MAX_NOTE - 3).toString() + "..." : event.message;
    const body = {
      apiVersion: apiVersionOf(KINDS.Event), kind: KINDS.Event.kind,
      metadata: event.name ? { name: event.name, namespace: md.namespace } : { name: `${md.name}.${crypto.randomBytes(6).toString("hex")}`, namespace: md.namespace },
      eventTime: microTime(now),
      reportingController: FIELD_MANAGER,
      reportingInstance: this.instance,
      action: (event.action ?? event.reason).slice(0, 128),
      reason: event.reason.slice(0, 128),
      type: event.type,
      note,
      regarding: {
        apiVersion: apiVersionOf(KINDS.ClusterOrder), kind: KINDS.ClusterOrder.kind,
        name: md.name, namespace: md.namespace, uid: md.uid, resourceVersion: md.resourceVersion,
      },
    };
    try {
      await this.call(`create Event for ClusterOrder ${md.namespace}/${md.name}`, () =>
        this.custom.createNamespacedCustomObject({ ...gvp(KINDS.Event), namespace: md.namespace, body, fieldManager: FIELD_MANAGER }));
      return true;
    } catch (err) {
      if (event.name && isConflict(err)) return false;
      throw err;
    }
  }

  // ---- Leases -----------------------------------------------------------------------------------

  listLeases(namespace: string, labelSelector?: string): Promise<LeaseObject[]> {
    return this.list<LeaseObject>(KINDS.Lease, namespace, labelSelector);
  }

  getLease(namespace: string, name: string): Promise<LeaseObject | undefined> {
    return this.getOrUndefined<LeaseObject>(KINDS.Lease, namespace, name);
  }

  /** ConflictError when it already exists (someone else created it first). */
  createLease(lease: LeaseObject): Promise<LeaseObject> {
    return this.create(KINDS.Lease, lease);
  }

  /** Full replace; lease.metadata.resourceVersion must be the observed one (ConflictError otherwise). */
  async replaceLease(lease: LeaseObject): Promise<LeaseObject> {
    const { namespace, name, resourceVersion } = lease.metadata;
    if (!namespace || !resourceVersion) throw new Error("replaceLease needs metadata.namespace and metadata.resourceVersion");
    return this.call(`replace Lease ${namespace}/${name}`, () => this.custom.replaceNamespacedCustomObject({
      ...gvp(KINDS.Lease), namespace, name, body: { apiVersion: apiVersionOf(KINDS.Lease), kind: KINDS.Lease.kind, ...lease },
      fieldManager: FIELD_MANAGER,
    }));
  }

  // ---- Watch ------------------------------------------------------------------------------------

  /**
   * Watches `path` (e.g. /apis/agent-install.openshift.io/v1beta1/namespaces/ns/agents) and returns a
   * stop function. `onDone` is called once when the watch ends for any reason, with the error if
   * there was one; callers restart it (a watch ends regularly on server timeouts).
   */
  watch<T>(path: string, query: Record<string, string | number | boolean | undefined>,
    onEvent: (type: WatchEventType, object: T) => void, onDone: (err?: unknown) => void): () => void {
    let stopped = false;
    let done = false;
    let controller: AbortController | undefined;
    const finish = (err?: unknown) => {
      if (done) return;
      done = true;
      onDone(err ?? undefined);
    };
    new k8s.Watch(this.kc).watch(path, query, (type: string, object: T) => {
      if (!stopped) onEvent(type as WatchEventType, object);
    }, (err: unknown) => finish(stopped ? undefined : classifyKubeError(`watch ${path}`, err ?? undefined)))
      .then((c) => {
        controller = c;
        if (stopped) c.abort();
      }, (err: unknown) => finish(classifyKubeError(`watch ${path}`, err)));
    return () => {
      stopped = true;
      controller?.abort();
    };
  }

  /**
   * The current resourceVersion of a custom resource collection (a list of at most one item): a watch
   * started from it sees what changes from now on, without the existing objects replayed as ADDED.
   */
  async collectionVersion(path: string): Promise<string | undefined> {
    const m = /^\/apis\/([^/]+)\/([^/]+)\/(?:namespaces\/([^/]+)\/)?([^/]+)$/.exec(path);
    if (!m) throw new Error(`collectionVersion: ${path} is not a custom resource collection`);
    const [, group, version, namespace, plural] = m;
    const page: { metadata?: { resourceVersion?: string } } = await this.call(`list ${plural} (collection version)`, () => namespace
      ? this.custom.listNamespacedCustomObject({ group, version, namespace, plural, limit: 1 })
      : this.custom.listClusterCustomObject({ group, version, plural, limit: 1 }));
    return page.metadata?.resourceVersion;
  }

  /** The metadata of every object of a kind, in every namespace (one paged list, no bodies). */
  async listMetadata(kind: "Agent" | "InfraEnv" | "NodePool" | "ClusterDeployment"): Promise<ObjectMeta[]> {
    return (await this.list<{ metadata: ObjectMeta }>(KINDS[kind], undefined, undefined, METADATA_ONLY)).map((o) => o.metadata);
  }

  // ---- helpers ----------------------------------------------------------------------------------

  /**
   * Every request is bounded (BMW_KUBE_TIMEOUT_MS, default 30 s): the generated clients set no timeout,
   * and one stalled connection would otherwise stop the reconcile of an order, and the loop with it.
   */
  private async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await within(fn(), this.timeoutMs, (): never => {
        throw new KubeError(operation, 504, "Timeout", `no answer within ${this.timeoutMs} ms`);
      });
    } catch (err) {
      throw err instanceof KubeError ? err : classifyKubeError(operation, err);
    }
  }

  private async getOrUndefined<T>(k: KindInfo, namespace: string, name: string): Promise<T | undefined> {
    try {
      return await this.call<T>(`get ${k.kind} ${namespace}/${name}`, () => this.custom.getNamespacedCustomObject({ ...gvp(k), namespace, name }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async list<T>(k: KindInfo, namespace?: string, labelSelector?: string, options?: ReturnType<typeof k8s.setHeaderOptions>): Promise<T[]> {
    const items: T[] = [];
    let cont: string | undefined;
    do {
      // An empty PartialObjectMetadataList comes with "items": null.
      const page: { items: T[] | null; metadata?: { continue?: string } } = await this.call(`list ${k.plural}${namespace ? ` in ${namespace}` : ""}`,
        () => namespace
          ? this.custom.listNamespacedCustomObject({ ...gvp(k), namespace, labelSelector, limit: PAGE, _continue: cont }, options)
          : this.custom.listClusterCustomObject({ ...gvp(k), labelSelector, limit: PAGE, _continue: cont }, options));
      items.push(...(page.items ?? []));
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return items;
  }

  private create<T extends { metadata: { namespace?: string; name?: string } }>(k: KindInfo, obj: T): Promise<T> {
    const namespace = obj.metadata.namespace;
    if (!namespace) throw new Error(`create ${k.kind}: metadata.namespace is required`);
    return this.call(`create ${k.kind} ${namespace}/${obj.metadata.name ?? ""}`, () => this.custom.createNamespacedCustomObject({
      ...gvp(k), namespace, body: { apiVersion: apiVersionOf(k), kind: k.kind, ...obj }, fieldManager: FIELD_MANAGER,
    }));
  }

  private mergePatch<T>(k: KindInfo, namespace: string, name: string, body: object): Promise<T> {
    return this.call(`patch ${k.kind} ${namespace}/${name}`, () =>
      this.custom.patchNamespacedCustomObject({ ...gvp(k), namespace, name, body, fieldManager: FIELD_MANAGER }, MERGE));
  }
}

/** Whether a 404 is the apiserver's answer for this very object rather than for its kind or path. */
function notFoundNames(err: unknown, k: KindInfo, name: string): boolean {
  let body = (err as { cause?: { body?: unknown } }).cause?.body;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      return false;
    }
  }
  const status = body as { kind?: unknown; details?: { name?: unknown; kind?: unknown; group?: unknown } } | undefined;
  return status?.kind === "Status" && status.details?.name === name && status.details.kind === k.plural && status.details.group === k.group;
}

function gvp(k: KindInfo): { group: string; version: string; plural: string } {
  return { group: k.group, version: k.version, plural: k.plural };
}
