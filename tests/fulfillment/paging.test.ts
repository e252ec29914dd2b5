// collectPages: offset/limit paging, and a page too large for the channel fetched again in halves.
import type { Connection } from "../../clients/fulfillment/connection";
import { collectPages, GROW_AFTER, InconsistentListError, isOversizedPage, type ListPage, pageLimit } from "../../clients/fulfillment/paging";
import { type CrudMethods, MissingIdError, ResourceClient } from "../../clients/fulfillment/resource";

const oversized = () => Object.assign(new Error("List: RESOURCE_EXHAUSTED: Received message larger than max (6326157 vs 4194304)"),
  { code: 8, details: "Received message larger than max (6326157 vs 4194304)" });

function source(n: number, maxPage: number, seen: number[]) {
  const all = Array.from({ length: n }, (_, i) => `item-${i}`);
  return async (offset: number, limit: number): Promise<ListPage<string>> => {
    seen.push(limit);
    if (limit > maxPage) throw oversized();
    const items = all.slice(offset, offset + limit);
    return { items, size: items.length, total: n };
  };
}

describe("collectPages", () => {
  it("halves the page until it fits, keeps that size, and loses nothing", async () => {
    const limits: number[] = [];
    const items = await collectPages(source(25, 3, limits), 20);
    expect(items).toEqual(Array.from({ length: 25 }, (_, i) => `item-${i}`));
    expect(limits.slice(0, 4)).toEqual([20, 10, 5, 3]);
    expect(new Set(limits.slice(3, -1))).toEqual(new Set([3]));
    expect(limits.at(-1)).toBe(1); // the closing page that must be empty
  });

  it("a second listing of the same kind starts at the page size the first one learned", async () => {
    const learned = pageLimit();
    const first: number[] = [];
    await collectPages(source(25, 3, first), { pageSize: 20, learned });
    expect(learned.limit).toBe(3);
    const second: number[] = [];
    expect(await collectPages(source(25, 3, second), { pageSize: 20, learned })).toHaveLength(25);
    expect(second.filter((l) => l > 3)).toEqual([]); // no oversized page tried again
    expect(second.length).toBe(first.length - 3);
  });

  it("a listing that fails teaches nothing, and the size grows back after listings that needed no halving", async () => {
    const learned = { limit: 8, clean: 0 };
    await expect(collectPages(source(5, 0, []), { pageSize: 1000, learned })).rejects.toThrow(/larger than max/);
    expect(learned).toEqual({ limit: 8, clean: 0 }); // one object too large for the channel: not a size for the kind
    for (let i = 0; i < GROW_AFTER; i++) await collectPages(source(30, 1000, []), { learned });
    expect(learned.limit).toBe(16);
    expect(learned.clean).toBe(0);
  });

  it("gives up when even one object does not fit, and passes other errors through", async () => {
    await expect(collectPages(source(5, 0, []), 8)).rejects.toThrow(/larger than max/);
    const quota = Object.assign(new Error("RESOURCE_EXHAUSTED: quota"), { code: 8, details: "quota exceeded" });
    await expect(collectPages(async () => { throw quota; }, 8)).rejects.toBe(quota);
    expect(isOversizedPage(quota)).toBe(false);
    expect(isOversizedPage(oversized())).toBe(true);
  });
});

