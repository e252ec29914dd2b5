// The BMI cache kept by the Events stream (io/bmiCache.ts). Against the simulator: after any sequence of
// creates, updates, deletes and lifecycle moves its digests equal those of a fresh listing, and a synced
// pass lists nothing; a broken stream sends passes back to listing until it is synced again; a relist
// replaces what is held. With a scripted stream: the rules that make it safe when the stream delivers
// late, out of order, or something it cannot read.
import fc from "fast-check";
import type { BareMetalInstanceOut, Event, EventHandlers, EventsApi, FulfillmentClient } from "../../clients/fulfillment";
import { BmiCache } from "../../io/bmiCache";
import { listOrderBmiDigests, listOrderBmis, orderBmiDigests } from "../../io/orderBmiDigests";
import { ORDER_LABEL } from "../../planner/names";
import { clearFaults, eventually, Harness, setFault, startHarness, workerBmi } from "../fulfillment/helpers";

const SEED = Number(process.env.BMW_PROPERTY_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.BMW_BMI_CACHE_RUNS ?? 4);

function orderBmi(name: string, uid: string) {
  const b = workerBmi(name);
  return { ...b, metadata: { ...b.metadata, labels: { ...b.metadata?.labels, [ORDER_LABEL]: uid } } };
}

/**
 * How many listings of the hub's BMIs the cache made during `act`, counted where the cache calls its `list`:
 * the simulator's List count is no measure of that, because one listing is several List calls (its pages, the
 * closing check, a retry when a BMI deleted earlier disappears between pages).
 */
let listings = 0;
async function listingsDuring(act: () => Promise<unknown>): Promise<number> {
  const before = listings;
  await act();
  return listings - before;
}

describe("BmiCache against the simulator", () => {
  let h: Harness;
  let c: FulfillmentClient;
  const logs: string[] = [];
  let cache: BmiCache;
  let now = 0;
  let unsynced = 0;
  beforeAll(async () => {
    h = await startHarness();
    c = h.client();
    cache = new BmiCache({
      list: () => (listings++, listOrderBmis(c)), events: c.events, relistMs: 60_000, retryMs: 0, now: () => Date.now() + now,
      log: (msg) => logs.push(msg), onSync: (synced) => void (synced ? undefined : unsynced++),
    });
  });
  afterAll(async () => {
    cache.close();
    await h.close();
  });

  it("syncs with one listing, then answers from the stream: equal to a fresh listing after random changes, no List", async () => {
    await cache.digests();
    expect(cache.synced).toBe(true);
    let n = 0;
    const action = fc.oneof(
      fc.record({ kind: fc.constant("create" as const), order: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ kind: fc.constant("label" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 400 }) }),
    );
    await fc.assert(fc.asyncProperty(fc.array(action, { minLength: 3, maxLength: 10 }), async (actions) => {
      for (const a of actions) {
        const live = (await listOrderBmis(c)).filter((b) => !b.metadata?.deletion_timestamp);
        if (a.kind === "create") await c.bareMetalInstances.create(orderBmi(`cache-${n++}`, `uid-${a.order}`));
        else if (a.kind === "wait") await new Promise((r) => setTimeout(r, a.ms));
        else if (live.length > 0) {
          const b = live[a.pick % live.length];
          if (a.kind === "delete") await c.bareMetalInstances.delete(b.id);
          else await c.bareMetalInstances.update({ id: b.id, metadata: { labels: { ...b.metadata?.labels, touched: String(n++) } } }, { updateMask: ["metadata.labels"] });
        }
      }
      // The stream is asynchronous: the cache agrees with the listing once the events have arrived.
      await eventually(async () => {
        const [cached, listed] = [await cache.digests(), await listOrderBmiDigests(c)];
        return JSON.stringify([...cached].sort()) === JSON.stringify([...listed].sort()) ? true : undefined;
      });
      expect(await listingsDuring(() => cache.digests())).toBe(0);
    }), { seed: SEED, numRuns: RUNS, endOnFailure: true });
    // One stream all along: the agreement came from its events, not from a break and a new listing.
    expect(unsynced).toBe(0);
    expect(cache.synced).toBe(true);
  });

  it("a broken stream sends the next pass back to one listing, which syncs a new stream; later changes arrive by it", async () => {
    await cache.digests();
    await setFault(h.lab, { method: { method: "Events/Watch", code: "UNAVAILABLE", times: 1 } });
    await eventually(async () => (cache.synced ? undefined : true));
    expect(logs.some((m) => m.includes("event stream ended"))).toBe(true);
    await clearFaults(h.lab);
    const made = await c.bareMetalInstances.create(orderBmi("cache-after-break", "uid-9"));
    let digests = new Map<string, string>();
    expect(await listingsDuring(async () => (digests = await cache.digests()))).toBe(1);
    expect(cache.synced).toBe(true);
    expect(digests.get("uid-9")).toBe((await listOrderBmiDigests(c)).get("uid-9"));
    await c.bareMetalInstances.delete(made.id);
    await eventually(async () => ((await cache.digests()).get("uid-9") === (await listOrderBmiDigests(c)).get("uid-9") ? true : undefined));
  });

  it("lists again once its relist is due, and not before", async () => {
    await cache.digests();
    expect(await listingsDuring(() => cache.digests())).toBe(0);
    now += 60_000;
    expect(await listingsDuring(() => cache.digests())).toBe(1);
    expect(cache.synced).toBe(true);
    expect(await listingsDuring(() => cache.digests())).toBe(0);
  });
});

