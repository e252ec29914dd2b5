// Small typed access to the custom resources the lab reads and writes, over @kubernetes/client-node's
// CustomObjectsApi (unstructured on the wire, typed here), plus a watch that only says "something
// changed" so controllers can re-list (level-triggered, like controller-runtime's requeue).
import * as k8s from "@kubernetes/client-node";

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
}

export interface KubeObject<Spec = unknown, Status = unknown> {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: Spec;
  status?: Status;
}

export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

export const RESOURCES = {
  agent: { group: "agent-install.openshift.io", version: "v1beta1", plural: "agents", kind: "Agent" },
  infraEnv: { group: "agent-install.openshift.io", version: "v1beta1", plural: "infraenvs", kind: "InfraEnv" },
  nodePool: { group: "hypershift.openshift.io", version: "v1beta1", plural: "nodepools", kind: "NodePool" },
  hostedCluster: { group: "hypershift.openshift.io", version: "v1beta1", plural: "hostedclusters", kind: "HostedCluster" },
  clusterDeployment: { group: "hive.openshift.io", version: "v1", plural: "clusterdeployments", kind: "ClusterDeployment" },
  clusterOrder: { group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", kind: "ClusterOrder" },
} as const satisfies Record<string, ResourceRef>;

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export function matchesSelector(sel: LabelSelector | undefined, labels: Record<string, string> = {}): boolean {
  if (!sel) return false; // an absent selector selects nothing
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const vals = e.values ?? [];
    const ok = e.operator === "In" ? has && vals.includes(labels[e.key])
      : e.operator === "NotIn" ? !has || !vals.includes(labels[e.key])
        : e.operator === "Exists" ? has
          : e.operator === "DoesNotExist" ? !has : false;
    if (!ok) return false;
  }
  return true;
}

/** The HTTP status of a client-node ApiException, if it is one. */
export function httpStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "number" ? code : undefined;
}

const MERGE = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

export class Kube {
  readonly api: k8s.CustomObjectsApi;
  readonly core: k8s.CoreV1Api;

  constructor(readonly kc: k8s.KubeConfig, private readonly fieldManager = "baremetal-workers-lab") {
    this.api = kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  async list<T extends KubeObject>(r: ResourceRef, namespace?: string, labelSelector?: string): Promise<T[]> {
    const p = { group: r.group, version: r.version, plural: r.plural, labelSelector };
    const res: unknown = namespace
      ? await this.api.listNamespacedCustomObject({ ...p, namespace })
      : await this.api.listClusterCustomObject(p);
    return ((res as { items?: T[] }).items ?? []);
  }

  async get<T extends KubeObject>(r: ResourceRef, namespace: string, name: string): Promise<T | undefined> {
    try {
      const res: unknown = await this.api.getNamespacedCustomObject({ group: r.group, version: r.version, plural: r.plural, namespace, name });
      return res as T;
    } catch (e) {
      if (httpStatus(e) === 404) return undefined;
      throw e;
    }
  }

  async create<T extends KubeObject>(r: ResourceRef, obj: T): Promise<T> {
    const namespace = obj.metadata.namespace;
    if (!namespace) throw new Error(`${r.kind} ${obj.metadata.name} needs a namespace`);
    const body = { apiVersion: `${r.group}/${r.version}`, kind: r.kind, ...obj };
    const res: unknown = await this.api.createNamespacedCustomObject({
      group: r.group, version: r.version, plural: r.plural, namespace, body, fieldManager: this.fieldManager,
    });
    return res as T;
  }

  async patch<T extends KubeObject>(r: ResourceRef, namespace: string, name: string, body: object): Promise<T> {
    const res: unknown = await this.api.patchNamespacedCustomObject({
      group: r.group, version: r.version, plural: r.plural, namespace, name, body, fieldManager: this.fieldManager,
    }, MERGE);
    return res as T;
  }

  /**
   * Merge patch of the status subresource (a plain update ignores .status). With `resourceVersion` the
   * patch applies only to that version (409 otherwise): for decisions made on a cached, maybe older copy.
   */
  async patchStatus<T extends KubeObject>(r: ResourceRef, namespace: string, name: string, status: object, resourceVersion?: string): Promise<T> {
    const body = resourceVersion ? { metadata: { resourceVersion }, status } : { status };
    const res: unknown = await this.api.patchNamespacedCustomObjectStatus({
      group: r.group, version: r.version, plural: r.plural, namespace, name, body, fieldManager: this.fieldManager,
    }, MERGE);
    return res as T;
  }

  async delete(r: ResourceRef, namespace: string, name: string): Promise<void> {
    try {
      await this.api.deleteNamespacedCustomObject({ group: r.group, version: r.version, plural: r.plural, namespace, name });
    } catch (e) {
      if (httpStatus(e) !== 404) throw e;
    }
  }
}

export interface WatchHandle {
  stop(): void;
}

/**
 * Calls onChange for every event on `path` (e.g. /apis/agent-install.openshift.io/v1beta1/agents) and
 * re-establishes the watch when it ends. No resourceVersion and no bookmarks: the server replays the
 * current objects as ADDED, which is just another "something changed".
 */
export function watchChanges(kc: k8s.KubeConfig, path: string, onChange: () => void, onError: (e: unknown) => void): WatchHandle {
  const watch = new k8s.Watch(kc);
  let stopped = false;
  let ctrl: AbortController | undefined;
  let retry: NodeJS.Timeout | undefined;
  const start = () => {
    if (stopped) return;
    watch.watch(path, {}, () => onChange(), (err: unknown) => {
      if (stopped) return;
      if (err && !(err instanceof Error && err.name === "AbortError")) onError(err);
      retry = setTimeout(start, err ? 1000 : 0);
    }).then((c) => {
      ctrl = c;
      if (stopped) c.abort();
    }, (err: unknown) => {
      if (stopped) return;
      onError(err);
      retry = setTimeout(start, 1000);
    });
  };
  start();
  return {
    stop: () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      ctrl?.abort();
    },
  };
}

