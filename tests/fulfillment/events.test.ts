// The simulator's private Events.Watch stream through the product client (fulfillment-api.md §6): the
// changes of an object in the order they were committed, each with the object as it then was; the CEL
// filter over `event`; authentication and admin-only access; no replay; a fault that breaks open streams.
import * as fs from "node:fs";
import * as path from "node:path";
import {
  CelFilter, EventFilter, FulfillmentClient, InvalidArgumentError, PermissionDeniedError, UnauthenticatedError, UnavailableError,
} from "../../clients/fulfillment";
import type { Event, OpenStream } from "../../clients/fulfillment";
import { ACME_TOKEN, clearFaults, eventually, Harness, setFault, startHarness, stats, workerBmi } from "./helpers";

let h: Harness;
let c: FulfillmentClient;
beforeAll(async () => {
  h = await startHarness();
  c = h.client();
});
afterAll(() => h.close());

interface Watcher {
  events: Event[];
  ended?: unknown;
  opened: Promise<void>;
  stream: OpenStream;
}

function watch(client = c, filter = EventFilter.bareMetalInstancesOfTenant("system")): Watcher {
  const w = { events: [] as Event[] } as Partial<Watcher> as Watcher;
  let failOpen: (err: unknown) => void = () => undefined;
  w.opened = new Promise<void>((resolve, reject) => {
    failOpen = reject;
    w.stream = client.events.watch(filter, {
      onOpen: resolve,
      onEvent: (e) => w.events.push(e),
      onEnd: (err) => {
        w.ended = err;
        failOpen(err);
      },
    });
  });
  w.opened.catch(() => undefined);
  return w;
}

const short = (e: Event) => `${e.type.replace("EVENT_TYPE_OBJECT_", "")} ${e.bare_metal_instance?.metadata?.name}`;

