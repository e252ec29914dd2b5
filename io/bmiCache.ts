// The hub's order BMIs as the planner sees them, kept by the service's private Events stream the way an
// informer is kept by a Kubernetes watch: one paged List to start and at every relist, the stream's
// changes in between. It answers a steady pass's question "did a settled order's BMIs change?"
// (controller/settledOrders.ts) without listing every BMI on every pass. Like the listing it stands in
// for, it only ever lets a reconcile be skipped: an order that reconciles observes its BMIs itself.
//
// The stream promises neither delivery nor order (fulfillment-api.md §6), so:
//   - a change is taken only when its metadata.version is newer than the one held, and an id the stream
//     said was deleted stays deleted until the next List;
//   - the List starts only once the stream is open, so no change falls between the two: once its response
//     headers came, or else (a server that sends them with its first event) once a grace period passed
//     without it ending, and then the next pass lists once more, the stream by then surely subscribed;
//     events that come during a List are applied after it;
//   - every `relistMs` the List is read again and replaces what is held: a lost event is stale at most
//     that long;
//   - a stream that ends, or an event the cache cannot read (no BMI payload), leaves the cache unsynced:
//     passes list as before until a new stream and List sync it again.
import type { BareMetalInstanceOut, Event, EventsApi, OpenStream } from "../clients/fulfillment";
import { EventFilter, observedBmi, SYSTEM_TENANT } from "../clients/fulfillment";
import type { ObservedBmi } from "../planner/types";
import { bmiDigest, orderBmiDigests, orderUidOf } from "./orderBmiDigests";

export interface BmiCacheOptions {
  /** Every system-tenant BMI with an order label (paged, all-or-nothing). */
  list: () => Promise<BareMetalInstanceOut[]>;
  events: EventsApi;
  /** How often the List is read again while synced (a lost event is stale at most this long). */
  relistMs: number;
  /** How long to wait for the stream's response headers before listing anyway (default 2 s). */
  openGraceMs?: number;
  /** After a stream that could not open (or sent what the cache cannot read): how long to list without one. */
  retryMs?: number;
  now?: () => number;
  log?: (msg: string, fields?: Record<string, unknown>, level?: "debug" | "warn") => void;
  /** Told of each event taken from the stream, by type, and of every (re)sync. */
  onEvent?: (type: string) => void;
  onSync?: (synced: boolean) => void;
}

interface Held {
  version: number;
  uid?: string;
  bmi: ObservedBmi;
}

/** What the cache holds: BMIs by id and by order, and each order's digest, computed when asked. */
class Snapshot {
  private readonly byId = new Map<string, Held>();
  private readonly byOrder = new Map<string, Set<string>>();
  private readonly deleted = new Set<string>();
  private readonly digests = new Map<string, string>();

  constructor(items: readonly BareMetalInstanceOut[]) {
    for (const b of items) this.put(b);
  }

  /** Takes one event; false when it is not one the cache can read. */
  apply(e: Event): boolean {
    const b = e.bare_metal_instance;
    if (!b || !b.id) return false;
    if (e.type === "EVENT_TYPE_OBJECT_DELETED") {
      this.remove(b.id);
      this.deleted.add(b.id);
      return true;
    }
    if (this.deleted.has(b.id) || b.metadata?.tenant !== SYSTEM_TENANT) return true;
    const held = this.byId.get(b.id);
    if (!held || held.version < versionOf(b)) this.put(b);
    return true;
  }

  digestsByOrder(): Map<string, string> {
    for (const uid of this.byOrder.keys()) {
      if (this.digests.has(uid)) continue;
      const ids = this.byOrder.get(uid)!;
      this.digests.set(uid, bmiDigest([...ids].map((id) => this.byId.get(id)!.bmi)));
    }
    return new Map(this.digests);
  }

  private put(b: BareMetalInstanceOut): void {
    this.remove(b.id);
    const uid = orderUidOf(b);
    this.byId.set(b.id, { version: versionOf(b), uid, bmi: observedBmi(b) });
    if (!uid) return;
    const ids = this.byOrder.get(uid) ?? new Set<string>();
    ids.add(b.id);
    this.byOrder.set(uid, ids);
    this.digests.delete(uid);
  }

  private remove(id: string): void {
    const held = this.byId.get(id);
    if (!held) return;
    this.byId.delete(id);
    if (!held.uid) return;
    const ids = this.byOrder.get(held.uid);
    ids?.delete(id);
    if (ids?.size === 0) this.byOrder.delete(held.uid);
    this.digests.delete(held.uid);
  }
}

function versionOf(b: BareMetalInstanceOut): number {
  return Number(b.metadata?.version ?? 0);
}

interface Stream {
  handle: OpenStream;
  /** True once open (headers, or the grace period passed with the stream alive); false when it ended first. */
  opened: Promise<boolean>;
  grace: NodeJS.Timeout;
  /** Open, and whether by its headers. */
  open: boolean;
  headers: boolean;
  /** Listings made on it. */
  syncs: number;
  ended: boolean;
}

