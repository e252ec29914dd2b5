// Who may act, for `baremetal-workers run`: one Lease (a standby replica waits), or, with --shards N,
// the shard Leases of controller/shardElector.ts (each replica acts on the orders of the shards it holds).
// Either way the stacks run pulumi only for orders this replica may act on at that moment, and stop the
// runs of the orders it no longer may.
import type { Logger } from "pino";
import type { App } from "./app";
import type { ElectionState } from "./health";
import { ShardOwnership } from "./ownership";
import { ShardElector } from "./shardElector";
import { guardedSingleLease } from "./shardLeaseWatch";
import type { OrderRef } from "../io/observe";

export interface Election extends ElectionState {
  start(): void;
  /** Releases what is held (a sharded replica drains each shard first). */
  stop(): Promise<void>;
  /** The sharded replica's ownership of orders; unset for the single Lease (the leader acts on all). */
  ownership?: ShardOwnership;
  /** Who holds each shard (sharded), for the log and the metrics. */
  shardHolders?(): string[];
  heldShards?(): number[];
}

export interface ElectionOptions {
  app: App;
  identity: string;
  namespace: string;
  /** The Lease name, or the prefix of the shard and member Leases. */
  name: string;
  log: Logger;
  /** Resolves when nothing runs any more for the orders `which` selects (the loop's drain). */
  drain: (which: (ref: OrderRef) => boolean) => Promise<void>;
  /** The shards held changed: the loop lists the orders again (a shard taken brings orders to act on). */
  onShardsChanged?: (held: number[]) => void;
  /** Default 15. */
  leaseDurationSeconds?: number;
}

/**
 * The single Lease: the leader acts on every order; the stacks stop every run when it is lost. It is taken
 * only while no shard Lease of the group is held, and acted on only once a read begun after taking it
 * found none (controller/shardLeaseWatch.ts): going back from shards cannot overlap with a sharded replica.
 */
export function singleLeader(o: ElectionOptions): Election {
  const { app, identity, log } = o;
  const single = guardedSingleLease({
    client: app.kube, namespace: o.namespace, name: o.name, identity, logger: log, leaseDurationSeconds: o.leaseDurationSeconds,
    onStartedLeading: () => log.info({ identity }, "leading: reconciling"),
    onStoppedLeading: () => {
      // The next leader clears our stack locks once it holds the Lease: nothing of ours may still run then.
      app.stacks.abortRunning();
      log.warn({ identity }, "lost leadership: standing by");
    },
  });
  app.stacks.setLeaseOwner({ identity, isHolderGone: (holder) => single.elector.isHolderGone(holder), isLeading: single.acting });
  return { start: single.start, stop: single.stop, isLeader: single.leads, healthy: () => single.elector.healthy() && single.watch.healthy() };
}

/**
 * N shards: a shard taken drops what this process remembered of its orders; a shard handed over is drained
 * first (its runs finish, no new one starts); a shard lost (renewals failed) stops its orders' runs at once.
 */
export function shardedLeaders(o: ElectionOptions & { shards: number }): Election {
  const { app, identity, log } = o;
  let held = new Set<number>();
  let ownership: ShardOwnership | undefined;
  const inShard = (shard: number) => (ref: OrderRef | undefined) => ref !== undefined && ownership?.shardOfRef(ref) === shard;
  const elector = new ShardElector({
    client: app.kube, namespace: o.namespace, base: o.name, identity, shards: o.shards, logger: log,
    leaseDurationSeconds: o.leaseDurationSeconds,
    drainShard: (shard) => o.drain(inShard(shard)),
    onShardsChanged: (leases) => {
      const now = new Set(leases);
      for (const s of now) if (!held.has(s)) ownership?.shardTaken(s);
      const lost = [...held].filter((s) => !now.has(s));
      // Renewals failed (or the hand-over released it): nothing of this shard may still run when another takes it.
      if (lost.length > 0) app.stacks.abortRunning(2000, (ref) => lost.some((s) => inShard(s)(ref)));
      held = now;
      log.info({ identity, shards: [...now].sort((a, b) => a - b) }, "shard Leases held");
      o.onShardsChanged?.([...now]);
    },
  });
  ownership = new ShardOwnership(elector, o.shards, (ref) => app.forgetOrder(ref));
  const owned = ownership;
  app.ownership = owned;
  app.stacks.setLeaseOwner({ identity, isHolderGone: (holder, ref) => owned.isHolderGone(holder, ref),
    isLeading: (ref) => owned.ownsRef(ref) === true });
  return {
    start: () => elector.start(),
    stop: () => elector.stop(),
    isLeader: () => elector.held().length > 0,
    healthy: () => elector.healthy(),
    ownership: owned,
    shardHolders: () => elector.holders(),
    heldShards: () => elector.held(),
  };
}
