// The simulator's BMI List faults (lab control SetFault{list}), the answers offset paging over an
// unordered result gives on a real database, and what the program makes of them: the client returns
// the complete list or fails closed, and observe() never reports a recorded BMI as gone without a Get.
import fc from "fast-check";
import {
  AlreadyExistsError, createOrAdopt, Filter, InconsistentListError, NameHolderUnseenError, type BareMetalInstanceOut,
} from "../../clients/fulfillment";
import type { ListFault } from "../../lab/fulfillment/labProtos";
import { createRejectionOf } from "../../providers/bareMetalInstanceOps";
import { clearFaults, setFault, workerBmi } from "./helpers";
import { type ObserveFixture, ORDER_UID, orderRecording, startObserveFixture } from "./observeFixture";

const N = 9;
let fx: ObserveFixture;
let bmis: BareMetalInstanceOut[];
const ids = () => bmis.map((b) => b.id).sort();
const orderFilter = Filter.labelsMatch({ "osac.openshift.io/cluster-order": ORDER_UID });
const list = (limit: number, offset = 0) => fx.client.bareMetalInstances.list({ filter: orderFilter, limit, offset });

beforeAll(async () => {
  fx = await startObserveFixture();
  bmis = await fx.createBmis(N, "lf");
});
afterAll(() => fx.close());
afterEach(() => clearFaults(fx.lab));

describe("each list fault", () => {
  it("omit_id leaves one BMI out of items and total; a Get still finds it", async () => {
    await setFault(fx.lab, { list: { omit_id: bmis[3].id } });
    const page = await list(100);
    expect(page.total).toBe(N - 1);
    expect(page.items.map((b) => b.id)).not.toContain(bmis[3].id);
    expect((await fx.client.bareMetalInstances.get(bmis[3].id)).id).toBe(bmis[3].id);
  });

  it("omit_random leaves a different BMI out of each List", async () => {
    await setFault(fx.lab, { list: { omit_random: true } });
    const left = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const page = await list(100);
      expect(page.total).toBe(N - 1);
      left.add(ids().find((id) => !page.items.some((b) => b.id === id))!);
    }
    expect(left.size).toBeGreaterThan(1);
  });

  it("short_page answers fewer items than the limit while total stays", async () => {
    await setFault(fx.lab, { list: { short_page: 2 } });
    const page = await list(5);
    expect(page.items).toHaveLength(2);
    expect(page.total).toBe(N);
    await setFault(fx.lab, { list: { short_page: 0 } });
    expect((await list(5)).items).toHaveLength(0);
  });

  it("shrink_total reports a lower total", async () => {
    await setFault(fx.lab, { list: { shrink_total: 3 } });
    const page = await list(100);
    expect(page.total).toBe(N - 3);
    expect(page.items).toHaveLength(N);
  });

  it("reorder answers the matches in a different order", async () => {
    await setFault(fx.lab, { list: { reorder: true } });
    const orders = new Set<string>();
    for (let i = 0; i < 5; i++) orders.add((await list(100)).items.map((b) => b.id).join(","));
    expect(orders.size).toBeGreaterThan(1);
  });

  it("times limits a fault to the next N Lists", async () => {
    await setFault(fx.lab, { list: { shrink_total: 1, times: 2 } });
    expect((await list(100)).total).toBe(N - 1);
    expect((await list(100)).total).toBe(N - 1);
    expect((await list(100)).total).toBe(N);
  });
});

/** A combination of list faults; omit_id holds "#<index>" of a BMI until resolved(). */
const listFault: fc.Arbitrary<Partial<ListFault>> = fc.record({
  omit: fc.option(fc.nat(N - 1), { nil: undefined }),
  omit_random: fc.boolean(),
  short_page: fc.option(fc.nat(4), { nil: undefined }),
  shrink_total: fc.nat(3),
  reorder: fc.boolean(),
  times: fc.nat(4),
}).map(({ omit, short_page, ...f }) => ({
  ...f, ...(omit !== undefined ? { omit_id: `#${omit}` } : {}), ...(short_page !== undefined ? { short_page } : {}),
}));

/** The fault with a placeholder index replaced by a real BMI id. */
const resolved = (f: Partial<ListFault>): Partial<ListFault> =>
  (f.omit_id?.startsWith("#") ? { ...f, omit_id: bmis[Number(f.omit_id.slice(1))].id } : f);

