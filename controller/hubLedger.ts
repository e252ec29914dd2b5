// The reconciler's count of creates and deletes in flight per order, for the hub-wide blast-radius caps.
// Each plan records what will be in flight once its update ran (so two orders planned one after the other
// cannot both take the last of the budget: taking and recording happen in one synchronous step), and the
// world is read again (io/hubInFlight.ts) when the count is older than `maxAgeMs`, for what finished since.
// An order whose reconcile was under way during a read keeps the larger of its recorded and observed
// counts: the read may predate what its update issued.
import { createsInFlight, inFlightOf } from "../planner/context";
import type { InFlight, Plan, Snapshot } from "../planner/types";
import { othersInFlight } from "../io/hubInFlight";

export interface HubLedgerOptions {
  observe: () => Promise<ReadonlyMap<string, InFlight>>;
  maxAgeMs: number;
  now?: () => number;
  log?: (message: string, fields: Record<string, unknown>) => void;
}

export class HubLedger {
  private counts = new Map<string, InFlight>();
  private recordedAt = new Map<string, number>();
  private underway = new Map<string, number>();
  /** When each order's last reconcile ended. */
  private endedAt = new Map<string, number>();
  private observedAt: number | undefined;
  private refreshing: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(private readonly opts: HubLedgerOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Reads the world when the count is older than maxAgeMs (one read at a time); a failed read leaves it unknown. */
  async refresh(): Promise<void> {
    if (this.observedAt !== undefined && this.now() - this.observedAt < this.opts.maxAgeMs) return;
    this.refreshing ??= this.observe().finally(() => {
      this.refreshing = undefined;
    });
    await this.refreshing;
  }

  private async observe(): Promise<void> {
    const startedAt = this.now();
    let world: ReadonlyMap<string, InFlight>;
    try {
      world = await this.opts.observe();
    } catch (err) {
      // Unknown until the next read; what plans recorded stays (reconciles under way still count).
      this.observedAt = undefined;
      this.opts.log?.("the hub's creates and deletes in flight could not be read; nothing under a hub-wide cap starts", { error: String(err) });
      return;
    }
    const merged = new Map<string, InFlight>();
    for (const uid of new Set([...world.keys(), ...this.counts.keys()])) {
      const seen = world.get(uid) ?? { creates: 0, deletes: 0 };
      const recorded = this.counts.get(uid);
      // The read may have seen the world before this order's fence or deletes: while its reconcile is under
      // way, or if it planned or ended after the read began, the larger of the two counts stands.
      const unsettled = this.underway.has(uid) || (this.recordedAt.get(uid) ?? 0) >= startedAt || (this.endedAt.get(uid) ?? 0) >= startedAt;
      merged.set(uid, recorded && unsettled
        ? { creates: Math.max(seen.creates, recorded.creates), deletes: Math.max(seen.deletes, recorded.deletes) } : seen);
    }
    this.counts = merged;
    this.observedAt = startedAt;
  }

  /** The other orders' count, or undefined while the hub's count is unknown. */
  others(uid: string): InFlight | undefined {
    return this.observedAt === undefined ? undefined : othersInFlight(this.counts, uid);
  }

  /** What will be in flight for the order once `plan`'s update ran: its creates as status records them, its deletes issued. */
  record(snapshot: Snapshot, plan: Plan): void {
    const uid = snapshot.order.metadata.uid;
    const issued = (plan.changes ?? []).filter((c) => c.op === "delete").length;
    this.counts.set(uid, { creates: createsInFlight(plan.status.workers), deletes: inFlightOf(snapshot).deletes + issued });
    this.recordedAt.set(uid, this.now());
  }

  /** Brackets a reconcile of the order (nested reconciles of one order count once). */
  begin(uid: string): void {
    this.underway.set(uid, (this.underway.get(uid) ?? 0) + 1);
  }

  end(uid: string): void {
    this.endedAt.set(uid, this.now());
    const n = (this.underway.get(uid) ?? 1) - 1;
    if (n > 0) this.underway.set(uid, n);
    else this.underway.delete(uid);
  }
}
