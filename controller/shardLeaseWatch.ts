// The other direction of a change of shard count (decisions SO3, SO9): a reconciler on the single Lease holds
// it only while no shard Lease of its group is held, and acts only once a read of the Leases begun after
// it took the Lease found none, so going back from shards to one replica cannot let the two act together.
import type { Logger } from "pino";
import type { LeaseObject } from "../clients/kube";
import { LeaderElector, type LeaderElectorOptions } from "./leader";
import { MEMBER_LABEL, SHARDS_LABEL } from "./shards";

export interface ShardLeaseWatchOptions {
  client: { listLeases(namespace: string, labelSelector?: string): Promise<LeaseObject[]> };
  namespace: string;
  base: string;
  /** Default 2000. */
  retryPeriodMs?: number;
  logger?: Logger;
  now?: () => number;
}

export class ShardLeaseWatch {
  private readonly now: () => number;
  /** Per shard Lease: its resourceVersion and our clock when it was first seen. */
  private seen = new Map<string, { rv: string; seenAt: number }>();
  private held = true;
  private listedAt = -1;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private lastError: string | undefined;

  constructor(private readonly opts: ShardLeaseWatchOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Starts reading every retry period; resolves once the first read ended (successful or not). */
  start(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.running = true;
    const loop = () => this.observe().finally(() => {
      if (this.running) this.timer = setTimeout(() => void loop(), this.opts.retryPeriodMs ?? 2000);
    });
    return loop();
  }

  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
  }

  /** The last read of the shard Leases succeeded. */
  healthy(): boolean {
    return this.listedAt >= 0 && this.lastError === undefined;
  }

  /** Whether a shard Lease was held at the last read (true until a read succeeded). */
  anyHeld(): boolean {
    return this.held;
  }

  /** No shard Lease held, as found by a complete read begun at or after `sinceMs` (our clock). */
  clearSince(sinceMs: number): boolean {
    return !this.held && this.listedAt >= sinceMs;
  }

  /** Reads the group's shard Leases; held means a holder, renewed within its duration on our clock. */
  async observe(): Promise<void> {
    const startedAt = this.now();
    let leases: LeaseObject[];
    try {
      leases = await this.opts.client.listLeases(this.opts.namespace, `${MEMBER_LABEL}=${this.opts.base}`);
    } catch (e) {
      if (startedAt < this.listedAt) return;
      // Fail closed (the Lease is not taken), and say why once: e.g. a Role without `list` on leases.
      const text = e instanceof Error ? e.message : String(e);
      if (text !== this.lastError) this.opts.logger?.warn({ err: e }, "listing the shard Leases failed: the single Lease is not taken until it succeeds");
      this.lastError = text;
      return;
    }
    // Reads may overlap (one is asked for when the Lease is taken): an older read never overwrites a newer one.
    if (startedAt < this.listedAt) return;
    this.lastError = undefined;
    const nowMs = this.now();
    const next = new Map<string, { rv: string; seenAt: number }>();
    let held = false;
    for (const l of leases.filter((x) => x.metadata.labels?.[SHARDS_LABEL] !== undefined)) {
      const name = l.metadata.name ?? "";
      const rv = l.metadata.resourceVersion ?? "";
      const before = this.seen.get(name);
      const seenAt = before?.rv === rv ? before.seenAt : nowMs;
      next.set(name, { rv, seenAt });
      if ((l.spec?.holderIdentity ?? "") !== "" && nowMs < seenAt + (l.spec?.leaseDurationSeconds ?? 15) * 1000) held = true;
    }
    if (held && !this.held) this.opts.logger?.warn("a shard Lease is held: the single Lease is not taken until every shard Lease is released or expired");
    this.seen = next;
    this.held = held;
    this.listedAt = startedAt;
  }
}

/**
 * The single Lease, guarded by the group's shard Leases: taken only while none is held (`wants`), and acted
 * on (`acting`) only once a read begun after taking it found none.
 */
export function guardedSingleLease(opts: LeaderElectorOptions & { client: ShardLeaseWatchOptions["client"] }) {
  const watch = new ShardLeaseWatch({ client: opts.client, namespace: opts.namespace, base: opts.name, retryPeriodMs: opts.retryPeriodMs,
    ...(opts.logger ? { logger: opts.logger } : {}), ...(opts.now ? { now: opts.now } : {}) });
  const now = opts.now ?? Date.now;
  let acquiredAt = Infinity;
  const elector = new LeaderElector({
    ...opts,
    wants: () => !watch.anyHeld() && (opts.wants?.() ?? true),
    onStartedLeading: () => {
      acquiredAt = now();
      // The read that lets it act, now rather than at the next retry period.
      void watch.observe();
      opts.onStartedLeading?.();
    },
  });
  let started = false;
  return {
    elector,
    watch,
    /** Whether this replica may act now (the stacks' check). */
    acting: () => elector.isLeading() && watch.clearSince(acquiredAt),
    /** Whether the loop may dispatch (its leadership as of the last tick). */
    leads: () => elector.isLeader() && watch.clearSince(acquiredAt),
    // The elector's first attempt waits for the first read: before it, every shard Lease counts as held.
    start: () => {
      started = true;
      void watch.start().then(() => {
        if (started) elector.start();
      });
    },
    stop: async () => {
      started = false;
      watch.stop();
      await elector.stop();
    },
  };
}
