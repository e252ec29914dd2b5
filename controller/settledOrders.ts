// Settled orders: a steady timer pass over orders whose last reconcile found nothing to do, answered
// without observing each of them again. An order is settled when its last reconcile skipped (the stack
// holds its plan) with every requested worker Ready and nothing pending. It stays settled until any of
// these says its world may have moved, and then the next reconcile observes in full:
//   - a watch event for it (ClusterOrder, Agent, NodePool, InfraEnv) or any requeue (the loop invalidates);
//   - the ClusterOrder's resourceVersion in the tick's listing differs from the one observed;
//   - its BMIs in this pass's one hub-wide listing (io/orderBmiDigests.ts) differ from those observed;
//   - its rollback pin changed;
//   - its periodic refresh or its plan's requeue time (e.g. a retried worker's healthy period) is due,
//     or its resync time came (catches what nothing here watches: the ClusterDeployment, the catalog,
//     the disk image).
// A settled check only ever skips a reconcile; it never plans, writes or deletes anything.
import * as crypto from "node:crypto";
import type { OrderRef } from "../io/observe";
import { bmiDigest } from "../io/orderBmiDigests";
import type { Pin } from "../planner/pin";
import type { ClusterOrder, Plan } from "../planner/types";
import { orderKey } from "./reconcileDeps";

export interface SettledOrdersOptions {
  /** The hub's BMIs, digested per order uid; listed at most once per pass. */
  listBmiDigests: () => Promise<Map<string, string>>;
  /** The order's rollback pin, as a comparable string ("" for none). */
  pinOf: (ref: OrderRef) => Promise<string>;
  /** Longest time an order stays settled without a full reconcile (0: never settled). */
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
}

interface Settled extends SettledObservation {
  until: number;
}

/** Held by a reconcile from its start: recording succeeds only if nothing invalidated the order since. */
export interface SettleToken {
  key: string;
  epoch: number;
}

export type SettledMiss = "none" | "expired" | "order-changed" | "bmis-changed" | "bmis-unreadable" | "pin-changed";

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
  private readonly now: () => number;

  constructor(private readonly opts: SettledOrdersOptions) {
    this.now = opts.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.opts.resyncMs > 0;
  }

  /** A new timer pass: the next check lists the hub's BMIs again. */
  beginPass(): void {
    this.passDigests = undefined;
  }

  /** The order's world may have moved: it is not settled, and a reconcile already running cannot settle it. */
  invalidate(ref: OrderRef): void {
    const key = orderKey(ref);
    this.settled.delete(key);
    this.epochs.set(key, (this.epochs.get(key) ?? 0) + 1);
  }

  forget(ref: OrderRef): void {
    this.settled.delete(orderKey(ref));
    this.epochs.delete(orderKey(ref));
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
    const now = this.now();
    const resyncAt = now + spread(token.key, this.opts.resyncMs);
    this.settled.set(token.key, { ...seen, until: Math.min(resyncAt, seen.dueAt ?? Infinity) });
    return true;
  }

  /**
   * The settled plan when the order, as the tick listed it, is still settled; otherwise why not. The
   * reconcile that follows a miss starts with begin(), which ends the settled state.
   */
  async check(ref: OrderRef, listed: Pick<ClusterOrder, "metadata">): Promise<{ plan: Plan } | { miss: SettledMiss }> {
    const s = this.settled.get(orderKey(ref));
    if (!s) return { miss: "none" };
    if (this.now() >= s.until) return { miss: "expired" };
    if (listed.metadata.resourceVersion !== s.resourceVersion) return { miss: "order-changed" };
    const digests = await (this.passDigests ??= this.opts.listBmiDigests().catch(() => undefined));
    if (!digests) return { miss: "bmis-unreadable" };
    if ((digests.get(listed.metadata.uid) ?? EMPTY_DIGEST) !== s.bmiDigest) return { miss: "bmis-changed" };
    if ((await this.opts.pinOf(ref)) !== s.pin) return { miss: "pin-changed" };
    return { plan: s.plan };
  }
}

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
