// Settled orders (controller/settledOrders.ts): when a steady pass may skip an order without observing
// it, and every way that state ends; and the hub-wide BMI digests (io/orderBmiDigests.ts) against the
// observation of each order, on the in-memory fake.
import { FakeFulfillment, fakeFulfillment } from "../fakes/fulfillment";
import { hubWith, ORDER_UID, orderRecording } from "../fulfillment/observeFixture";
import { testSeed, workerBmi } from "../fulfillment/helpers";
import { observe } from "../../io/observe";
import { bmiDigest, listOrderBmiDigests } from "../../io/orderBmiDigests";
import { defaultPlannerConfig } from "../../planner/config";
import type { Plan, WorkerStatus } from "../../planner/types";
import { pinKey, SettledOrders, spread, type SettledObservation, unsettledReason } from "../../controller/settledOrders";
import type { SettledStore, StoredSettled } from "../../controller/settledStore";

const ref = { namespace: "ns", name: "demo" };
const listed = (resourceVersion = "10", uid = "uid-1") => ({ metadata: { ...ref, uid, resourceVersion } });
const ready = (i: number): WorkerStatus => ({ name: `w-${i}`, kind: "BareMetalInstance", nodeSet: "compute", phase: "Ready" } as WorkerStatus);

function plan(over: Partial<Plan> = {}, status: Partial<Plan["status"]> = {}): Plan {
  return {
    nodePoolReplicas: {}, workers: [], fence: [], events: [],
    status: { workers: [ready(0), ready(1)], desiredWorkers: 2, currentWorkers: 2, readyWorkers: 2, conditions: [], ...status },
    ...over,
  };
}

describe("unsettledReason", () => {
  it.each<[string, Plan, boolean, string[] | undefined, boolean]>([
    ["every requested worker Ready, nothing pending", plan(), true, undefined, true],
    ["no workers requested, none there", plan({}, { workers: [], desiredWorkers: 0, currentWorkers: 0, readyWorkers: 0 }), true, undefined, true],
    ["BMIs unreadable", plan(), false, undefined, false],
    ["a BMI confirmed gone", plan(), true, ["id-1"], false],
    ["paused", plan({ paused: { reason: "Unmanaged", message: "m" } }), true, undefined, false],
    ["a requeue time alone (it ends the state when it comes)", plan({ requeueAt: "2026-12-05T00:00:00Z" }), true, undefined, true],
    ["a fence pending", plan({ fence: [ready(2)] }), true, undefined, false],
    ["one worker short of the request", plan({}, { desiredWorkers: 3 }), true, undefined, false],
    ["a worker not Ready", plan({}, { workers: [ready(0), { ...ready(1), phase: "Binding" }], readyWorkers: 1 }), true, undefined, false],
    ["a Failed worker beside Ready ones", plan({}, { workers: [ready(0), ready(1), { ...ready(2), phase: "Failed" }] }), true, undefined, false],
  ])("%s", (_what, p, bmisKnown, gone, want) => {
    expect(unsettledReason(p, bmisKnown, gone) === undefined).toBe(want);
  });
});

