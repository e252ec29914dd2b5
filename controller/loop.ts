// The reconciliation loop: a timer plus Kubernetes watches feed a debounced work queue of ClusterOrders;
// a bounded number of orders are reconciled at once and never the same order twice at a time (its stack
// has one runner). Requeue times from the planner (backoff expiry, timeouts, polls) are honoured; an
// order whose reconciles keep failing is retried with exponential backoff, so that it cannot hold a
// pulumi slot for ever. One that met a newer version of its order (409) is no failure: it is read again soon.
import { isConflict, KubeError, type HubApi } from "../clients/kube";
import { INFRAENV_AGENT_LABEL, infraEnvName, NODEPOOL_ORDER_LABEL, ORDER_LABEL } from "../planner/names";
import { isNotLeaderError } from "../lib/notLeader";
import type { OrderRef } from "../io/observe";
import type { ReconcileResult } from "./reconcile";
import type { OrderOwnership } from "./ownership";
import type { SettledMiss, SettledOrders } from "./settledOrders";
import { describeUpdateFailure } from "./updateFailure";

export interface LoopOptions {
  kube: HubApi;
  /** Reconciles one order; throws on failure (the loop logs and requeues with backoff). */
  reconcile: (ref: OrderRef) => Promise<ReconcileResult>;
  /** Only orders of these namespaces (all when empty). */
  namespaces?: string[];
  intervalMs?: number;
  debounceMs?: number;
  concurrency?: number;
  /** Delay after a failed reconcile; doubled for each further consecutive failure of the order. Default 10 s. */
  errorRequeueMs?: number;
  /** Longest delay after consecutive failures. Default 5 min. */
  maxErrorRequeueMs?: number;
  /** Delay after a reconcile that met a newer version of its order (409); doubled for each further one in a row. Default 1 s. */
  conflictRequeueMs?: number;
  /** Whether this replica may act (leader election); the loop idles while false. */
  isLeader?: () => boolean;
  /**
   * A sharded replica: orders of shards it does not hold are neither dispatched nor counted in a pass
   * (the reconcile checks again with the uid it reads). Learns each order's uid from lists and events.
   */
  ownership?: Pick<OrderOwnership, "ownsRef" | "noteUid">;
  log: (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;
  onTick?: (tick: { orders: number; at: Date }) => void;
  /**
   * A pass ended: every order listed by a timer tick has been reconciled once since that tick. Its
   * duration, compared with the interval, says whether the loop keeps up with the number of orders.
   */
  onPass?: (pass: { orders: number; durationMs: number }) => void;
  onResult?: (ref: OrderRef, result: ReconcileResult | Error, durationMs: number) => void;
  /**
   * Settled orders (controller/settledOrders.ts): a timer pass skips the reconcile of an order still
   * settled; every other cause of a reconcile (a watch event, a requeue) ends its settled state first.
   */
  settled?: Pick<SettledOrders, "beginPass" | "check" | "invalidate" | "forget" | "watchesStarted">;
  /** A timer pass found the order settled (skipped, no reconcile; "resynced" after its resync comparisons), or why it did not. */
  onSettledCheck?: (ref: OrderRef, outcome: "settled" | "resynced" | SettledMiss) => void;
}

/** How often the loop looks again whether it may dispatch, while it may not. */
const STANDBY_POLL_MS = 250;

const refKey = (r: OrderRef): string => `${r.namespace}/${r.name}`;

/**
 * An error as the pod log may carry it: its most telling line, redacted and bounded. A failed update's
 * error holds the engine's output, which can echo request fields (an ignition, a token) that the
 * logger's redaction by key name does not see.
 */
export function loggableError(err: unknown): { reason: string; error: string } {
  const f = describeUpdateFailure(err, "reconcile");
  return { reason: f.reason, error: f.detail };
}
const keyRef = (k: string): OrderRef => {
  const i = k.indexOf("/");
  return { namespace: k.slice(0, i), name: k.slice(i + 1) };
};

interface WatchedObject {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; generation?: number; labels?: Record<string, string>; ownerReferences?: { kind?: string; name?: string }[] };
}

