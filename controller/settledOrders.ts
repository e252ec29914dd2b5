// Settled orders: a steady timer pass over orders whose last reconcile found nothing to do, answered
// without observing each of them again. An order is settled when its last reconcile skipped (the stack
// holds its plan) with every requested worker Ready and nothing pending. It stays settled until any of
// these says its world may have moved, and then the next reconcile observes in full:
//   - a watch event for it (ClusterOrder, Agent, NodePool, InfraEnv) or any requeue (the loop invalidates);
//   - the ClusterOrder's resourceVersion in the tick's listing differs from the one observed;
//   - its BMIs as this pass reads them (the cache the service's event stream keeps, io/bmiCache.ts, or
//     one hub-wide listing, io/orderBmiDigests.ts) differ from those observed;
//   - its rollback pin changed;
//   - its periodic refresh or its plan's requeue time (e.g. a retried worker's healthy period) is due;
//   - at its resync time: the versions of its Agents, InfraEnvs and NodePools in one hub-wide metadata
//     listing (io/hubDigest.ts), or the inputs nothing here watches (io/unwatched.ts: its ClusterDeployment,
//     its disk image, the catalog), read once per pass for every order due, differ from those its
//     observation read. When they do not, the order stays settled until its next resync time.
// A settled check only ever skips a reconcile; it never plans, writes or deletes anything.
//
// A record also goes to a store (settledStore.ts) so that a restarted reconciler need not observe every
// order again. Nothing watched the hub for it while no process ran, so a restored record is due for its
// resync comparisons in its first check. Records of another program, planner configuration or resync
// setting (the context) are not restored.
import * as crypto from "node:crypto";
import type { OrderRef } from "../io/observe";
import { bmiDigest } from "../io/orderBmiDigests";
import type { Pin } from "../planner/pin";
import type { ClusterOrder, Plan } from "../planner/types";
import type { OrderIdentity } from "../io/hubDigest";
import type { UnwatchedKeys } from "../io/unwatched";
import { orderKey } from "./reconcileDeps";
import type { OrderWorkerCounts } from "./metrics";
import type { SettledStore, StoredSettled } from "./settledStore";
import { within } from "../lib/deadline";

export interface SettledOrdersOptions {
  /** The hub's BMIs, digested per order uid; read at most once per pass (from the BMI cache, or one listing). */
  listBmiDigests: () => Promise<Map<string, string>>;
  /** The hub's watched objects, digested per order (io/hubDigest.ts); listed at most once per pass, only when a record is due for its resync. */
  listHubDigests?: () => Promise<(order: OrderIdentity) => string>;
  /** The unwatched inputs, digested per order (io/unwatched.ts); read at most once per pass, only when a record is due for its resync. */
  listUnwatchedDigests?: () => Promise<(keys: UnwatchedKeys) => Promise<string>>;
  /** Where records outlive the process; none: a restarted process starts with no order settled. */
  store?: SettledStore;
  /** What a record holds only under (program, planner configuration, resync setting): records of another context are not restored. */
  context?: () => string;
  /** Told when the store fails (a record not kept only costs one observation after a restart). */
  log?: (msg: string, fields?: Record<string, unknown>) => void;
  /** The order's rollback pin, as a comparable string ("" for none). */
  pinOf: (ref: OrderRef) => Promise<string>;
  /** Longest time an order stays settled without its resync comparisons (0: never settled). */
  resyncMs: number;
  now?: () => number;
}

/** What a settled reconcile saw, to compare a later pass with. */
export interface SettledObservation {
  resourceVersion: string;
  bmiDigest: string;
  pin: string;
  /** When the order must be reconciled in full anyway: its periodic refresh, its plan's requeue time (undefined: never). */
  dueAt?: number;
  plan: Plan;
  /**
   * What the resync compares: the order's uid, its hub objects' digest and its unwatched inputs (their keys
   * and digest). Without all of them the order's settled state ends at its resync time, and nothing is stored.
   */
  uid?: string;
  hubDigest?: string;
  unwatched?: { keys: UnwatchedKeys; digest: string };
  gauges?: OrderWorkerCounts;
}

interface Settled extends Omit<SettledObservation, "plan" | "dueAt"> {
  /** When it ends (refresh or requeue time; Infinity: neither). */
  until: number;
  /** When its resync comparisons are next due. */
  resyncAt: number;
  /** Absent for a restored record. */
  plan?: Plan;
  /** A restored record not yet compared: it ends at this time unless a pass lists its order before. */
  restoredUntil?: number;
}

/** Held by a reconcile from its start: recording succeeds only if nothing invalidated the order since. */
export interface SettleToken {
  key: string;
  epoch: number;
}

export type SettledMiss = "none" | "expired" | "order-changed" | "bmis-changed" | "bmis-unreadable" | "pin-changed" |
  "hub-changed" | "hub-unreadable" | "unwatched-changed" | "unwatched-unreadable";