// Offset paging over an unordered result can skip objects. A partial list taken for the whole makes the
// missing BMIs look deleted (issue 15, I3), so every inconsistency fails closed.
describe("collectPages fails closed on a listing that does not add up", () => {
  type Item = { id: string };
  const all = (n: number): Item[] => Array.from({ length: n }, (_, i) => ({ id: `bmi-${i}` }));
  const key = (i: Item) => i.id;
  /** A fetcher whose answer for each call is given by `answer(call, offset, limit)`. */
  const scripted = (answer: (call: number, offset: number, limit: number) => ListPage<Item>) => {
    let call = 0;
    return async (offset: number, limit: number) => answer(call++, offset, limit);
  };
  const page = (items: Item[], total: number): ListPage<Item> => ({ items, size: items.length, total });

  it("an empty page before total is reached", async () => {
    const items = all(5);
    const fetch = scripted((_c, offset, limit) => page(offset >= 2 ? [] : items.slice(offset, offset + limit), 5));
    await expect(collectPages(fetch, { pageSize: 2, key })).rejects.toThrow(InconsistentListError);
  });

  it("a total that shrinks between pages", async () => {
    const items = all(5);
    const fetch = scripted((_c, offset, limit) => page(items.slice(offset, offset + limit), offset === 0 ? 5 : 4));
    await expect(collectPages(fetch, { pageSize: 2, key })).rejects.toThrow(/total changed from 5 to 4/);
  });

  it("an item that comes twice (the order changed between pages)", async () => {
    const items = all(4);
    const reordered = [items[0], items[2], items[1], items[3]];
    const fetch = scripted((_c, offset, limit) => page((offset === 0 ? items : reordered).slice(offset, offset + limit), 4));
    await expect(collectPages(fetch, { pageSize: 2, key })).rejects.toThrow(/came twice/);
  });

  it("a total reported too low on every page, whether or not the pages are full", async () => {
    const items = all(5);
    await expect(collectPages(async (o, l) => page(items.slice(o, o + l), 4), { pageSize: 2, key })).rejects.toThrow(InconsistentListError);
    await expect(collectPages(async (o, l) => page(items.slice(o, o + l), 4), { pageSize: 10, key })).rejects.toThrow(/total says 4/);
  });

  it("retries the whole listing and returns it once a listing adds up", async () => {
    const items = all(5);
    const fetch = scripted((call, offset, limit) => page(call === 1 ? [] : items.slice(offset, offset + limit), 5));
    await expect(collectPages(fetch, { pageSize: 2, key })).resolves.toEqual(items);
  });

  it("continues after a short but non-empty page and loses nothing", async () => {
    const items = all(7);
    const fetch = scripted((_c, offset, limit) => page(items.slice(offset, offset + Math.min(limit, 1)), 7));
    await expect(collectPages(fetch, { pageSize: 3, key })).resolves.toEqual(items);
  });

  it("confirms the end with one more, empty, page of one item", async () => {
    const items = all(4);
    const calls: [number, number][] = [];
    await expect(collectPages(async (o, l) => (calls.push([o, l]), page(items.slice(o, o + l), 4)), { pageSize: 3, key })).resolves.toEqual(items);
    expect(calls).toEqual([[0, 3], [3, 3], [4, 1]]);
  });

  it("a short last page under a total reported too low", async () => {
    const items = all(5);
    const fetch = async (o: number, l: number) => page(items.slice(o, o + Math.min(l, 1)), 4);
    await expect(collectPages(fetch, { pageSize: 2, key })).rejects.toThrow(/5 items arrived but total says 4/);
  });
});

describe("ResourceClient.listAll and an item without an id", () => {
  /** A client whose List answers `items` as one page (and the closing empty page after them). */
  const clientAnswering = (items: { id: string }[]) => {
    const lists: number[] = [];
    const conn = {
      unary: async (_m: unknown, req: { offset?: number; limit?: number }) => {
        lists.push(req.offset ?? 0);
        const slice = items.slice(req.offset ?? 0, (req.offset ?? 0) + (req.limit ?? 100));
        return { items: slice, size: slice.length, total: items.length };
      },
    } as unknown as Connection;
    const methods = { List: { path: "/osac.private.v1.BareMetalInstances/List" } } as unknown as CrudMethods<{ metadata?: null }, { id: string }>;
    return { client: new ResourceClient(conn, methods), lists };
  };

  it("fails at once as a protocol error naming the method, not as a duplicate after every retry", async () => {
    const { client, lists } = clientAnswering([{ id: "a" }, { id: "" }, { id: "" }]);
    const outcome = client.listAll();
    await expect(outcome).rejects.toThrow(MissingIdError);
    await expect(outcome).rejects.toThrow(/BareMetalInstances\/List: the service sent an item without an id/);
    expect(lists).toEqual([0]);
  });

  it("lists items that all have ids as before", async () => {
    const { client } = clientAnswering([{ id: "a" }, { id: "b" }]);
    await expect(client.listAll()).resolves.toEqual([{ id: "a" }, { id: "b" }]);
  });
});
