// How shards are assigned to replicas and how a replica's memory of an order follows its shard (pure; the
// Lease behaviour itself is in shardElector.test.ts). Property-based: any member set of up to 12 replicas
// and any shard count up to 64 (BMW_PROPERTY_RUNS raises the run count).
import fc from "fast-check";
import { assignment, shardHolders, shardOf } from "../../controller/shards";
import { ShardOwnership } from "../../controller/ownership";

const RUNS = Number(process.env.BMW_PROPERTY_RUNS ?? 200);
const members = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,11}$/), { minLength: 1, maxLength: 12 });

describe("assignment of shards to live replicas", () => {
  it("assigns every shard to a live member, none above its share, the same whatever the order of the member list", () => {
    fc.assert(fc.property(members, fc.integer({ min: 1, max: 64 }), (ms, shards) => {
      const table = assignment(shards, ms);
      expect(table).toHaveLength(shards);
      const cap = Math.ceil(shards / ms.length);
      const load = new Map<string, number>();
      for (const m of table) {
        expect(ms).toContain(m);
        load.set(m!, (load.get(m!) ?? 0) + 1);
      }
      for (const n of load.values()) expect(n).toBeLessThanOrEqual(cap);
      // As many shards as replicas: each replica gets one (none idles).
      if (shards === ms.length) expect(load.size).toBe(ms.length);
      expect(assignment(shards, [...ms].reverse().concat(ms))).toEqual(table);
    }), { numRuns: RUNS });
  });

  it("a replica that leaves moves its shards and few others", () => {
    let moved = 0;
    let total = 0;
    fc.assert(fc.property(members.filter((ms) => ms.length >= 2), fc.integer({ min: 8, max: 64 }), fc.nat(), (ms, shards, pick) => {
      const gone = ms[pick % ms.length];
      const before = assignment(shards, ms);
      const after = assignment(shards, ms.filter((m) => m !== gone));
      expect(after).not.toContain(gone);
      // Shards of the members that stay move only when the shares shift.
      moved += before.filter((m, i) => m !== gone && after[i] !== m).length;
      total += before.filter((m) => m !== gone).length;
    }), { numRuns: RUNS });
    // Measured, not a property of each case: most shards of the members that stay stay where they were.
    expect(moved / total).toBeLessThan(0.35);
  });

  it("shards by uid, and reads the shard Leases of any count for status", () => {
    expect(shardOf("3f0a-uid", 1)).toBe(0);
    expect(new Set(Array.from({ length: 300 }, (_, i) => shardOf(`uid-${i}`, 3))).size).toBe(3);
    expect(shardHolders("bmw", [
      { metadata: { name: "bmw-shard-2-of-3" }, spec: { holderIdentity: "r1", renewTime: "2026-12-06T00:00:00.000000Z" } },
      { metadata: { name: "bmw-member-0123" }, spec: { holderIdentity: "r1" } },
      { metadata: { name: "bmw-shard-0-of-2" }, spec: {} },
      { metadata: { name: "other-shard-0-of-3" }, spec: { holderIdentity: "x" } },
    ])).toEqual([
      { shard: 0, shards: 2, holder: "" },
      { shard: 2, shards: 3, holder: "r1", renewTime: "2026-12-06T00:00:00.000000Z" },
    ]);
  });
});

describe("what a replica remembers of an order follows the order's shard", () => {
  function setup() {
    const held = new Set<number>();
    const forgotten: string[] = [];
    const elector = {
      shardOf: (uid: string) => Number(uid.split("-")[1]),
      owns: (uid: string) => held.has(Number(uid.split("-")[1])),
      isHolderGone: (_uid: string, holder: string) => holder === "gone",
    };
    const o = new ShardOwnership(elector, 3, (ref) => forgotten.push(`${ref.namespace}/${ref.name}`));
    return { held, forgotten, o };
  }
  const a = { namespace: "ns", name: "a" };
  const b = { namespace: "ns", name: "b" };

  it("an order is acted on only while its shard is held, judged by the uid just read", () => {
    const { held, o } = setup();
    expect(o.ownsRef(a)).toBeUndefined(); // never seen: the reconcile reads it and decides
    o.noteUid(a, "uid-1");
    expect(o.ownsRef(a)).toBe(false);
    held.add(1);
    expect(o.ownsRef(a)).toBe(true);
    // Deleted and re-created under the same name: another uid, maybe of another shard.
    expect(o.claim(a, "uid-2")).toBe(false);
    expect(o.ownsRef(a)).toBe(false);
    expect(o.isHolderGone("gone", a)).toBe(true);
    expect(o.isHolderGone("gone", { namespace: "ns", name: "never-seen" })).toBe(false);
  });

  it("taking a shard (again) drops what was remembered of its orders, once, before they are acted on", () => {
    const { held, forgotten, o } = setup();
    o.noteUid(a, "uid-1");
    o.noteUid(b, "uid-2");
    held.add(1);
    o.shardTaken(1);
    expect(forgotten).toEqual(["ns/a"]);
    expect(o.claim(a, "uid-1")).toBe(true);
    expect(o.claim(a, "uid-1")).toBe(true);
    expect(forgotten).toEqual(["ns/a"]); // not again while the shard stays held
    // Lost and taken back: another replica may have updated the order meanwhile.
    held.delete(1);
    held.add(1);
    o.shardTaken(1);
    expect(forgotten).toEqual(["ns/a", "ns/a"]);
    // An order first seen in a reconcile of a held shard is forgotten before its first reconcile acts.
    held.add(2);
    expect(o.claim(b, "uid-2")).toBe(true);
    expect(forgotten).toEqual(["ns/a", "ns/a", "ns/b"]);
  });
});