describe("under any combination of list faults", () => {
  it("listAll returns the complete list or fails closed", async () => {
    await fc.assert(fc.asyncProperty(listFault, fc.integer({ min: 1, max: N + 1 }), async (fault, pageSize) => {
      await clearFaults(fx.lab);
      await setFault(fx.lab, { list: resolved(fault) });
      const outcome = await fx.client.bareMetalInstances.listAll(orderFilter, pageSize).then((all) => all, (err: unknown) => err);
      if (!Array.isArray(outcome)) {
        expect(outcome).toBeInstanceOf(InconsistentListError);
        return;
      }
      // Complete, except what a consistent omission hid (no client can see that: observe() Gets it).
      const got = outcome.map((b: BareMetalInstanceOut) => b.id);
      const hidden = (fault.omit_id ? 1 : 0) + (fault.omit_random ? 1 : 0);
      expect(new Set(got).size).toBe(got.length);
      expect(got.every((id) => ids().includes(id))).toBe(true);
      expect(got.length).toBeGreaterThanOrEqual(N - hidden);
      if (hidden === 0) expect(got.sort()).toEqual(ids());
    }), { numRuns: 150 });
  });

  it("observe() keeps every recorded BMI (or knows nothing) and reports none as gone without a Get", async () => {
    const order = orderRecording(bmis);
    await fc.assert(fc.asyncProperty(listFault, async (fault) => {
      await clearFaults(fx.lab);
      await setFault(fx.lab, { list: resolved(fault) });
      const { snapshot, fulfillmentError } = await fx.observeOrder(order);
      if (snapshot.bmis === undefined) {
        expect(fulfillmentError).toBeDefined();
        expect(snapshot.goneBmiIds).toBeUndefined();
        return;
      }
      expect(snapshot.goneBmiIds).toEqual([]);
      expect(snapshot.bmis.map((b) => b.id).sort()).toEqual(ids());
    }), { numRuns: 100 });
  });
});

describe("createOrAdopt when a List leaves out our own BMI (ALREADY_EXISTS)", () => {
  const owner = { ownerLabels: { "osac.openshift.io/cluster-order": ORDER_UID }, retry: { initialDelayMs: 1, maxDelayMs: 5 } };
  const named = async (name: string) => fx.client.bareMetalInstances.listAll(Filter.and(Filter.tenantEquals("system"), Filter.nameEquals(name)));

  it("is a transient error, never a definitive rejection, while no List shows the holder", async () => {
    const own = await fx.client.bareMetalInstances.create(workerBmi("adopt-unseen"));
    await setFault(fx.lab, { list: { omit_id: own.id } });
    const err = await createOrAdopt(fx.client.bareMetalInstances, workerBmi("adopt-unseen"), owner).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(NameHolderUnseenError);
    expect(err).not.toBeInstanceOf(AlreadyExistsError);
    expect(createRejectionOf(err, { name: "adopt-unseen", userData: "{}" })).toBeUndefined();
    await clearFaults(fx.lab);
    expect((await named("adopt-unseen")).map((b) => b.id)).toEqual([own.id]);
    // The next attempt (the next update) adopts it.
    const again = await createOrAdopt(fx.client.bareMetalInstances, workerBmi("adopt-unseen"), owner);
    expect(again).toMatchObject({ adopted: true, bmi: { id: own.id } });
  });

  it("adopts it once a List by name shows it with our labels", async () => {
    const own = await fx.client.bareMetalInstances.create(workerBmi("adopt-late"));
    // The list-before-create and the owner-label List after ALREADY_EXISTS both leave it out.
    await setFault(fx.lab, { list: { omit_id: own.id, times: 2 } });
    const r = await createOrAdopt(fx.client.bareMetalInstances, workerBmi("adopt-late"), owner);
    expect(r).toMatchObject({ adopted: true, bmi: { id: own.id } });
    expect((await named("adopt-late")).map((b) => b.id)).toEqual([own.id]);
  });

  it("calls the name another owner's only after seeing its holder with other labels", async () => {
    const theirs = workerBmi("adopt-foreign");
    theirs.metadata!.labels = { ...theirs.metadata!.labels, "osac.openshift.io/cluster-order": "another-order" };
    await fx.client.bareMetalInstances.create(theirs);
    const err = await createOrAdopt(fx.client.bareMetalInstances, workerBmi("adopt-foreign"), owner).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(AlreadyExistsError);
    expect(createRejectionOf(err, { name: "adopt-foreign", userData: "{}" })).toMatch(/code=ALREADY_EXISTS.*another owner/);
  });
});