export class ReconcileLoop {
  private readonly due = new Map<string, number>();
  private readonly running = new Set<string>();
  /**
   * Orders whose last reconciles failed: how many in a row, the current delay, and until when none may start.
   * A timer tick or a watch event does not shorten the wait, except a spec edit (a new generation of the
   * ClusterOrder), at most once per delay: an edit is what can fix a refused order, while our own status
   * writes and Agent heartbeats cannot, and a retried edit that fails again does not open a new bypass.
   */
  private readonly backoff = new Map<string, { failures: number; delayMs: number; until: number; editRetryAt?: number }>();
  /**
   * Conflicts in a row per order. A write conditional on the version read that meets a newer one (the order's
   * creator writing its status just after creating it, a user's edit) is no failure of the order: it is read
   * again soon, without the failure backoff. Their own doubling keeps a peer that writes without pause from
   * making this a busy loop.
   */
  private readonly conflicts = new Map<string, number>();
  /** metadata.generation of each ClusterOrder seen (a spec edit changes it, a status write does not). */
  private readonly generations = new Map<string, number>();
  private readonly uidToKey = new Map<string, string>();
  /** `<namespace>/<InfraEnv name>` → order key: a long order name's InfraEnv name is shortened, not a suffix of it. */
  private readonly infraEnvToKey = new Map<string, string>();
  private timer?: NodeJS.Timeout;
  private wake?: NodeJS.Timeout;
  /** The current watch of each kind (a restart replaces it, so a long-running loop keeps four). */
  private readonly watchStops = new Map<string, () => void>();
  private stopped = false;
  /** The current pass: orders of the last tick not yet reconciled since it. */
  private pass?: { startedAt: number; orders: number; pending: Set<string> };
  /** Each order's identity and version as the last tick listed it (what a settled check compares). */
  private listed = new Map<string, { uid: string; resourceVersion?: string }>();
  lastTickAt?: Date;

