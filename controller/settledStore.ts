// Where settled records (settledOrders.ts) outlive the reconciler's process: one small JSON blob per order
// beside the stacks' checkpoints, in the state backend's store (stack/stateStore.ts), so every replica of a
// shared backend reads what the last holder of an order's shard wrote. A record only ever lets one
// reconcile after a restart be skipped, and only after its comparisons with the hub and the service; a
// record that is missing, unreadable or malformed just means that order is observed once.
import type { StateStore } from "../stack/stateStore";
import type { UnwatchedKeys } from "../io/unwatched";
import type { OrderWorkerCounts } from "./metrics";

/** What a settled reconcile saw, as stored. `until`: epoch ms when it ends (refresh or requeue time; null: neither). */
export interface StoredSettled {
  key: string;
  uid: string;
  resourceVersion: string;
  bmiDigest: string;
  hubDigest: string;
  /** The order's unwatched inputs (io/unwatched.ts): what they are looked up by, and their digest. */
  unwatched: { keys: UnwatchedKeys; digest: string };
  pin: string;
  until: number | null;
  context: string;
  /** The order's worker gauges as its last full reconcile set them. */
  gauges?: OrderWorkerCounts;
}

export interface SettledStore {
  load(): Promise<StoredSettled[]>;
  save(record: StoredSettled): Promise<void>;
  remove(key: string): Promise<void>;
}

const DIR = ".baremetal-workers/settled/";
const blobKey = (key: string) => `${DIR}${key}.json`;

/** Records as blobs `.baremetal-workers/settled/<namespace>/<name>.json` of the state store. */
export class StateStoreSettled implements SettledStore {
  constructor(private readonly store: StateStore) {}

  async load(): Promise<StoredSettled[]> {
    const out: StoredSettled[] = [];
    for (const ns of await this.store.children(DIR)) {
      const blobs = await this.store.list(`${DIR}${ns}/`);
      const records = await Promise.all(blobs.filter((b) => b.name.endsWith(".json")).map((b) => this.store.read(`${DIR}${ns}/${b.name}`)));
      for (const data of records) {
        const record = data ? parseStoredSettled(data.toString("utf8")) : undefined;
        if (record) out.push(record);
      }
    }
    return out;
  }

  save(record: StoredSettled): Promise<void> {
    return this.store.write(blobKey(record.key), JSON.stringify(record));
  }

  remove(key: string): Promise<void> {
    return this.store.remove(blobKey(key));
  }
}

/** A stored record, or undefined when the text is not one (a record of another version, a torn or foreign blob). */
export function parseStoredSettled(text: string): StoredSettled | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== "object") return undefined;
  const r = v as Record<string, unknown>;
  const strings = ["key", "uid", "resourceVersion", "bmiDigest", "hubDigest", "pin", "context"] as const;
  if (!strings.every((k) => typeof r[k] === "string") || !(typeof r.until === "number" || r.until === null) ||
    !/^[^/]+\/[^/]+$/.test(r.key as string)) return undefined;
  const unwatched = parseUnwatched(r.unwatched);
  const g = r.gauges as Record<string, unknown> | undefined;
  const gaugesOk = g === undefined || (typeof g === "object" && g !== null && typeof g.tenant === "string" &&
    ["desired", "ready", "failed"].every((k) => typeof g[k] === "number"));
  if (!gaugesOk || !unwatched) return undefined;
  const out: StoredSettled = {
    key: r.key as string, uid: r.uid as string, resourceVersion: r.resourceVersion as string, bmiDigest: r.bmiDigest as string,
    hubDigest: r.hubDigest as string, unwatched, pin: r.pin as string, until: r.until, context: r.context as string,
  };
  if (g) out.gauges = { tenant: g.tenant as string, desired: g.desired as number, ready: g.ready as number, failed: g.failed as number };
  return out;
}

function parseUnwatched(v: unknown): StoredSettled["unwatched"] | undefined {
  const u = v as { keys?: Record<string, unknown>; digest?: unknown } | undefined;
  const k = u?.keys;
  if (typeof u?.digest !== "string" || !k || typeof k !== "object" || typeof k.namespace !== "string" || typeof k.name !== "string") return undefined;
  const hc = k.clusterReference as Record<string, unknown> | undefined;
  if (k.clusterId !== undefined && typeof k.clusterId !== "string") return undefined;
  if (hc !== undefined && (typeof hc !== "object" || hc === null || typeof hc.namespace !== "string" || typeof hc.hostedClusterName !== "string")) return undefined;
  const keys: UnwatchedKeys = { namespace: k.namespace, name: k.name };
  if (typeof k.clusterId === "string") keys.clusterId = k.clusterId;
  if (hc) keys.clusterReference = { namespace: hc.namespace as string, hostedClusterName: hc.hostedClusterName as string };
  return { keys, digest: u.digest };
}
