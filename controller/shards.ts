// How the hub's orders are split between reconciler replicas (issue 19): an order belongs to shard
// hash(uid) mod N, each shard has a Lease, and each shard is assigned to one live replica by
// rendezvous hashing, so a replica that joins or leaves moves only the shards it gains or loses.
import * as crypto from "node:crypto";

/** Label on every shard Lease: the shard count its holder was configured with (controller/shardElector.ts). */
export const SHARDS_LABEL = "baremetal-workers.osac.openshift.io/shards";
/** Label on every member Lease (one per replica, its heartbeat): the Lease name prefix of its group. */
export const MEMBER_LABEL = "baremetal-workers.osac.openshift.io/member-of";

function hash32(text: string): number {
  return crypto.createHash("sha256").update(text).digest().readUInt32BE(0);
}

/** The shard of an order: the first 32 bits of sha256(uid), mod `shards`. */
export function shardOf(uid: string, shards: number): number {
  return hash32(uid) % shards;
}

export function shardLeaseName(base: string, shard: number, shards: number): string {
  return `${base}-shard-${shard}-of-${shards}`;
}

/** A replica's heartbeat Lease: its identity may be long or hold characters a name cannot, so it is hashed. */
export function memberLeaseName(base: string, identity: string): string {
  return `${base}-member-${crypto.createHash("sha256").update(identity).digest("hex").slice(0, 16)}`;
}

/** The live member a shard is assigned to: the one with the highest hash of (member, shard). */
export function assignedMember(shard: number, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const m of [...members].sort()) {
    const score = hash32(`${m}\u0000${shard}`);
    if (score > bestScore) {
      best = m;
      bestScore = score;
    }
  }
  return best;
}
