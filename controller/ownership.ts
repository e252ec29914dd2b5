// Which orders this replica may act on, for a sharded reconciler (issue 19): those of the shards whose
// Lease it holds (controller/shardElector.ts). Ownership is judged by the order's uid as a reconcile has
// just read it (a deleted and re-created order of the same name is another order, maybe of another
// shard); the loop filters by the uid it last saw, and the stacks ask again when their pulumi would start.
// When a shard is (re)taken, what this process remembers of its orders is dropped first: another replica
// may have updated their stacks meanwhile.
import type { OrderRef } from "../io/observe";
import type { ShardElector } from "./shardElector";

const keyOf = (ref: OrderRef) => `${ref.namespace}/${ref.name}`;

export interface OrderOwnership {
  /** Records the order's uid as just read; whether this replica may act on it now. */
  claim(ref: OrderRef, uid: string): boolean;
  /** Whether this replica may act on the order, by the uid last seen; undefined when none was seen. */
  ownsRef(ref: OrderRef): boolean | undefined;
  /** The loop saw the order (a list or a watch event): its uid, for ownsRef. */
  noteUid(ref: OrderRef, uid: string): void;
  /** Whether `holder` certainly acts no more on the order (for its stack's lock). */
  isHolderGone(holder: string, ref: OrderRef): boolean;
}

export class ShardOwnership implements OrderOwnership {
  private readonly uids = new Map<string, string>();
  /** The shard acquisitions each order's memory was last valid for. */
  private readonly epochs = new Map<string, number>();
  private readonly shardEpochs: number[];

  constructor(private readonly elector: Pick<ShardElector, "owns" | "shardOf" | "isHolderGone">, shards: number,
    /** Drops what this process remembers of the order (its plan memory, settled record, recovered stack). */
    private readonly forget: (ref: OrderRef) => void) {
    this.shardEpochs = Array.from({ length: shards }, () => 0);
  }

  /** A shard was taken (again): what is remembered of its orders must not be trusted (a settled record included). */
  shardTaken(shard: number): void {
    this.shardEpochs[shard]++;
    for (const [k, uid] of this.uids) {
      if (this.elector.shardOf(uid) !== shard) continue;
      const i = k.indexOf("/");
      this.forget({ namespace: k.slice(0, i), name: k.slice(i + 1) });
      this.epochs.set(k, this.shardEpochs[shard]);
    }
  }

  /** The shard of an order by the uid last seen; undefined when none was seen. */
  shardOfRef(ref: OrderRef): number | undefined {
    const uid = this.uids.get(keyOf(ref));
    return uid === undefined ? undefined : this.elector.shardOf(uid);
  }

  claim(ref: OrderRef, uid: string): boolean {
    const k = keyOf(ref);
    this.uids.set(k, uid);
    if (!this.elector.owns(uid)) return false;
    const epoch = this.shardEpochs[this.elector.shardOf(uid)];
    if (this.epochs.get(k) !== epoch) {
      this.forget(ref);
      this.epochs.set(k, epoch);
    }
    return true;
  }

  /** The loop saw the order (a list or a watch event): its uid, for ownsRef. */
  noteUid(ref: OrderRef, uid: string): void {
    this.uids.set(keyOf(ref), uid);
  }

  ownsRef(ref: OrderRef): boolean | undefined {
    const uid = this.uids.get(keyOf(ref));
    return uid === undefined ? undefined : this.elector.owns(uid);
  }

  isHolderGone(holder: string, ref: OrderRef): boolean {
    const uid = this.uids.get(keyOf(ref));
    return uid !== undefined && this.elector.isHolderGone(uid, holder);
  }
}