/** The objects of one kind, listed once and then kept current by a watch (client-node's ListWatch informer). */
export interface WatchedCache<T> {
  /** Resolves once the first list is in (or failed; a failed start is retried after `onError`). */
  start(): Promise<void>;
  /** Whether a list has been received since the start. */
  synced(): boolean;
  list(): T[];
  stop(): void;
}

/**
 * A cluster-wide cache of `r`. Every add, update and delete calls `onChange`; an ended watch resumes from
 * its last resourceVersion (a 410 lists again), and an error is reported and retried after a second.
 */
export function watchedCache<T extends KubeObject>(kube: Kube, r: ResourceRef, onChange: () => void, onError: (e: unknown) => void): WatchedCache<T> {
  const listFn = async () =>
    (await kube.api.listClusterCustomObject({ group: r.group, version: r.version, plural: r.plural })) as k8s.KubernetesListObject<k8s.KubernetesObject>;
  return watchedPath<T>(kube.kc, `/apis/${r.group}/${r.version}/${r.plural}`, listFn, onChange, onError);
}

/** The lab's Secrets, cluster-wide (pull secrets are read for every InfraEnv on every pass). */
export function watchedSecrets(kube: Kube, onChange: () => void, onError: (e: unknown) => void): WatchedCache<k8s.V1Secret> & { get(namespace: string, name: string): k8s.V1Secret | undefined } {
  let informer: k8s.ListWatch<k8s.V1Secret> | undefined;
  const cache = watchedPath<k8s.V1Secret>(kube.kc, "/api/v1/secrets", () => kube.core.listSecretForAllNamespaces(), onChange, onError,
    (i) => { informer = i as k8s.ListWatch<k8s.V1Secret>; });
  return { ...cache, get: (namespace, name) => informer?.get(name, namespace) };
}

function watchedPath<T>(kc: k8s.KubeConfig, path: string, listFn: () => Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
  onChange: () => void, onError: (e: unknown) => void, expose?: (i: k8s.ListWatch<k8s.KubernetesObject>) => void): WatchedCache<T> {
  let listed = false;
  let failed = false;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const informer = new k8s.ListWatch<k8s.KubernetesObject>(path, new k8s.Watch(kc), listFn, false);
  expose?.(informer);
  // ListWatch.start() resolves once its list is applied and its watch runs, or after reporting an error.
  const start = async () => {
    failed = false;
    await informer.start();
    if (!failed) listed = true;
  };
  informer.on(k8s.CHANGE, () => onChange());
  informer.on(k8s.ERROR, (err) => {
    failed = true;
    if (stopped) return;
    onError(err);
    retry = setTimeout(() => void start(), 1_000);
  });
  return {
    start,
    synced: () => listed,
    // The watch delivers the objects as the apiserver serialized them: the lab's own JSON shapes.
    list: () => informer.list() as unknown as T[],
    stop: () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      void informer.stop();
    },
  };
}
