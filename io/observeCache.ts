// What observation may reuse between reconciles of a long-running reconciler, measured by the bench
// (npm run bench): every reconcile of every order used to list the BareMetalInstanceTypes and the
// system catalog item (with its template's HostType), look up its ClusterVersion and DiskImage, and
// fetch its InfraEnv's ignition over HTTPS, though none of them changes between two ticks. Only successful results are kept; a failure is retried on the next reconcile.
import type { IgnitionFetch } from "../planner/types";

export interface ObserveCacheOptions {
  /** Instance types, the catalog item and its template's HostType, and the disk image lookups: shared by all orders (default 30 s). */
  catalogTtlMs?: number;
  /** An ignition, per InfraEnv uid, resourceVersion and URL (default 5 min). */
  ignitionTtlMs?: number;
  now?: () => number;
}

interface Entry<T> {
  at: number;
  value: Promise<T>;
}

/** The shared catalog's entry among the lookups (no lookup key of a kind has this form). */
const CATALOG_KEY = "catalog";

export class ObserveCache {
  private readonly catalogTtlMs: number;
  private readonly ignitionTtlMs: number;
  private readonly now: () => number;
  private readonly ignitions = new Map<string, Entry<IgnitionFetch>>();
  private readonly lookups = new Map<string, Entry<unknown>>();

  constructor(opts: ObserveCacheOptions = {}) {
    this.catalogTtlMs = opts.catalogTtlMs ?? 30_000;
    this.ignitionTtlMs = opts.ignitionTtlMs ?? 300_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * The shared catalog (instance types, catalog item, HostType), loaded at most once per TTL; concurrent
   * callers share a load. A load that fails, or whose result `keep` refuses (e.g. a catalog item that
   * could not be resolved), is not kept: the next reconcile loads again.
   */
  catalog<T>(load: () => Promise<T>, keep: (value: T) => boolean = () => true): Promise<T> {
    return this.lookup(CATALOG_KEY, load, keep);
  }

  /**
   * The shared catalog when a load of it is fresh (done or in flight), without loading: for a reader that
   * must not fill the cache with what it loads itself (a settled order's resync loads without creating the
   * system catalog item, which an observation's load may do).
   */
  cachedCatalog<T>(): Promise<T> | undefined {
    const e = this.lookups.get(CATALOG_KEY);
    return e && this.now() - e.at < this.catalogTtlMs ? (e.value as Promise<T>) : undefined;
  }

  /**
   * A lookup that answers the same for every observation that makes it (a ClusterVersion's disk image),
   * loaded at most once per catalog TTL under its key; concurrent callers share a load. A failure, or an
   * answer `keep` refuses (nothing found), is not kept.
   */
  lookup<T>(key: string, load: () => Promise<T>, keep: (value: T) => boolean): Promise<T> {
    const now = this.now();
    for (const [k, e] of this.lookups) if (now - e.at >= this.catalogTtlMs) this.lookups.delete(k);
    const hit = this.lookups.get(key);
    if (hit) return hit.value as Promise<T>;
    const value = load();
    const entry: Entry<unknown> = { at: now, value };
    this.lookups.set(key, entry);
    const forget = () => {
      if (this.lookups.get(key) === entry) this.lookups.delete(key);
    };
    value.then((v) => {
      if (!keep(v)) forget();
    }, forget);
    return value;
  }

  /**
   * An InfraEnv's ignition. The key includes the InfraEnv's resourceVersion, so any change to it (a new
   * pull secret, a re-generated image) is fetched again at once; the TTL bounds what we cannot see.
   */
  ignition(key: string, load: () => Promise<IgnitionFetch>): Promise<IgnitionFetch> {
    const now = this.now();
    for (const [k, e] of this.ignitions) if (now - e.at >= this.ignitionTtlMs) this.ignitions.delete(k);
    const hit = this.ignitions.get(key);
    if (hit) return hit.value;
    const value = load();
    const entry = { at: now, value };
    this.ignitions.set(key, entry);
    void value.then((r) => {
      if (!r.ok && this.ignitions.get(key) === entry) this.ignitions.delete(key);
    }, () => {
      if (this.ignitions.get(key) === entry) this.ignitions.delete(key);
    });
    return value;
  }
}