describe("SettledOrders", () => {
  let now = 1_000_000;
  let digests = new Map<string, string>([["uid-1", "d1"]]);
  let listings = 0;
  let pin = "";
  const seen = (over: Partial<SettledObservation> = {}): SettledObservation =>
    ({ resourceVersion: "10", bmiDigest: "d1", pin: "", plan: plan(), ...over });
  const make = (resyncMs = 600_000, failListing = false) => new SettledOrders({
    listBmiDigests: async () => {
      listings++;
      if (failListing) throw new Error("UNAVAILABLE");
      return digests;
    },
    pinOf: async () => pin, resyncMs, now: () => now,
  });
  beforeEach(() => {
    now = 1_000_000;
    digests = new Map([["uid-1", "d1"]]);
    listings = 0;
    pin = "";
  });

  it("answers a settled order with its plan, listing the hub's BMIs once per pass however many orders it checks", async () => {
    const s = make();
    s.record(s.begin(ref), seen());
    s.record(s.begin({ namespace: "ns", name: "other" }), seen({ bmiDigest: "d2" }));
    digests.set("uid-2", "d2");
    expect(await s.check(ref, listed())).toEqual({ plan: plan(), resynced: false });
    expect(await s.check({ namespace: "ns", name: "other" }, { metadata: { namespace: "ns", name: "other", uid: "uid-2", resourceVersion: "10" } }))
      .toEqual({ plan: plan(), resynced: false });
    expect(listings).toBe(1);
    s.beginPass();
    await s.check(ref, listed());
    expect(listings).toBe(2);
  });

  it.each<[string, () => void, string]>([
    ["the order's version moved (an edit, a status write)", () => undefined, "order-changed"],
    ["its BMIs differ in this pass's listing", () => digests.set("uid-1", "d1-changed"), "bmis-changed"],
    ["its BMIs are all gone from the listing", () => digests.delete("uid-1"), "bmis-changed"],
    ["its rollback pin changed", () => { pin = pinKey({ counts: { compute: 1 } }); }, "pin-changed"],
    ["the resync time came, for a record without what a resync compares", () => { now += 600_001; }, "expired"],
  ])("is no longer settled when %s", async (what, change, miss) => {
    const s = make();
    s.record(s.begin(ref), seen());
    change();
    const rv = what.startsWith("the order's version") ? "11" : "10";
    expect(await s.check(ref, listed(rv))).toEqual({ miss });
  });

  it("is not settled when the listing fails, and lists no second time in the same pass", async () => {
    const s = make(600_000, true);
    s.record(s.begin(ref), seen());
    expect(await s.check(ref, listed())).toEqual({ miss: "bmis-unreadable" });
    expect(await s.check(ref, listed())).toEqual({ miss: "bmis-unreadable" });
    expect(listings).toBe(1);
  });

  it("an order with no BMI is settled against the digest of none", async () => {
    const s = make();
    s.record(s.begin(ref), seen({ bmiDigest: bmiDigest([]) }));
    digests.delete("uid-1");
    expect(await s.check(ref, listed())).toEqual({ plan: plan(), resynced: false });
  });

  it("ends when the order is due (periodic refresh, requeue time) if that comes before the resync", async () => {
    const s = make();
    s.record(s.begin(ref), seen({ dueAt: now + 1_000 }));
    now += 999;
    expect("plan" in await s.check(ref, listed())).toBe(true);
    now += 1;
    expect(await s.check(ref, listed())).toEqual({ miss: "expired" });
  });

  it("an invalidation while a reconcile runs keeps that reconcile from settling the order", async () => {
    const s = make();
    const token = s.begin(ref);
    s.invalidate(ref); // a watch event during the reconcile: its observation may predate the change
    expect(s.record(token, seen())).toBe(false);
    expect(await s.check(ref, listed())).toEqual({ miss: "none" });
    // The next reconcile, started after the event, may.
    expect(s.record(s.begin(ref), seen())).toBe(true);
    expect("plan" in await s.check(ref, listed())).toBe(true);
  });

  it("a full reconcile that starts ends the settled state, whatever it then finds", async () => {
    const s = make();
    s.record(s.begin(ref), seen());
    s.begin(ref);
    expect(await s.check(ref, listed())).toEqual({ miss: "none" });
  });

  it("records nothing when disabled (resync 0)", async () => {
    const s = make(0);
    expect(s.enabled).toBe(false);
    expect(s.record(s.begin(ref), seen())).toBe(false);
    expect(await s.check(ref, listed())).toEqual({ miss: "none" });
  });

  it("spreads resync times over the last quarter of the interval, fixed per order", () => {
    const times = Array.from({ length: 200 }, (_, i) => spread(`ns/order-${i}`, 600_000));
    expect(Math.min(...times)).toBeGreaterThanOrEqual(450_000);
    expect(Math.max(...times)).toBeLessThanOrEqual(600_000);
    expect(new Set(times).size).toBeGreaterThan(150);
    expect(spread("ns/order-1", 600_000)).toBe(times[1]);
  });

  it("pinKey does not depend on the order of node sets", () => {
    expect(pinKey({ counts: { a: 1, b: 2 } })).toBe(pinKey({ counts: { b: 2, a: 1 } }));
    expect(pinKey(undefined)).toBe("");
    expect(pinKey({ counts: { a: 1 } })).not.toBe(pinKey({ counts: { a: 2 } }));
    expect(pinKey({ counts: { a: 1 }, update: 3 })).not.toBe(pinKey({ counts: { a: 1 }, update: 4 }));
  });
});

describe("hub-wide BMI digests", () => {
  it("equal each order's digest as its own observation sees its BMIs, from one List call", async () => {
    const service = (await fakeFulfillment({ BareMetalInstanceCatalogItems: testSeed().catalogItems, BareMetalInstanceTypes: testSeed().instanceTypes })).service;
    const admin = new FakeFulfillment(service);
    const mine = [await admin.bareMetalInstances.create(workerBmi("w-0")), await admin.bareMetalInstances.create(workerBmi("w-1"))];
    await admin.bareMetalInstances.create({ ...workerBmi("other"), metadata: { name: "other", labels: { "osac.openshift.io/cluster-order": "order-2" } } });
    await admin.bareMetalInstances.create({ ...workerBmi("unlabelled"), metadata: { name: "unlabelled", labels: {} } });
    const { snapshot } = await observe({ kube: hubWith(orderRecording(mine)), fulfillment: admin, config: defaultPlannerConfig() }, ref);
    const before = service.calls.get("/osac.private.v1.BareMetalInstances/List") ?? 0;
    const digests = await listOrderBmiDigests(admin);
    // One page and the closing empty one.
    expect(service.calls.get("/osac.private.v1.BareMetalInstances/List")! - before).toBeLessThanOrEqual(2);
    expect(digests.get(ORDER_UID)).toBe(bmiDigest(snapshot.bmis ?? []));
    expect([...digests.keys()].sort()).toEqual([ORDER_UID, "order-2"].sort());
    // Any change the planner would see changes the digest.
    await admin.bareMetalInstances.update({ ...mine[0], metadata: { ...mine[0].metadata, labels: { ...mine[0].metadata?.labels, extra: "x" } } } as never,
      { updateMask: ["metadata.labels"] });
    expect((await listOrderBmiDigests(admin)).get(ORDER_UID)).not.toBe(digests.get(ORDER_UID));
  });
});

