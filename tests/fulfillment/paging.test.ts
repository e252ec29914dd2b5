// collectPages: offset/limit paging, and a page too large for the channel fetched again in halves.
import { collectPages, isOversizedPage, type ListPage } from "../../clients/fulfillment/paging";

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
    expect(new Set(limits.slice(3))).toEqual(new Set([3]));
  });

  it("gives up when even one object does not fit, and passes other errors through", async () => {
    await expect(collectPages(source(5, 0, []), 8)).rejects.toThrow(/larger than max/);
    const quota = Object.assign(new Error("RESOURCE_EXHAUSTED: quota"), { code: 8, details: "quota exceeded" });
    await expect(collectPages(async () => { throw quota; }, 8)).rejects.toBe(quota);
    expect(isOversizedPage(quota)).toBe(false);
    expect(isOversizedPage(oversized())).toBe(true);
  });
});
