// The reconciler's observation cache: shared loads, TTLs, failures never kept.
import { ObserveCache } from "../../io/observeCache";
import type { IgnitionFetch } from "../../planner/types";

describe("ObserveCache", () => {
  it("loads the shared catalog once per TTL, shares a load in flight, and forgets a failed load", async () => {
    let t = 0;
    let loads = 0;
    const cache = new ObserveCache({ catalogTtlMs: 1_000, now: () => t });
    const load = async () => ++loads;
    expect(await Promise.all([cache.catalog(load), cache.catalog(load)])).toEqual([1, 1]);
    t = 999;
    expect(await cache.catalog(load)).toBe(1);
    t = 1_000;
    expect(await cache.catalog(load)).toBe(2);
    t = 5_000;
    await expect(cache.catalog(async () => Promise.reject(new Error("UNAVAILABLE")))).rejects.toThrow("UNAVAILABLE");
    expect(await cache.catalog(load)).toBe(3); // the failure was not kept
  });

  it("offers a fresh catalog to a reader that does not load into it, and nothing once it is stale", async () => {
    let t = 0;
    const cache = new ObserveCache({ catalogTtlMs: 1_000, now: () => t });
    expect(cache.cachedCatalog()).toBeUndefined();
    void cache.catalog(async () => "created");
    expect(await cache.cachedCatalog()).toBe("created");
    t = 1_000;
    expect(cache.cachedCatalog()).toBeUndefined();
  });

  it("keeps a lookup per key for the catalog's TTL, shares one in flight, and keeps neither a failure nor what `keep` refuses", async () => {
    let t = 0;
    let loads = 0;
    const cache = new ObserveCache({ catalogTtlMs: 1_000, now: () => t });
    const found = async () => ({ items: [++loads] });
    const some = (v: { items: number[] }) => v.items.length > 0;
    expect(await Promise.all([cache.lookup("cv/a", found, some), cache.lookup("cv/a", found, some)])).toEqual([{ items: [1] }, { items: [1] }]);
    expect(await cache.lookup("cv/b", found, some)).toEqual({ items: [2] });
    t = 999;
    expect(await cache.lookup("cv/a", found, some)).toEqual({ items: [1] });
    t = 1_000;
    expect(await cache.lookup("cv/a", found, some)).toEqual({ items: [3] });
    const none = async () => ({ items: [] as number[] });
    await cache.lookup("cv/none", none, some);
    await new Promise((r) => setImmediate(r));
    expect(await cache.lookup("cv/none", found, some)).toEqual({ items: [4] });
    await expect(cache.lookup("cv/fail", async () => Promise.reject(new Error("UNAVAILABLE")), some)).rejects.toThrow("UNAVAILABLE");
    expect(await cache.lookup("cv/fail", found, some)).toEqual({ items: [5] });
  });

  it("keeps a good ignition per key for its TTL and never keeps a refusal", async () => {
    let t = 0;
    let fetches = 0;
    const cache = new ObserveCache({ ignitionTtlMs: 60_000, now: () => t });
    const good = async (): Promise<IgnitionFetch> => ({ ok: true, content: `{"n":${++fetches}}`, bytes: 8 });
    const bad = async (): Promise<IgnitionFetch> => ({ ok: false, reason: "Timeout", message: `timed out ${++fetches}` });
    const a = await cache.ignition("uid/1/https://x", good);
    expect(await cache.ignition("uid/1/https://x", good)).toBe(a);
    // A new resourceVersion of the InfraEnv is a new key: fetched again at once.
    expect(await cache.ignition("uid/2/https://x", good)).not.toBe(a);
    t = 60_000;
    expect((await cache.ignition("uid/1/https://x", good)) as { content: string }).toEqual(expect.objectContaining({ content: '{"n":3}' }));
    const refused = await cache.ignition("uid/3/https://y", bad);
    expect(refused.ok).toBe(false);
    await new Promise((r) => setImmediate(r));
    expect(await cache.ignition("uid/3/https://y", bad)).toEqual(expect.objectContaining({ message: "timed out 5" }));
  });
});