/** A stream the test scripts: it opens when told and delivers what the test sends. */
class ScriptedEvents implements EventsApi {
  handlers?: EventHandlers;
  opened = 0;
  closed = 0;
  watch(_filter: unknown, handlers: EventHandlers) {
    this.handlers = handlers;
    this.opened++;
    queueMicrotask(() => handlers.onOpen?.());
    return { close: () => void this.closed++ };
  }
  send(type: Event["type"], bmi: BareMetalInstanceOut | undefined): void {
    this.handlers?.onEvent({ id: "e", type, ...(bmi ? { bare_metal_instance: bmi, payload: "bare_metal_instance" as const } : {}) } as Event);
  }
}

function bmi(id: string, uid: string, version: number, state = "BARE_METAL_INSTANCE_STATE_RUNNING"): BareMetalInstanceOut {
  return {
    id, metadata: { name: id, tenant: "system", version, labels: { [ORDER_LABEL]: uid } },
    status: { state }, spec: { network_attachments: [] },
  } as unknown as BareMetalInstanceOut;
}

describe("BmiCache with a scripted stream", () => {
  function setup(items: BareMetalInstanceOut[]) {
    const events = new ScriptedEvents();
    const logs: string[] = [];
    let lists = 0;
    let listing = items;
    const cache = new BmiCache({ list: async () => (lists++, listing), events, relistMs: 60_000, log: (m) => logs.push(m) });
    return { events, cache, logs, lists: () => lists, relist: (next: BareMetalInstanceOut[]) => (listing = next) };
  }

  it("takes a change only when its version is newer; a deleted id stays deleted until the next listing", async () => {
    const s = setup([bmi("a", "o1", 3)]);
    await s.cache.digests();
    const synced = (await s.cache.digests()).get("o1");
    s.events.send("EVENT_TYPE_OBJECT_UPDATED", bmi("a", "o1", 2, "BARE_METAL_INSTANCE_STATE_FAILED"));
    s.events.send("EVENT_TYPE_OBJECT_UPDATED", bmi("a", "o1", 3, "BARE_METAL_INSTANCE_STATE_FAILED"));
    expect((await s.cache.digests()).get("o1")).toBe(synced);
    s.events.send("EVENT_TYPE_OBJECT_UPDATED", bmi("a", "o1", 4, "BARE_METAL_INSTANCE_STATE_FAILED"));
    expect((await s.cache.digests()).get("o1")).toBe(orderBmiDigests([bmi("a", "o1", 4, "BARE_METAL_INSTANCE_STATE_FAILED")]).get("o1"));
    s.events.send("EVENT_TYPE_OBJECT_DELETED", bmi("a", "o1", 5));
    s.events.send("EVENT_TYPE_OBJECT_UPDATED", bmi("a", "o1", 9)); // late, out of order
    expect((await s.cache.digests()).has("o1")).toBe(false);
    expect(s.lists()).toBe(1);
  });

  it("applies the events that came during its listing after it, by version", async () => {
    const s = setup([]);
    const labelled = (b: BareMetalInstanceOut, v: string) => ({ ...b, metadata: { ...b.metadata!, labels: { ...b.metadata!.labels, v } } });
    const cache = new BmiCache({
      list: async () => {
        s.events.send("EVENT_TYPE_OBJECT_CREATED", bmi("b", "o2", 0));
        s.events.send("EVENT_TYPE_OBJECT_UPDATED", labelled(bmi("a", "o1", 3), "newer")); // newer than the listing's
        s.events.send("EVENT_TYPE_OBJECT_UPDATED", bmi("a", "o1", 1, "BARE_METAL_INSTANCE_STATE_FAILED")); // older
        return [bmi("a", "o1", 2)];
      },
      events: s.events, relistMs: 60_000,
    });
    const digests = await cache.digests();
    expect(digests.get("o1")).toBe(orderBmiDigests([labelled(bmi("a", "o1", 3), "newer")]).get("o1"));
    expect(digests.get("o2")).toBe(orderBmiDigests([bmi("b", "o2", 0)]).get("o2"));
    cache.close();
  });

  it("a relist replaces what is held: a change no event told of is corrected, and a deleted id may come back", async () => {
    let now = 0;
    const events = new ScriptedEvents();
    let listing = [bmi("a", "o1", 1), bmi("c", "o3", 1)];
    const cache = new BmiCache({ list: async () => listing, events, relistMs: 60_000, now: () => now });
    await cache.digests();
    events.send("EVENT_TYPE_OBJECT_DELETED", bmi("c", "o3", 2));
    listing = [bmi("a", "o1", 2, "BARE_METAL_INSTANCE_STATE_FAILED"), bmi("c", "o3", 3)]; // the event of a's change was lost
    const stale = await cache.digests();
    expect(stale.get("o1")).toBe(orderBmiDigests([bmi("a", "o1", 1)]).get("o1"));
    expect(stale.has("o3")).toBe(false);
    now += 60_000;
    expect([...(await cache.digests())].sort()).toEqual([...orderBmiDigests(listing)].sort());
    cache.close();
  });

  it("a stream whose headers never come is used after the grace period, and the next pass lists once more", async () => {
    let lists = 0;
    const events: EventsApi = { watch: () => ({ close: () => undefined }) };
    const cache = new BmiCache({ list: async () => (lists++, [bmi("a", "o1", 1)]), events, relistMs: 60_000, openGraceMs: 10 });
    await cache.digests();
    expect(cache.synced).toBe(true);
    await cache.digests();
    await cache.digests();
    expect(lists).toBe(2);
    cache.close();
  });

  it("an event with no BMI stops trusting the stream: it is closed and each pass lists until the retry time", async () => {
    const s = setup([bmi("a", "o1", 1)]);
    await s.cache.digests();
    s.events.send("EVENT_TYPE_OBJECT_UPDATED", undefined);
    expect(s.cache.synced).toBe(false);
    expect(s.events.closed).toBe(1);
    expect(s.logs.some((m) => m.includes("carries no BareMetalInstance"))).toBe(true);
    await s.cache.digests();
    await s.cache.digests();
    expect(s.lists()).toBe(3);
    expect(s.events.opened).toBe(1);
  });

  it("a stream that ends before it opens: passes list, and no new stream is tried before the retry time", async () => {
    const events: EventsApi = { watch: (_f, h) => (queueMicrotask(() => h.onEnd(new Error("unimplemented"))), { close: () => undefined }) };
    let lists = 0;
    let opened = 0;
    const cache = new BmiCache({
      list: async () => (lists++, [bmi("a", "o1", 1)]),
      events: { watch: (f, h) => (opened++, events.watch(f, h)) }, relistMs: 60_000,
    });
    expect((await cache.digests()).get("o1")).toBe(orderBmiDigests([bmi("a", "o1", 1)]).get("o1"));
    await cache.digests();
    expect({ lists, opened, synced: cache.synced }).toEqual({ lists: 2, opened: 1, synced: false });
  });

  it("a listing that fails fails the pass and leaves the cache unsynced", async () => {
    const events = new ScriptedEvents();
    const cache = new BmiCache({ list: async () => { throw new Error("UNAVAILABLE"); }, events, relistMs: 60_000 });
    await expect(cache.digests()).rejects.toThrow("UNAVAILABLE");
    expect(cache.synced).toBe(false);
    cache.close();
  });
});