describe("Events.Watch", () => {
  it("sends each change of a BMI once committed: created, provisioned, deleting, archived; versions rise; no user_data", async () => {
    const w = watch();
    await w.opened;
    const bmi = await c.bareMetalInstances.create(workerBmi("ev-life"));
    await eventually(async () => (w.events.some((e) => e.bare_metal_instance?.status?.state === "BARE_METAL_INSTANCE_STATE_RUNNING") ? true : undefined));
    await c.bareMetalInstances.delete(bmi.id);
    await eventually(async () => (w.events.some((e) => e.type === "EVENT_TYPE_OBJECT_DELETED") ? true : undefined));
    w.stream.close();
    const mine = w.events.filter((e) => e.bare_metal_instance?.id === bmi.id);
    expect(mine.map(short)).toEqual(["CREATED ev-life", "UPDATED ev-life", "UPDATED ev-life", "DELETED ev-life"]);
    expect(mine[1].bare_metal_instance?.status?.hardware?.nics.length).toBeGreaterThan(0);
    expect(mine[2].bare_metal_instance?.metadata?.deletion_timestamp).toBeTruthy();
    const versions = mine.map((e) => e.bare_metal_instance!.metadata!.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(new Set(versions).size).toBe(versions.length);
    // The client drops the ignition from the wire, as it does from listings.
    expect(mine.every((e) => !e.bare_metal_instance?.spec?.user_data)).toBe(true);
    expect(new Set(mine.map((e) => e.id)).size).toBe(4);
    expect(w.ended).toBeUndefined();
  });

  it("applies the filter: only the events it selects, and an update with a mask is one UPDATED", async () => {
    const named = watch(c, CelFilter.of("event.bare_metal_instance.metadata.name == 'ev-filter'"));
    const acme = watch(c, EventFilter.bareMetalInstancesOfTenant("acme"));
    const all = watch();
    await Promise.all([named.opened, acme.opened, all.opened]);
    const other = await c.bareMetalInstances.create(workerBmi("ev-other"));
    const bmi = await c.bareMetalInstances.create(workerBmi("ev-filter"));
    await c.bareMetalInstances.update({ id: bmi.id, metadata: { labels: { ...bmi.metadata?.labels, extra: "x" } } }, { updateMask: ["metadata.labels"] });
    const before = (await stats(h.lab)).calls;
    await c.bareMetalInstances.update({ id: bmi.id, metadata: { labels: { ...bmi.metadata?.labels, extra: "x" } } }, { updateMask: ["metadata.labels"] });
    expect((await stats(h.lab)).calls["BareMetalInstances/Update"]).toBe((before["BareMetalInstances/Update"] ?? 0) + 1);
    // Both BMIs' provisioning too, so that every event of theirs has come.
    await eventually(async () => (all.events.filter((e) => e.bare_metal_instance?.status?.state === "BARE_METAL_INSTANCE_STATE_RUNNING" &&
      [bmi.id, other.id].includes(e.bare_metal_instance.id)).length === 2 ? true : undefined));
    const mine = (w: Watcher) => w.events.filter((e) => e.bare_metal_instance?.id === bmi.id);
    // Created, labelled, provisioned (these two in either order): the second update changed nothing, so no write and no event.
    expect(mine(all).map((e) => e.bare_metal_instance?.metadata?.version)).toEqual([0, 1, 2]);
    expect(mine(all)[2].bare_metal_instance?.metadata?.labels.extra).toBe("x");
    expect(named.events.map((e) => e.bare_metal_instance?.metadata?.name)).toEqual(mine(all).map(() => "ev-filter"));
    expect(named.events.length).toBeGreaterThanOrEqual(3);
    expect(all.events.some((e) => e.bare_metal_instance?.id === other.id)).toBe(true);
    expect(acme.events).toEqual([]);
    // The service sends the ignition (a Get has it); the client's decoding of events leaves it out.
    expect((await c.bareMetalInstances.get(bmi.id)).spec?.user_data).toContain("ignition");
    expect(mine(all).every((e) => !e.bare_metal_instance?.spec?.user_data)).toBe(true);
    for (const w of [named, acme, all]) w.stream.close();
  });

  it("does not replay: a stream opened after a change never hears of it", async () => {
    const bmi = await c.bareMetalInstances.create(workerBmi("ev-before"));
    const w = watch();
    await w.opened;
    const later = await c.bareMetalInstances.create(workerBmi("ev-after"));
    await eventually(async () => (w.events.some((e) => e.bare_metal_instance?.id === later.id) ? true : undefined));
    expect(w.events.filter((e) => e.bare_metal_instance?.id === bmi.id && e.type === "EVENT_TYPE_OBJECT_CREATED")).toEqual([]);
    w.stream.close();
  });

  it("refuses a filter it cannot compile, a caller who is not an admin, and a request without a valid token", async () => {
    const badFilter = await new Promise<unknown>((resolve) => c.events.watch(CelFilter.of("event.no_such_field == 'x'"), {
      onEvent: () => undefined, onEnd: resolve,
    }));
    expect(badFilter).toBeInstanceOf(InvalidArgumentError);
    const acmeTokenFile = path.join(h.dir, "acme-token");
    fs.writeFileSync(acmeTokenFile, ACME_TOKEN);
    const tenant = h.client({ tokenFile: acmeTokenFile });
    const denied = await new Promise<unknown>((resolve) => tenant.events.watch(undefined, { onEvent: () => undefined, onEnd: resolve }));
    expect(denied).toBeInstanceOf(PermissionDeniedError);
    const bogusTokenFile = path.join(h.dir, "bogus-token");
    fs.writeFileSync(bogusTokenFile, "not-a-token-0123456789");
    const nobody = h.client({ tokenFile: bogusTokenFile });
    const refused = await new Promise<unknown>((resolve) => nobody.events.watch(undefined, { onEvent: () => undefined, onEnd: resolve }));
    expect(refused).toBeInstanceOf(UnauthenticatedError);
  });

  it("a fault on Events/Watch breaks the open streams with its code and refuses new ones until cleared", async () => {
    const w = watch();
    await w.opened;
    const before = (await stats(h.lab)).calls["Events/Watch"] ?? 0;
    await setFault(h.lab, { method: { method: "Events/Watch", code: "UNAVAILABLE" } });
    await eventually(async () => (w.ended ? true : undefined));
    expect(w.ended).toBeInstanceOf(UnavailableError);
    const refused = watch();
    await expect(refused.opened).rejects.toBeInstanceOf(UnavailableError);
    await clearFaults(h.lab);
    const again = watch();
    await again.opened;
    const bmi = await c.bareMetalInstances.create(workerBmi("ev-after-fault"));
    await eventually(async () => (again.events.some((e) => e.bare_metal_instance?.id === bmi.id) ? true : undefined));
    again.stream.close();
    expect((await stats(h.lab)).calls["Events/Watch"]).toBe(before + 2);
  });

  it("a fault on every method breaks the open streams too", async () => {
    const w = watch();
    await w.opened;
    await setFault(h.lab, { method: { method: "*", code: "UNAVAILABLE" } });
    await eventually(async () => (w.ended ? true : undefined));
    await clearFaults(h.lab);
    expect(w.ended).toBeInstanceOf(UnavailableError);
  });
});
