// Offset/limit paging as the service implements it: default page 100, hard cap 1000, `total` counts
// every match. The service pages over an unordered result, so consecutive pages may overlap or skip
// objects; a listing that cannot prove it saw every match fails closed (InconsistentListError), because
// a caller that took a partial list for the whole would treat the missing objects as gone.
import { retry } from "../retry";

export const MAX_PAGE_SIZE = 1000;

/** Whole listings tried before an inconsistent one is reported (writes between pages are normal). */
export const LIST_ATTEMPTS = 3;

export interface ListPage<T> {
  items: T[];
  /** Items in this page. */
  size: number;
  /** All matches, across pages. */
  total: number;
}

export type PageFetcher<T> = (offset: number, limit: number) => Promise<ListPage<T>>;

/** The pages of one listing did not add up: the caller must treat the list as unknown, never as complete. */
export class InconsistentListError extends Error {
  override name = "InconsistentListError";
}

/**
 * A page larger than the channel's receive limit fails on the client with RESOURCE_EXHAUSTED ("Received
 * message larger than max"). BareMetalInstances carry their ignition (up to 64 KiB each), so a full page
 * can reach 64 MiB: such a page is fetched again in halves rather than failing the whole listing.
 */
export function isOversizedPage(err: unknown): boolean {
  const e = err as { code?: unknown; details?: unknown; message?: unknown };
  return e?.code === 8 /* RESOURCE_EXHAUSTED */ && /larger than max/i.test(String(e.details ?? e.message ?? ""));
}

/**
 * The page size a kind's listings have learned to fit the channel. Each listing starts from it. A listing
 * that succeeded after halving its pages leaves the size it succeeded with; a listing that failed leaves
 * nothing; after GROW_AFTER listings that needed no halving the size doubles again (up to the cap), so one
 * large object once listed does not shrink the pages for the life of the process.
 */
export interface PageLimit {
  limit: number;
  /** Listings in a row that succeeded without halving. */
  clean: number;
}

export const GROW_AFTER = 20;

export function pageLimit(): PageLimit {
  return { limit: MAX_PAGE_SIZE, clean: 0 };
}

export interface CollectOptions<T> {
  pageSize?: number;
  /** Shared by listings of one kind; without it each listing starts at `pageSize`. */
  learned?: PageLimit;
  /** Identity of an item; with it, an item seen twice makes the listing inconsistent. */
  key?: (item: T) => string;
  attempts?: number;
}

/**
 * Fetches every page. The listing is accepted only when `total` stayed the same on every page, no page
 * came back empty before `total` was reached, no item came twice, exactly `total` items arrived and the
 * page after them is empty; otherwise the whole listing is tried again, up to `attempts` times, then
 * InconsistentListError. The closing empty page costs one small call per listing.
 */
export async function collectPages<T>(fetch: PageFetcher<T>, opts: CollectOptions<T> | number = {}): Promise<T[]> {
  const o: CollectOptions<T> = typeof opts === "number" ? { pageSize: opts } : opts;
  const pageSize = o.pageSize ?? MAX_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new Error(`page size must be a positive integer, got ${pageSize}`);
  const start = Math.min(pageSize, MAX_PAGE_SIZE, o.learned?.limit ?? MAX_PAGE_SIZE);
  const state = { limit: start };
  const items = await retry(() => collectOnce(fetch, state, o.key), {
    policy: { maxAttempts: Math.max(1, o.attempts ?? LIST_ATTEMPTS), initialDelayMs: 50, maxDelayMs: 200 },
    retryable: (err) => err instanceof InconsistentListError,
  });
  if (o.learned) learnPageLimit(o.learned, start, state.limit);
  return items;
}

/** What a successful listing that started at `start` and ended at `ended` teaches its kind. */
function learnPageLimit(learned: PageLimit, start: number, ended: number): void {
  if (ended < start) {
    learned.limit = ended;
    learned.clean = 0;
  } else if (learned.limit < MAX_PAGE_SIZE && ++learned.clean >= GROW_AFTER) {
    learned.limit = Math.min(MAX_PAGE_SIZE, learned.limit * 2);
    learned.clean = 0;
  }
}

async function collectOnce<T>(fetch: PageFetcher<T>, state: { limit: number }, key?: (item: T) => string): Promise<T[]> {
  const items: T[] = [];
  const seen = new Set<string>();
  let total: number | undefined;
  for (let offset = 0; ;) {
    let page: ListPage<T>;
    // Once `total` items arrived, one more page (of one item) must come back empty: a total reported
    // too low would otherwise end the listing early unnoticed, even on a short last page.
    const limit = total !== undefined && offset >= total ? 1 : state.limit;
    try {
      page = await fetch(offset, limit);
    } catch (err) {
      if (!isOversizedPage(err) || limit === 1) throw err;
      state.limit = Math.ceil(state.limit / 2);
      continue;
    }
    if (total !== undefined && page.total !== total) {
      throw new InconsistentListError(`the list's total changed from ${total} to ${page.total} between pages`);
    }
    total = page.total;
    for (const item of page.items) {
      if (key) {
        const k = key(item);
        if (seen.has(k)) throw new InconsistentListError(`item ${k} came twice in one listing`);
        seen.add(k);
      }
      items.push(item);
    }
    offset += page.items.length;
    if (offset > total) throw new InconsistentListError(`${offset} items arrived but total says ${total}`);
    if (page.items.length === 0) {
      if (offset === total) return items;
      throw new InconsistentListError(`empty page at offset ${offset} before total ${total} was reached`);
    }
  }
}