  constructor(private readonly opts: LoopOptions) {}

  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs ?? 60_000);
    const watching = this.startWatches();
    this.opts.settled?.watchesStarted(watching);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.wake) clearTimeout(this.wake);
    for (const s of this.watchStops.values()) s();
    this.watchStops.clear();
  }

  /** Resolves when nothing is running (of the orders `which` selects; for orderly shutdown and shard hand-over). */
  async drain(which: (ref: OrderRef) => boolean = () => true): Promise<void> {
    while ([...this.running].some((k) => which(keyRef(k)))) await new Promise((r) => setTimeout(r, 100));
  }

  /** Lists the orders again now (this replica may act on more of them). */
  resync(): void {
    void this.tick();
  }

  /**
   * `keepSettled`: the timer's enqueue and a requeue time the order's result asked for (a settled order's
   * state ends by then on its own) leave an order settled; any other cause (a watch event) ends it.
   */
  enqueue(ref: OrderRef, at = Date.now() + (this.opts.debounceMs ?? 500), opts: { specEdit?: boolean; keepSettled?: boolean } = {}): void {
    if (this.opts.namespaces?.length && !this.opts.namespaces.includes(ref.namespace)) return;
    if (!opts.keepSettled) this.opts.settled?.invalidate(ref);
    const k = refKey(ref);
    const b = this.backoff.get(k);
    if (b && at < b.until) {
      const now = Date.now();
      if (opts.specEdit && (b.editRetryAt === undefined || now - b.editRetryAt >= b.delayMs)) b.editRetryAt = now;
      else at = b.until;
    }
    const cur = this.due.get(k);
    if (cur === undefined || at < cur) this.due.set(k, at);
    this.schedule();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      const orders = (await Promise.all((this.opts.namespaces?.length ? this.opts.namespaces : [undefined])
        .map((ns) => this.opts.kube.listClusterOrders(ns)))).flat();
      if (this.pass && (!this.opts.isLeader || this.opts.isLeader())) {
        this.opts.log("warn", "the previous pass had not finished when the timer ticked again: the interval is shorter than a pass",
          { pending: this.pass.pending.size, orders: this.pass.orders });
      }
      const keys = new Set(orders.map((o) => refKey(o.metadata)));
      this.pass = { startedAt: Date.now(), orders: keys.size, pending: keys };
      this.listed = new Map(orders.map((o) => [refKey(o.metadata), { uid: o.metadata.uid, resourceVersion: o.metadata.resourceVersion }]));
      this.opts.settled?.beginPass();
      for (const o of orders) {
        if (o.metadata.generation !== undefined) this.generations.set(refKey(o.metadata), o.metadata.generation);
        this.uidToKey.set(o.metadata.uid, refKey(o.metadata));
        this.opts.ownership?.noteUid(o.metadata, o.metadata.uid);
        this.infraEnvToKey.set(`${o.metadata.namespace}/${infraEnvName(o.metadata.name)}`, refKey(o.metadata));
        this.enqueue(o.metadata, Date.now(), { keepSettled: true });
        // An order waiting out its failure backoff, or of another replica's shard, is not part of this pass: the
        // pass measures the loop's pace.
        if ((this.backoff.get(refKey(o.metadata))?.until ?? 0) > Date.now()) keys.delete(refKey(o.metadata));
        if (this.opts.ownership?.ownsRef(o.metadata) === false) keys.delete(refKey(o.metadata));
      }
      this.lastTickAt = new Date();
      if (keys.size === 0) this.endPass();
      this.opts.onTick?.({ orders: orders.length, at: this.lastTickAt });
    } catch (err) {
      this.opts.log("error", "listing ClusterOrders failed; the next tick retries", loggableError(err));
    }
  }

  private orderOf(kind: string, obj: WatchedObject): OrderRef | undefined {
    const ns = obj.metadata?.namespace;
    if (!ns) return undefined;
    const labels = obj.metadata?.labels ?? {};
    switch (kind) {
      case "ClusterOrder": {
        const ref = obj.metadata?.name ? { namespace: ns, name: obj.metadata.name } : undefined;
        if (ref && obj.metadata?.uid) this.opts.ownership?.noteUid(ref, obj.metadata.uid);
        return ref;
      }
      case "Agent": {
        const byUid = labels[ORDER_LABEL] ? this.uidToKey.get(labels[ORDER_LABEL]) : undefined;
        if (byUid) return keyRef(byUid);
        const ie = labels[INFRAENV_AGENT_LABEL];
        const byInfraEnv = ie ? this.infraEnvToKey.get(`${ns}/${ie}`) : undefined;
        if (byInfraEnv) return keyRef(byInfraEnv);
        return ie?.endsWith("-infraenv") ? { namespace: ns, name: ie.slice(0, -"-infraenv".length) } : undefined;
      }
      case "NodePool":
        return labels[NODEPOOL_ORDER_LABEL] ? { namespace: ns, name: labels[NODEPOOL_ORDER_LABEL] } : undefined;
      case "InfraEnv": {
        const owner = (obj.metadata?.ownerReferences ?? []).find((o) => o.kind === "ClusterOrder");
        return owner?.name ? { namespace: ns, name: owner.name } : undefined;
      }
      default:
        return undefined;
    }
  }

  /** Resolves once every kind's watch has the version it starts from: any later change reaches enqueue. */
  private startWatches(): Promise<void> {
    const watched: [string, string][] = [
      ["ClusterOrder", "/apis/osac.openshift.io/v1alpha1/clusterorders"],
      ["Agent", "/apis/agent-install.openshift.io/v1beta1/agents"],
      ["NodePool", "/apis/hypershift.openshift.io/v1beta1/nodepools"],
      ["InfraEnv", "/apis/agent-install.openshift.io/v1beta1/infraenvs"],
    ];
    return Promise.all(watched.map(([kind, path]) => this.startWatch(kind, path))).then(() => undefined);
  }

  /**
   * Starts the watch of one kind from the collection's current resourceVersion: the tick has just
   * enqueued every order, so replaying every existing object as ADDED would only enqueue them again.
   */
  private async startWatch(kind: string, path: string): Promise<void> {
    while (!this.stopped) {
      try {
        const rv = await this.opts.kube.collectionVersion(path);
        this.watch(kind, path, rv);
        return;
      } catch (err) {
        if (this.stopped) return;
        this.opts.log("warn", `listing ${kind} for its watch failed; retrying`, loggableError(err));
        await new Promise((r) => setTimeout(r, 2_000));
      }
    }
  }

  /**
   * Watches one kind from `from`, or from nothing (every object replayed as ADDED: a full resync). A
   * restart resumes from the last resourceVersion seen (bookmarks keep it current): client-node ends a
   * watch after 30 s without events, and a restart without one would re-enqueue every order, a full
   * extra pass per idle watch per 30 s. Only after a 410 (that version was compacted away, events may
   * be lost) does the next start resync.
   */
  private watch(kind: string, path: string, from: string | undefined): void {
    if (this.stopped) return;
    let last = from;
    const query = { allowWatchBookmarks: true, ...(last ? { resourceVersion: last } : {}) };
    const stop = this.opts.kube.watch(path, query, (type: string, obj: unknown) => {
      const o = obj as WatchedObject & { code?: number };
      if (type === "ERROR") {
        if (o.code === 410) last = undefined;
        return;
      }
      last = o.metadata?.resourceVersion ?? last;
      if (type === "BOOKMARK") return;
      const ref = this.orderOf(kind, o);
      if (ref) this.enqueue(ref, undefined, { specEdit: kind === "ClusterOrder" && this.newGeneration(ref, o) });
    }, (err?: unknown) => {
      // client-node's watch ends on errors and on server timeouts: restart it (the timer covers the gap).
      if (this.stopped) return;
      if (err instanceof KubeError && err.code === 410) last = undefined;
      // client-node ends a watch after 30 s without events (TimeoutError): a normal end, restart at once.
      const quiet = !err || /TimeoutError|timeout/i.test(String(err));
      if (!quiet) this.opts.log("warn", `watch of ${kind} ended; restarting`, loggableError(err));
      setTimeout(() => this.watch(kind, path, last), quiet ? 0 : 2_000);
    });
    this.watchStops.set(kind, stop);
  }

  /** Records the generation of a ClusterOrder event; true when it differs from the one seen before (a spec edit). */
  private newGeneration(ref: OrderRef, o: WatchedObject): boolean {
    const gen = o.metadata?.generation;
    if (gen === undefined) return false;
    const k = refKey(ref);
    const before = this.generations.get(k);
    this.generations.set(k, gen);
    return before !== undefined && before !== gen;
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.wake) clearTimeout(this.wake);
    const next = Math.min(...[...this.due.entries()].filter(([k]) => !this.running.has(k)).map(([, t]) => t));
    if (!Number.isFinite(next)) return;
    this.wake = setTimeout(() => this.dispatch(), Math.max(0, next - Date.now()));
  }

  private dispatch(): void {
    if (this.stopped) return;
    if (this.opts.isLeader && !this.opts.isLeader()) {
      // A restarted leader's first pass waits for this poll; a standby's poll is a function call.
      this.wake = setTimeout(() => this.dispatch(), STANDBY_POLL_MS);
      return;
    }
    const now = Date.now();
    const limit = this.opts.concurrency ?? 4;
    const ready = [...this.due.entries()].filter(([k, t]) => t <= now && !this.running.has(k)).sort((a, b) => a[1] - b[1]);
    for (const [k] of ready) {
      if (this.running.size >= limit) break;
      this.due.delete(k);
      if (this.opts.ownership?.ownsRef(keyRef(k)) === false) {
        if (this.pass?.pending.delete(k) && this.pass.pending.size === 0) this.endPass();
        continue;
      }
      this.running.add(k);
      void this.run(k);
    }
    this.schedule();
  }

  private endPass(): void {
    const pass = this.pass;
    if (!pass) return;
    this.pass = undefined;
    this.opts.onPass?.({ orders: pass.orders, durationMs: Date.now() - pass.startedAt });
  }

  /** The order's settled plan when it is still settled (no reconcile then), else undefined. */
  private async settledResult(k: string, ref: OrderRef): Promise<ReconcileResult | undefined> {
    const listed = this.listed.get(k);
    if (!this.opts.settled || !listed) return undefined;
    try {
      const c = await this.opts.settled.check(ref, { metadata: { name: ref.name, namespace: ref.namespace, ...listed } });
      this.opts.onSettledCheck?.(ref, "plan" in c ? (c.resynced ? "resynced" : "settled") : c.miss);
      return "plan" in c ? { action: "skipped", plan: c.plan } : undefined;
    } catch (err) {
      this.opts.log("warn", `settled check of ${k} failed; reconciling it in full`, loggableError(err));
      return undefined;
    }
  }

  /** `base` doubled for each of `inARow` after the first, up to the failure cap. */
  private doubled(base: number, inARow: number): number {
    return Math.min(base * 2 ** Math.min(inARow - 1, 30), this.opts.maxErrorRequeueMs ?? 300_000);
  }

  private async run(k: string): Promise<void> {
    const ref = keyRef(k);
    const started = Date.now();
    try {
      const settled = await this.settledResult(k, ref);
      const result = settled ?? await this.opts.reconcile(ref);
      if (result.action === "gone" || result.action === "deleted") this.opts.settled?.forget(ref, { stored: true });
      this.backoff.delete(k);
      this.conflicts.delete(k);
      this.opts.onResult?.(ref, result, Date.now() - started);
      if (result.requeueAt) this.enqueue(ref, Math.max(result.requeueAt.getTime(), Date.now() + 1_000), { keepSettled: true });
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      this.opts.onResult?.(ref, e, Date.now() - started);
      if (isNotLeaderError(e)) {
        // Not the order's failure: it runs again when this replica leads (dispatch idles until then); an
        // order of another replica's shard is left to it (a later tick finds it again if its shard comes here).
        this.opts.log("info", `reconcile of ${k} stopped: not the leader`);
        if (this.opts.ownership?.ownsRef(ref) !== false) this.enqueue(ref, Date.now() + 1_000);
      } else if (isConflict(e)) {
        const conflicts = (this.conflicts.get(k) ?? 0) + 1;
        this.conflicts.set(k, conflicts);
        const delay = this.doubled(this.opts.conflictRequeueMs ?? 1_000, conflicts);
        this.opts.log("info", `reconcile of ${k} met a newer version of the order; it is read again`, { error: loggableError(e).error, conflicts, retryInMs: delay });
        this.enqueue(ref, Date.now() + delay);
      } else {
        const before = this.backoff.get(k);
        const failures = (before?.failures ?? 0) + 1;
        const delay = this.doubled(this.opts.errorRequeueMs ?? 10_000, failures);
        this.backoff.set(k, { failures, delayMs: delay, until: Date.now() + delay, editRetryAt: before?.editRetryAt });
        this.opts.log("error", `reconcile of ${k} failed`, { ...loggableError(e), failures, retryInMs: delay });
        this.enqueue(ref, Date.now() + delay);
      }
    } finally {
      this.running.delete(k);
      // Only a run that started after the tick counts for its pass (one already running saw older state).
      if (this.pass && started >= this.pass.startedAt && this.pass.pending.delete(k) && this.pass.pending.size === 0) this.endPass();
      this.schedule();
    }
  }
}
