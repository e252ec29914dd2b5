// Several reconciler replicas share the hub's orders (issue 19). Each replica renews a member Lease (its
// heartbeat); each of the N shards has a Lease, which only the live member it is assigned to
// (controllers/shards.ts, rendezvous hashing) tries to hold. A replica acts on an order only while it
// holds the order's shard Lease (owns), and steps down from a shard by its renew deadline when it cannot
// renew, so it stops before another may start. A shard it is no longer assigned (a member joined) is
// handed over: it stops acting, waits for what runs for the shard's orders (drainShard), then releases.
// While any shard Lease of another shard count is held, no replica of this count holds any: changing N
// cannot let two replicas act on one order.
import type { Logger } from "pino";
import type { LeaseObject } from "../clients/kube";
import { LeaderElector, type LeaseClient } from "./leader";
import { assignedMember, MEMBER_LABEL, memberLeaseName, shardLeaseName, shardOf, SHARDS_LABEL } from "./shards";

export interface ShardElectorOptions {
  client: LeaseClient & { listLeases(namespace: string, labelSelector?: string): Promise<LeaseObject[]> };
  namespace: string;
  /** Prefix of every Lease name, e.g. "baremetal-workers". */
  base: string;
  identity: string;
  shards: number;
  /** Default 15. */
  leaseDurationSeconds?: number;
  /** Default 2/3 of the lease duration. */
  renewDeadlineMs?: number;
  /** Default 2000. */
  retryPeriodMs?: number;
  /** A shard is about to be handed over: stop what runs for its orders and wait for it. */
  drainShard?: (shard: number) => Promise<void>;
  /** The shard Leases held changed (one taken or given up); `leases` are the shards whose Lease this replica holds. */
  onShardsChanged?: (leases: number[]) => void;
  logger?: Logger;
  now?: () => number;
}

interface Seen {
  resourceVersion: string;
  holder: string;
  /** Our clock when this resourceVersion was first seen. */
  seenAt: number;
  durationMs: number;
  shards?: string;
}

export class ShardElector {
  private readonly member: LeaderElector;
  private readonly electors: LeaderElector[];
  private readonly now: () => number;
  private readonly leaseMs: number;
  private readonly retryMs: number;
  private seen = new Map<string, Seen>();
  private live: string[] = [];
  private foreignHeld = false;
  private observedOnce = false;
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  /** Our clock when each shard Lease was acquired, and when the last complete read of the Leases began. */
  private acquiredAt: number[];
  private listedAt = -1;

  constructor(private readonly opts: ShardElectorOptions) {
    if (!Number.isInteger(opts.shards) || opts.shards < 1) throw new Error(`the shard count must be a positive integer, not ${opts.shards}`);
    this.now = opts.now ?? Date.now;
    this.leaseMs = (opts.leaseDurationSeconds ?? 15) * 1000;
    this.retryMs = opts.retryPeriodMs ?? 2000;
    const common = {
      client: opts.client, namespace: opts.namespace, identity: opts.identity, leaseDurationSeconds: opts.leaseDurationSeconds,
      renewDeadlineMs: opts.renewDeadlineMs, retryPeriodMs: opts.retryPeriodMs, now: opts.now,
      ...(opts.logger ? { logger: opts.logger } : {}),
    };
    this.acquiredAt = Array.from({ length: opts.shards }, () => Infinity);
    // The heartbeat's deadline is its Lease duration, the time the others count it live after a renew: a
    // renew late past the shard Leases' deadline (a loaded machine) hands no shard over. The shard Leases,
    // each with its own deadline, remain what fences acting.
    this.member = new LeaderElector({ ...common, renewDeadlineMs: this.leaseMs - 1, name: memberLeaseName(opts.base, opts.identity),
      labels: { [MEMBER_LABEL]: opts.base } });
    this.electors = Array.from({ length: opts.shards }, (_, i) => new LeaderElector({
      ...common,
      name: shardLeaseName(opts.base, i, opts.shards),
      labels: { [SHARDS_LABEL]: String(opts.shards), [MEMBER_LABEL]: opts.base },
      wants: () => this.wants(i),
      beforeRelease: () => opts.drainShard?.(i) ?? Promise.resolve(),
      onStartedLeading: () => {
        this.acquiredAt[i] = this.now();
        this.changed();
      },
      onStoppedLeading: () => this.changed(),
    }));
  }

  get identity(): string {
    return this.opts.identity;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.member.start();
    this.schedule(0);
    for (const e of this.electors) e.start();
  }