describe("SettledOrders at its resync time and across a restart (stored records)", () => {
  let now = 1_000_000;
  let hub = "h1";
  let hubListings = 0;
  let failHub = false;
  let unwatched = "u1";
  let unwatchedListings = 0;
  let failUnwatched = false;
  const keys = { namespace: "ns", name: "demo", clusterId: "cluster-1" };
  const blobs = new Map<string, StoredSettled>();
  const store: SettledStore = {
    load: async () => [...blobs.values()],
    save: async (r) => void blobs.set(r.key, r),
    remove: async (k) => void blobs.delete(k),
  };
  const gauges = { tenant: "t1", desired: 2, ready: 2, failed: 0 };
  const seen = (over: Partial<SettledObservation> = {}): SettledObservation =>
    ({ resourceVersion: "10", bmiDigest: "d1", pin: "", plan: plan(), uid: "uid-1", hubDigest: "h1", gauges, unwatched: { keys, digest: "u1" }, ...over });
  const make = (context = "c1", over: Partial<ConstructorParameters<typeof SettledOrders>[0]> = {}) => {
    const s = new SettledOrders({
      listBmiDigests: async () => new Map([["uid-1", "d1"]]),
      listHubDigests: async () => {
        hubListings++;
        if (failHub) throw new Error("apiserver unavailable");
        return (o) => (o.uid === "uid-1" ? hub : "other");
      },
      listUnwatchedDigests: async () => {
        unwatchedListings++;
        if (failUnwatched) throw new Error("fulfillment-service unavailable");
        return async (k) => {
          if (k.namespace !== keys.namespace || k.name !== keys.name || k.clusterId !== keys.clusterId) throw new Error("wrong keys");
          return unwatched;
        };
      },
      pinOf: async () => "", resyncMs: 600_000, now: () => now, store, context: () => context, ...over,
    });
    s.watchesStarted(Promise.resolve());
    return s;
  };
  beforeEach(() => {
    now = 1_000_000;
    hub = "h1";
    hubListings = 0;
    failHub = false;
    unwatched = "u1";
    unwatchedListings = 0;
    failUnwatched = false;
    blobs.clear();
  });

  it("a new process restores the record and answers settled once the hub's versions match, listing the hub once per pass", async () => {
    const first = make();
    first.record(first.begin(ref), seen());
    expect([...blobs.keys()]).toEqual(["ns/demo"]);
    const s = make();
    expect((await s.restore()).map((r) => r.key)).toEqual(["ns/demo"]);
    expect(s.gauges(ref)).toEqual(gauges);
    expect(await s.check(ref, listed())).toEqual({ plan: undefined, resynced: true });
    expect(await s.check(ref, listed())).toEqual({ plan: undefined, resynced: false });
    expect([hubListings, unwatchedListings]).toEqual([1, 1]);
    // Compared once: later passes rely on the watches until its resync time, as for a record of this process.
    s.beginPass();
    expect(await s.check(ref, listed())).toEqual({ plan: undefined, resynced: false });
    expect([hubListings, unwatchedListings]).toEqual([1, 1]);
  });

  it("at its resync time compares the hub and the unwatched inputs once per pass, and stays settled until the next one", async () => {
    const s = make();
    s.record(s.begin(ref), seen());
    const other = { namespace: "ns", name: "other" };
    s.record(s.begin(other), seen({ uid: "uid-1" }));
    now += 600_001;
    expect(await s.check(ref, listed())).toEqual({ plan: plan(), resynced: true });
    expect(await s.check(other, { metadata: { ...other, uid: "uid-1", resourceVersion: "10" } })).toEqual({ plan: plan(), resynced: true });
    expect([hubListings, unwatchedListings]).toEqual([1, 1]);
    s.beginPass();
    now += 400_000; // before its next resync time (at least 3/4 of the interval after this one)
    expect(await s.check(ref, listed())).toEqual({ plan: plan(), resynced: false });
    expect([hubListings, unwatchedListings]).toEqual([1, 1]);
    s.beginPass();
    now += 200_001;
    expect(await s.check(ref, listed())).toEqual({ plan: plan(), resynced: true });
    expect([hubListings, unwatchedListings]).toEqual([2, 2]);
    expect(blobs.get("ns/demo")?.until).toBeNull(); // no refresh, no requeue: it ends only with a change
  });

  it.each<[string, () => void, string]>([
    ["its ClusterDeployment, disk image or the catalog changed", () => { unwatched = "u2"; }, "unwatched-changed"],
    ["the unwatched inputs could not be read", () => { failUnwatched = true; }, "unwatched-unreadable"],
    ["an Agent, InfraEnv or NodePool of it changed unseen by the watches", () => { hub = "h2"; }, "hub-changed"],
    ["the hub could not be listed", () => { failHub = true; }, "hub-unreadable"],
  ])("at its resync time a record does not hold when %s", async (_what, change, miss) => {
    const s = make();
    s.record(s.begin(ref), seen());
    change();
    expect(await s.check(ref, listed())).toEqual({ plan: plan(), resynced: false }); // not compared before its time
    now += 600_001;
    expect(await s.check(ref, listed())).toEqual({ miss });
  });

  it("without a way to read the unwatched inputs, a record does not hold at its resync time", async () => {
    const s = make("c1", { listUnwatchedDigests: undefined });
    s.record(s.begin(ref), seen());
    now += 600_001;
    expect(await s.check(ref, listed())).toEqual({ miss: "unwatched-unreadable" });
  });

  it.each<[string, () => void, Partial<ReturnType<typeof listed>["metadata"]>, string]>([
    ["an Agent, InfraEnv or NodePool of the order changed while no process ran", () => { hub = "h2"; }, {}, "hub-changed"],
    ["the hub could not be listed", () => { failHub = true; }, {}, "hub-unreadable"],
    ["its ClusterDeployment, disk image or the catalog changed while no process ran", () => { unwatched = "u2"; }, {}, "unwatched-changed"],
    ["the order was deleted and created again under its name", () => undefined, { uid: "uid-2" }, "order-changed"],
    ["the order changed while no process ran", () => undefined, { resourceVersion: "11" }, "order-changed"],
  ])("a restored record does not hold when %s", async (_what, change, meta, miss) => {
    const first = make();
    first.record(first.begin(ref), seen());
    const s = make();
    await s.restore();
    change();
    expect(await s.check(ref, { metadata: { ...listed().metadata, ...meta } })).toEqual({ miss });
  });

  it("verifies a restored record only against a hub listing made after the watches started", async () => {
    const first = make();
    first.record(first.begin(ref), seen());
    const s = make();
    let started!: () => void;
    s.watchesStarted(new Promise<void>((resolve) => (started = resolve)));
    await s.restore();
    const check = s.check(ref, listed());
    await new Promise((r) => setTimeout(r, 20));
    expect(hubListings).toBe(0); // waits for the watches
    started();
    expect(await check).toEqual({ plan: undefined, resynced: true });
    expect(hubListings).toBe(1);
  });

  it("restores neither a record of another program or setting (context) nor one whose time has come", async () => {
    const first = make("c1");
    first.record(first.begin(ref), seen({ dueAt: now + 1_000 }));
    expect(await make("c2").restore()).toEqual([]);
    now += 1_000;
    const s = make("c1");
    expect(await s.restore()).toEqual([]);
    expect(await s.check(ref, listed())).toEqual({ miss: "none" });
  });

  it("stores nothing for a record without the hub's versions or its unwatched inputs, and removes the stored record of an order that is gone", async () => {
    const s = make();
    s.record(s.begin(ref), seen({ hubDigest: undefined }));
    s.record(s.begin(ref), seen({ unwatched: undefined }));
    expect(blobs.size).toBe(0);
    s.record(s.begin(ref), seen());
    s.forget(ref); // another replica's now: its record stays for whoever restarts
    expect(blobs.size).toBe(1);
    s.forget(ref, { stored: true });
    await Promise.resolve();
    expect(blobs.size).toBe(0);
  });

  it("a store that cannot be read restores nothing and says so", async () => {
    const logged: string[] = [];
    const s = make("c1", { store: { ...store, load: async () => { throw new Error("disk gone"); } }, log: (m) => logged.push(m) });
    expect(await s.restore()).toEqual([]);
    expect(logged).toEqual([expect.stringContaining("could not be read")]);
  });

  it("drops a restored record no pass listed (its order deleted while no process ran) once it expires", async () => {
    const first = make();
    first.record(first.begin(ref), seen());
    const s = make();
    await s.restore();
    now += 600_001;
    s.beginPass();
    expect(s.gauges(ref)).toBeUndefined();
  });
});
