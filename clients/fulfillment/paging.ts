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

/**
 * A page larger than the channel's receive limit fails on the client with RESOURCE_EXHAUSTED ("Received
 * message larger than max"). BareMetalInstances carry their ignition (up to 64 KiB each), so a full page
 * can reach 64 MiB: such a page is fetched again in halves rather than failing the whole listing.
 */
export function isOversizedPage(err: unknown): boolean {
  const e = err as { code?: unknown; details?: unknown; message?: unknown };
  return e?.code === 8 /* RESOURCE_EXHAUSTED */ && /larger than max/i.test(String(e.details ?? e.message ?? ""));
}

/** Fetches every page. Stops early on an empty page: objects vanished between pages, not a loop. */
export async function collectPages<T>(fetch: PageFetcher<T>, pageSize = MAX_PAGE_SIZE): Promise<T[]> {
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new Error(`page size must be a positive integer, got ${pageSize}`);
  let limit = Math.min(pageSize, MAX_PAGE_SIZE);
  const items: T[] = [];
  for (let offset = 0; ;) {
    let page: ListPage<T>;
    try {
      page = await fetch(offset, limit);
    } catch (err) {
      if (!isOversizedPage(err) || limit === 1) throw err;
      limit = Math.ceil(limit / 2);
      continue;
    }
    items.push(...page.items);
    offset += page.items.length;
    if (page.items.length === 0 || offset >= page.total) return items;
  }
}
