// Offset/limit paging as the service implements it: default page 100, hard cap 1000, `total` counts
// every match. Loop with offset += size until offset >= total.

export const MAX_PAGE_SIZE = 1000;

export interface ListPage<T> {
  items: T[];
  /** Items in this page. */
  size: number;
  /** All matches, across pages. */
  total: number;
}

export type PageFetcher<T> = (offset: number, limit: number) => Promise<ListPage<T>>;

/** Fetches every page. Stops early on an empty page: objects vanished between pages, not a loop. */
export async function collectPages<T>(fetch: PageFetcher<T>, pageSize = MAX_PAGE_SIZE): Promise<T[]> {
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new Error(`page size must be a positive integer, got ${pageSize}`);
  const limit = Math.min(pageSize, MAX_PAGE_SIZE);
  const items: T[] = [];
  for (let offset = 0; ;) {
    const page = await fetch(offset, limit);
    items.push(...page.items);
    offset += page.items.length;
    if (page.items.length === 0 || offset >= page.total) return items;
  }
}