/** A settled check that held: the settled plan (none for a restored record), and whether the resync comparisons ran. */
export interface SettledHit {
  plan: Plan | undefined;
  resynced: boolean;
}

/**
 * Why a reconcile's outcome does not leave the order settled, or undefined when it does: it skipped because
 * the stack holds the plan, the BMIs were read, every requested worker is Ready, and the plan waits for
 * nothing (no fence, pause, Failed or missing worker, BMI confirmed gone). A requeue time does not keep an
 * order from settling: it ends the settled state when it comes (SettledObservation.dueAt).
 */
export function unsettledReason(plan: Plan, bmisKnown: boolean, goneBmiIds: readonly string[] | undefined): string | undefined {
  const s = plan.status;
  if (!bmisKnown) return "BMIs unknown";
  if (goneBmiIds?.length) return "a recorded BMI is gone";
  if (plan.paused) return `paused (${plan.paused.reason})`;
  if (plan.fence.length > 0) return "a fence is pending";
  const target = plan.targetWorkers ?? s.desiredWorkers; // a rollback pin's count, else the request
  if (s.readyWorkers !== target || s.currentWorkers !== target) {
    return `${s.readyWorkers} Ready and ${s.currentWorkers} current of ${target} desired`;
  }
  const other = s.workers.find((w) => w.phase !== "Ready");
  return other ? `worker ${other.name} is ${other.phase}` : undefined;
}

export class SettledOrders {
  private readonly settled = new Map<string, Settled>();
  private readonly epochs = new Map<string, number>();
  private passDigests?: Promise<Map<string, string> | undefined>;
  private passHub?: Promise<((order: OrderIdentity) => string) | undefined>;
  private passUnwatched?: Promise<((keys: UnwatchedKeys) => Promise<string>) | undefined>;
  private watching: Promise<boolean> = Promise.resolve(false);
  private readonly now: () => number;

  constructor(private readonly opts: SettledOrdersOptions) {
    this.now = opts.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.opts.resyncMs > 0;
  }

  /** A new timer pass: the next check lists the hub's BMIs (and, for a record due for its resync, the rest) again. */
  beginPass(): void {
    this.passDigests = undefined;
    this.passHub = undefined;
    this.passUnwatched = undefined;
    // Restored records of orders no pass has listed (deleted while no process ran) end after one resync interval.
    const now = this.now();
    for (const [key, s] of this.settled) if (s.restoredUntil !== undefined && now >= s.restoredUntil) this.settled.delete(key);
  }

  /** The order's world may have moved: it is not settled, and a reconcile already running cannot settle it. */
  invalidate(ref: OrderRef): void {
    const key = orderKey(ref);
    this.settled.delete(key);
    this.epochs.set(key, (this.epochs.get(key) ?? 0) + 1);
  }

  /** The order is gone (or another replica's): nothing of it is kept; `stored` also removes its stored record. */
  forget(ref: OrderRef, opts: { stored?: boolean } = {}): void {
    const key = orderKey(ref);
    this.settled.delete(key);
    this.epochs.delete(key);
    if (opts.stored) {
      this.opts.store?.remove(key).catch((err: unknown) => this.opts.log?.("a settled record could not be removed", { order: key, err: String(err) }));
    }
  }

  /**
   * The loop's watches have the versions they start from once `started` resolves. A restored record is
   * compared only with a hub listing made after that, so that no change falls between the listing and the
   * watches; until then (at most WATCH_WAIT_MS per check) it does not hold.
   */
  watchesStarted(started: Promise<void>): void {
    this.watching = started.then(() => true);
  }

  /** The worker gauges the order's settled record holds. */
  gauges(ref: OrderRef): OrderWorkerCounts | undefined {
    return this.settled.get(orderKey(ref))?.gauges;
  }

  /** Taken when a full reconcile starts; it ends the order's settled state. */
  begin(ref: OrderRef): SettleToken {
    const key = orderKey(ref);
    this.settled.delete(key);
    return { key, epoch: this.epochs.get(key) ?? 0 };
  }

  /** Records a settled reconcile, unless the order was invalidated since its token was taken. */
  record(token: SettleToken, seen: SettledObservation): boolean {
    if (!this.enabled || (this.epochs.get(token.key) ?? 0) !== token.epoch) return false;
    const resyncAt = this.now() + spread(token.key, this.opts.resyncMs);
    const { dueAt, ...kept } = seen;
    const comparable = kept.uid !== undefined && kept.hubDigest !== undefined && kept.unwatched !== undefined;
    const entry: Settled = { ...kept, resyncAt, until: Math.min(dueAt ?? Infinity, comparable ? Infinity : resyncAt) };
    this.settled.set(token.key, entry);
    this.persist(token.key, entry);
    return true;
  }