export class BmiCache {
  private stream?: Stream;
  private snapshot?: Snapshot;
  /** Events that came while a List was being read, applied after it. */
  private buffer?: Event[];
  private listedAt = 0;
  /** No stream before this time (it could not open, or sent what the cache cannot read). */
  private streamlessUntil = 0;
  private syncing?: Promise<Map<string, string>>;
  private closed = false;
  private readonly now: () => number;

  constructor(private readonly opts: BmiCacheOptions) {
    this.now = opts.now ?? Date.now;
  }

  get synced(): boolean {
    return this.snapshot !== undefined;
  }

  /**
   * Each order's BMI digest (by order uid; an order with no BMI has no entry). From the cache when it is
   * synced and its relist is not due; otherwise one List, which also (re)syncs the cache when a stream is
   * open. Throws when the List fails.
   */
  async digests(): Promise<Map<string, string>> {
    if (this.snapshot && this.now() - this.listedAt < this.opts.relistMs) return this.snapshot.digestsByOrder();
    return (this.syncing ??= this.sync().finally(() => (this.syncing = undefined)));
  }

  close(): void {
    this.closed = true;
    this.dropStream();
  }

  private async sync(): Promise<Map<string, string>> {
    const stream = this.openStream();
    if (stream) this.buffer ??= [];
    const open = stream ? await stream.opened : false;
    if (!open) this.buffer = undefined;
    let items: BareMetalInstanceOut[];
    try {
      items = await this.opts.list();
    } catch (err) {
      this.buffer = undefined;
      throw err;
    }
    // No stream to keep it (none opened, or it ended during the List): this pass's listing only.
    if (!open || !stream || stream !== this.stream || stream.ended) return orderBmiDigests(items);
    const snapshot = new Snapshot(items);
    for (const e of this.buffer ?? []) snapshot.apply(e);
    this.buffer = undefined;
    const first = !this.snapshot;
    this.snapshot = snapshot;
    // Opened by the grace period alone: the next pass lists once more.
    const early = !stream.headers && stream.syncs === 0;
    stream.syncs++;
    this.listedAt = early ? this.now() - this.opts.relistMs : this.now();
    if (first) {
      this.opts.log?.("the BareMetalInstance cache is synced from the service's event stream", { bmis: items.length }, "debug");
      this.opts.onSync?.(true);
    }
    return snapshot.digestsByOrder();
  }

  /** The open stream, or a new one; none while streamless or closed. */
  private openStream(): Stream | undefined {
    if (this.stream && !this.stream.ended) return this.stream;
    if (this.closed || this.now() < this.streamlessUntil) return undefined;
    let resolveOpened!: (open: boolean) => void;
    const opened = new Promise<boolean>((r) => (resolveOpened = r));
    const stream: Stream = {
      opened, open: false, headers: false, syncs: 0, ended: false,
      grace: setTimeout(() => {
        stream.open = true;
        resolveOpened(true);
      }, this.opts.openGraceMs ?? 2_000),
      handle: this.opts.events.watch(EventFilter.bareMetalInstancesOfTenant(SYSTEM_TENANT), {
        onOpen: () => {
          clearTimeout(stream.grace);
          stream.open = stream.headers = true;
          resolveOpened(true);
        },
        onEvent: (e) => this.take(stream, e),
        onEnd: (err) => {
          resolveOpened(false);
          this.ended(stream, err);
        },
      }),
    };
    stream.grace.unref?.();
    this.stream = stream;
    return stream;
  }

  private take(stream: Stream, e: Event): void {
    if (stream !== this.stream || stream.ended) return;
    this.opts.onEvent?.(e.type);
    if (this.snapshot && !this.snapshot.apply(e)) {
      this.unreadable(stream);
      return;
    }
    if (!this.snapshot && !e.bare_metal_instance?.id) {
      this.unreadable(stream);
      return;
    }
    this.buffer?.push(e);
  }

  /** An event selected as a BMI's that carries none: the protos and the service disagree. Never trust the stream. */
  private unreadable(stream: Stream): void {
    this.opts.log?.("an event of the BareMetalInstance stream carries no BareMetalInstance (do the Event protos match the " +
      "service's?); every pass lists the BareMetalInstances instead until a new stream is tried", { retryMs: this.retryMs() });
    this.streamlessUntil = this.now() + this.retryMs();
    this.ended(stream, undefined);
    stream.handle.close();
  }

  private ended(stream: Stream, err: unknown): void {
    if (stream.ended) return;
    stream.ended = true;
    clearTimeout(stream.grace);
    if (stream !== this.stream) return;
    this.stream = undefined;
    this.buffer = undefined;
    const wasSynced = this.snapshot !== undefined;
    this.snapshot = undefined;
    if (err !== undefined) {
      // A stream that ends before it opened (no such service, refused): wait before the next try.
      if (!stream.open) this.streamlessUntil = this.now() + this.retryMs();
      this.opts.log?.("the BareMetalInstance event stream ended; passes list the BareMetalInstances until it is synced again",
        { error: err instanceof Error ? err.message : String(err) });
    }
    if (wasSynced) this.opts.onSync?.(false);
  }

  private retryMs(): number {
    return this.opts.retryMs ?? this.opts.relistMs;
  }

  private dropStream(): void {
    const stream = this.stream;
    if (!stream) return;
    this.ended(stream, undefined);
    stream.handle.close();
  }
}
