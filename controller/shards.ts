// How the hub's orders are split between reconciler replicas (issue 19): an order belongs to shard
// hash(uid) mod N, each shard has a Lease, and each shard is assigned to one live replica by
// rendezvous hashing bounded by each replica's share, so a replica that joins or leaves moves few shards
// and none gets more than its share.
import * as crypto from "node:crypto";

/** The name of the single Lease, and the prefix of the shard and member Leases, of acting reconcilers. */
export const LEASE_BASE = "baremetal-workers";
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

/**
 * Which live member each shard is assigned to: shard by shard, the member with the highest hash of
 * (member, shard) among those below their share (at most ceil(shards / members) each). Every replica
 * computes the same table from the same member list; a member that joins or leaves moves few shards
 * (rendezvous hashing), and no member gets more than its share (plain rendezvous hashing leaves a
 * replica idle as often as not when there are as many shards as replicas).
 */
export function assignment(shards: number, members: readonly string[]): (string | undefined)[] {
  const sorted = [...new Set(members)].sort();
  if (sorted.length === 0) return Array.from({ length: shards }, () => undefined);
  const cap = Math.ceil(shards / sorted.length);
  const load = new Map(sorted.map((m) => [m, 0]));
  return Array.from({ length: shards }, (_, shard) => {
    const ranked = [...sorted].sort((a, b) => hash32(`${b}\u0000${shard}`) - hash32(`${a}\u0000${shard}`) || (a < b ? -1 : 1));
    const m = ranked.find((r) => (load.get(r) ?? 0) < cap)!;
    load.set(m, (load.get(m) ?? 0) + 1);
    return m;
  });
}

/** The live member a shard is assigned to (see assignment). */
export function assignedMember(shard: number, members: readonly string[], shards: number): string | undefined {
  return assignment(shards, members)[shard];
}

/** A shard Lease as `status` shows it: which replica holds it (none when released), and when it was last renewed. */
export interface ShardHolder {
  shard: number;
  shards: number;
  holder: string;
  renewTime?: string;
}

/** The shard Leases among `leases` (any shard count: a rollout may hold two), by count then shard. */
export function shardHolders(base: string, leases: readonly { metadata: { name?: string }; spec?: { holderIdentity?: string; renewTime?: string } }[]): ShardHolder[] {
  const pattern = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-shard-(\\d+)-of-(\\d+)$`);
  return leases.flatMap((l) => {
    const m = pattern.exec(l.metadata.name ?? "");
    return m ? [{ shard: Number(m[1]), shards: Number(m[2]), holder: l.spec?.holderIdentity ?? "",
      ...(l.spec?.renewTime ? { renewTime: l.spec.renewTime } : {}) }] : [];
  }).sort((a, b) => a.shards - b.shards || a.shard - b.shard);
}