  /**
   * Loads the stored records of this context that have not expired, each to be verified against the hub in
   * its first check. Returns them (e.g. for the worker gauges). A store that cannot be read restores nothing.
   */
  async restore(): Promise<StoredSettled[]> {
    if (!this.enabled || !this.opts.store) return [];
    let stored: StoredSettled[];
    try {
      stored = await this.opts.store.load();
    } catch (err) {
      this.opts.log?.("settled records could not be read; every order is observed once", { err: String(err) });
      return [];
    }
    const now = this.now();
    const fresh = stored.filter((r) => r.context === this.context() && (r.until ?? Infinity) > now && !this.settled.has(r.key));
    for (const r of fresh) {
      const { key, context: _context, until, ...seen } = r;
      this.settled.set(key, { ...seen, until: until ?? Infinity, resyncAt: 0, restoredUntil: now + this.opts.resyncMs });
    }
    return fresh;
  }

  private contextKey?: string;
  private context(): string {
    return (this.contextKey ??= this.opts.context?.() ?? "");
  }

  private persist(key: string, entry: Settled): void {
    const store = this.opts.store;
    const { uid, hubDigest, unwatched } = entry;
    if (!store || uid === undefined || hubDigest === undefined || unwatched === undefined) return;
    const { plan: _plan, restoredUntil: _restored, resyncAt: _resyncAt, ...seen } = entry;
    store.save({ ...seen, uid, hubDigest, unwatched, key, until: Number.isFinite(entry.until) ? entry.until : null, context: this.context() })
      .catch((err: unknown) => this.opts.log?.("a settled record could not be stored", { order: key, err: String(err) }));
  }

  /**
   * The settled plan when the order, as the tick listed it, is still settled; otherwise why not. The
   * reconcile that follows a miss starts with begin(), which ends the settled state.
   */
  async check(ref: OrderRef, listed: Pick<ClusterOrder, "metadata">): Promise<SettledHit | { miss: SettledMiss }> {
    const s = this.settled.get(orderKey(ref));
    if (!s) return { miss: "none" };
    const now = this.now();
    if (now >= s.until) return { miss: "expired" };
    if (listed.metadata.resourceVersion !== s.resourceVersion) return { miss: "order-changed" };
    if (s.uid !== undefined && listed.metadata.uid !== s.uid) return { miss: "order-changed" };
    const digests = await (this.passDigests ??= this.opts.listBmiDigests().catch(() => undefined));
    if (!digests) return { miss: "bmis-unreadable" };
    if ((digests.get(listed.metadata.uid) ?? EMPTY_DIGEST) !== s.bmiDigest) return { miss: "bmis-changed" };
    if ((await this.opts.pinOf(ref)) !== s.pin) return { miss: "pin-changed" };
    if (now < s.resyncAt) return { plan: s.plan, resynced: false };
    const miss = await this.resync(ref, s);
    if (miss) return { miss };
    s.resyncAt = now + spread(orderKey(ref), this.opts.resyncMs);
    s.restoredUntil = undefined;
    return { plan: s.plan, resynced: true };
  }

  /**
   * The comparisons of a record due for its resync with the hub and the service as they are now (the
   * watches tell of every change of the hub's objects after this; nothing tells of the unwatched inputs).
   */
  private async resync(ref: OrderRef, s: Settled): Promise<SettledMiss | undefined> {
    const { uid, hubDigest, unwatched } = s;
    if (uid === undefined || hubDigest === undefined || unwatched === undefined) return "expired";
    const listHub = this.opts.listHubDigests;
    if (!listHub || !(await within(this.watching, WATCH_WAIT_MS, () => false))) return "hub-unreadable";
    const hubOf = await (this.passHub ??= listHub().catch(() => undefined));
    if (!hubOf) return "hub-unreadable";
    if (hubOf({ namespace: ref.namespace, name: ref.name, uid }) !== hubDigest) return "hub-changed";
    const listUnwatched = this.opts.listUnwatchedDigests;
    const unwatchedOf = listUnwatched && await (this.passUnwatched ??= listUnwatched().catch(() => undefined));
    const digest = unwatchedOf && await unwatchedOf(unwatched.keys).catch(() => undefined);
    if (digest === undefined) return "unwatched-unreadable";
    return digest === unwatched.digest ? undefined : "unwatched-changed";
  }
}

const WATCH_WAIT_MS = 10_000;

/** A rollback pin as the settled record compares it ("" for none). */
export function pinKey(pin: Readonly<Pin> | undefined): string {
  return pin ? JSON.stringify([pin.update ?? null, Object.entries(pin.counts).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]) : "";
}

/** An order with no BMI has no entry in the pass's listing. */
const EMPTY_DIGEST = bmiDigest([]);

/**
 * A resync time in [3/4, 1] of the interval, fixed per order: orders settled in the same pass do not all
 * fall due in the same later pass.
 */
export function spread(key: string, resyncMs: number): number {
  const frac = crypto.createHash("sha256").update(key).digest().readUInt32BE(0) / 0x1_0000_0000;
  return Math.round(resyncMs * (0.75 + 0.25 * frac));
}