  /** Stops every loop and releases every Lease held, each shard drained first (drainShard). */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all(this.electors.map((e) => e.stop()));
    await this.member.stop();
  }

  /** Stops renewing without releasing anything, as a killed or partitioned process would (tests). */
  async abandon(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all([...this.electors, this.member].map((e) => e.abandon()));
  }

  /**
   * Whether this replica may act on the order now: it holds the order's shard Lease within its renew
   * deadline, the shard is still assigned to it, and a read of every Lease begun after it took the shard
   * found none of another shard count held (two replicas of different counts that took Leases at the same
   * moment both see the other's before either acts).
   */
  owns(orderUid: string): boolean {
    const i = shardOf(orderUid, this.opts.shards);
    return this.electors[i].isLeading() && this.wants(i) && this.listedAt > this.acquiredAt[i];
  }

  shardOf(orderUid: string): number {
    return shardOf(orderUid, this.opts.shards);
  }

  /** The shards whose orders this replica may act on now (see owns). */
  held(): number[] {
    return this.electors.flatMap((e, i) => (e.isLeading() && this.wants(i) && this.listedAt > this.acquiredAt[i] ? [i] : []));
  }

  /** Who holds each shard's Lease, as last observed ("" for none). */
  holders(): string[] {
    return this.electors.map((e) => (e.isLeading() ? this.opts.identity : e.leader()));
  }

  /** Live members, as last observed (this replica included while its heartbeat is renewed). */
  members(): string[] {
    return [...this.live];
  }

  /** For the order's stack lock: whether `holder` certainly acts no more on the order's shard (LeaderElector.isHolderGone). */
  isHolderGone(orderUid: string, holder: string): boolean {
    return this.electors[shardOf(orderUid, this.opts.shards)].isHolderGone(holder);
  }

  /** The last attempts reached the API server. */
  healthy(): boolean {
    return this.member.healthy();
  }

  private wants(shard: number): boolean {
    if (!this.running || !this.observedOnce || this.foreignHeld || !this.member.isLeading()) return false;
    return assignedMember(shard, this.live, this.opts.shards) === this.opts.identity;
  }

  private changed(): void {
    this.opts.onShardsChanged?.(this.electors.flatMap((e, i) => (e.isLeading() ? [i] : [])));
  }

  private schedule(delayMs: number): void {
    if (!this.running) return;
    this.timer = setTimeout(() => void this.observe().finally(() => this.schedule(this.retryMs)), delayMs);
  }

  /** Reads the member Leases (who is live) and every shard Lease (is one of another count held?). */
  private async observe(): Promise<void> {
    const { client, namespace, base, identity, shards } = this.opts;
    const startedAt = this.now();
    let leases: LeaseObject[];
    try {
      // The single Lease of an unsharded reconciler counts as a foreign shard count (a rollout to shards).
      const [grouped, single] = await Promise.all([client.listLeases(namespace, `${MEMBER_LABEL}=${base}`), client.getLease(namespace, base)]);
      leases = single ? [...grouped, { ...single, metadata: { ...single.metadata, labels: { ...single.metadata.labels, [SHARDS_LABEL]: "unsharded" } } }] : grouped;
    } catch (e) {
      this.opts.logger?.warn({ err: e }, "listing the member and shard Leases failed");
      return;
    }
    const nowMs = this.now();
    const next = new Map<string, Seen>();
    for (const l of leases) {
      const name = l.metadata.name ?? "";
      const rv = l.metadata.resourceVersion ?? "";
      const before = this.seen.get(name);
      next.set(name, {
        resourceVersion: rv, holder: l.spec?.holderIdentity ?? "", durationMs: (l.spec?.leaseDurationSeconds ?? this.leaseMs / 1000) * 1000,
        seenAt: before?.resourceVersion === rv ? before.seenAt : nowMs, shards: l.metadata.labels?.[SHARDS_LABEL],
      });
    }
    this.seen = next;
    // Held means: a holder, and renewed within its duration on our clock (a killed replica's record goes stale).
    const fresh = (s: Seen) => s.holder !== "" && nowMs < s.seenAt + s.durationMs;
    const live = [...next.values()].filter((s) => s.shards === undefined && fresh(s)).map((s) => s.holder);
    if (this.member.isLeading() && !live.includes(identity)) live.push(identity);
    this.live = [...new Set(live)].sort();
    const foreign = [...next.values()].some((s) => s.shards !== undefined && s.shards !== String(shards) && fresh(s));
    if (foreign && !this.foreignHeld) {
      this.opts.logger?.warn({ shards }, "a shard Lease of another shard count is held: this replica holds no shard until it is released or expires");
    }
    this.foreignHeld = foreign;
    this.observedOnce = true;
    this.listedAt = startedAt;
  }
}
