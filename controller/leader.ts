// Leader election on a coordination.k8s.io/v1 Lease, so two reconciler replicas never act at once:
// one leads, the other stands by and takes over when the leader stops renewing. Same rules as
// client-go's leaderelection: every write is conditional on the observed resourceVersion, and a
// lease counts as expired when its record has not changed for leaseDurationSeconds *as measured on
// our own clock* (we never compare our clock with the holder's renewTime, so clock skew between
// nodes cannot make two leaders). Hence failover takes at most leaseDuration + retryPeriod after
// the leader's last renewal, or one retryPeriod after a graceful release.
import type { LeaseObject } from "../clients/kube/types";
import { isConflict } from "../clients/kube/errors";
import { microTime } from "../clients/kube/kube";
import { createdLease, heldLease, releasedLease, renewedLease } from "./leaseRecords";
import type { Logger } from "../lib/logger";

/** What the elector needs from a Kubernetes client; clients/kube's Kube implements it. */
export interface LeaseClient {
  getLease(namespace: string, name: string): Promise<LeaseObject | undefined>;
  /** Throws an error recognised by isConflict when the Lease already exists. */
  createLease(lease: LeaseObject): Promise<LeaseObject>;
  /** Conditional on lease.metadata.resourceVersion; throws a conflict error when it is stale. */
  replaceLease(lease: LeaseObject): Promise<LeaseObject>;
}

export interface LeaderElectorOptions {
  client: LeaseClient;
  namespace: string;
  /** Lease name, e.g. "baremetal-workers". */
  name: string;
  /** Unique per replica, e.g. the pod name; defaults to hostname_pid. */
  identity: string;
  /** Default 15. */
  leaseDurationSeconds?: number;
  /** A leader that could not renew for this long steps down. Default 2/3 of the lease duration. */
  renewDeadlineMs?: number;
  /** How often to try to acquire or renew. Default 2000. */
  retryPeriodMs?: number;
  onStartedLeading?: () => void;
  onStoppedLeading?: () => void;
  /**
   * Whether to hold the Lease at all (default: always). While false the elector only observes it; a
   * holder steps down (onStoppedLeading), waits for `beforeRelease` (what it ran under the Lease has
   * stopped), then releases it, so the next holder never overlaps with it.
   */
  wants?: () => boolean;
  beforeRelease?: () => Promise<void>;
  /** Labels of the Lease when this elector creates it. */
  labels?: Record<string, string>;
  /** Called when a different holder is observed (including ourselves). */
  onNewLeader?: (identity: string) => void;
  logger?: Logger;
  /** Injected clock (ms). */
  now?: () => number;
}

interface Observed {
  holder: string;
  resourceVersion: string;
  leaseDurationSeconds: number;
  /** Our clock when this record (resourceVersion) was first seen. */
  seenAt: number;
}

export class LeaderElector {
  private readonly leaseMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;
  private readonly now: () => number;
  private observed: Observed | undefined;
  /** The Lease as our last successful write left it: a holder renews it with one request. */
  private written: LeaseObject | undefined;
  private leading = false;
  private lastRenewOk = 0;
  private reachable = false;
  private lastErrorText: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private running = false;
  private inFlight: Promise<void> | undefined;
  /** Stepped down and waiting for beforeRelease before releasing the Lease it still renews. */
  private handover: { drained: boolean; done: Promise<void> } | undefined;

  constructor(private readonly opts: LeaderElectorOptions) {
    const leaseSeconds = opts.leaseDurationSeconds ?? 15;
    if (!Number.isInteger(leaseSeconds) || leaseSeconds < 1) throw new Error("leaseDurationSeconds must be a positive integer");
    this.leaseMs = leaseSeconds * 1000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? Math.floor((this.leaseMs * 2) / 3);
    this.retryMs = opts.retryPeriodMs ?? 2000;
    if (this.renewDeadlineMs >= this.leaseMs) throw new Error("renewDeadlineMs must be shorter than the lease duration");
    if (this.retryMs >= this.renewDeadlineMs) throw new Error("retryPeriodMs must be shorter than renewDeadlineMs");
    this.now = opts.now ?? Date.now;
  }

  get identity(): string {
    return this.opts.identity;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Whether this replica may act right now: it holds the Lease and its last successful renew started
   * within the renew deadline on our clock. Unlike isLeader(), this does not wait for the next tick to
   * notice a renew that hangs or fails: a replica cut off from the API server stops acting by the
   * deadline, while another replica waits a whole lease duration (longer) before it may take over.
   */
  isLeading(): boolean {
    return this.leading && this.now() - this.lastRenewOk < this.renewDeadlineMs;
  }

  /** The last holder seen on the Lease ("" when released or never observed). */
  leader(): string {
    return this.observed?.holder ?? "";
  }

  /**
   * Whether the leader `identity` certainly acts no more, so that what it left behind (a stack lock) may be
   * recovered: the Lease as last observed names another holder or none (it changes hands only after the
   * previous holder's lease expired or it released it), or still names `identity` but has not been renewed
   * for a lease duration on our clock. Never true for ourselves, nor before the Lease was observed, nor
   * unless we lead now (isLeading): a replica cut off from the API server holds an old observation in
   * which the new leader's record looks expired, and must not clear that leader's live locks.
   */
  isHolderGone(identity: string): boolean {
    const o = this.observed;
    if (!o || identity === "" || identity === this.opts.identity || !this.isLeading()) return false;
    return o.holder !== identity || this.expired(this.now());
  }

  /** The last attempt reached the API server (conflicts count as reachable). */
  healthy(): boolean {
    return this.reachable;
  }

  /** Starts the acquire/renew loop. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  /**
   * Stops the loop and, when leading, releases the Lease (holder cleared) so a standby takes over
   * within one retry period instead of waiting for expiry.
   */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
    // Stop acting first, let what ran under the Lease stop, then release it.
    const handover = this.handover;
    if (this.leading || handover) {
      this.setLeading(false);
      try {
        if (handover) await handover.done;
        else await this.opts.beforeRelease?.();
        await this.release();
      } catch (e) {
        this.logError(e);
      }
      this.handover = undefined;
    }
  }

  /**
   * Stops renewing without releasing, as a crashed or partitioned process would. For tests and for
   * shutting down when the API server is unreachable.
   */
  async abandon(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
    this.setLeading(false);
  }

  /** Resolves once this replica leads (or rejects when the signal aborts). */
  waitForLeadership(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const poll = setInterval(() => {
        if (this.leading) done(resolve);
      }, Math.min(100, this.retryMs));
      const onAbort = () => done(() => reject(new Error("aborted while waiting for leadership")));
      const done = (f: () => void) => {
        clearInterval(poll);
        signal?.removeEventListener("abort", onAbort);
        f();
      };
      if (this.leading) return done(resolve);
      signal?.addEventListener("abort", onAbort);
    });
  }

  /**
   * One attempt: create the Lease, renew it when we hold it, or take it over when it is released or
   * expired. Returns whether we hold it now. Conflicts (someone else wrote first) return false;
   * every other error is thrown.
   */
  async tryAcquireOrRenew(): Promise<boolean> {
    // A renew counts from when it was sent: the write may have landed any time before the answer.
    const sentAt = this.now();
    let held: boolean;
    try {
      held = await this.attempt();
      this.reachable = true;
    } catch (e) {
      this.reachable = false;
      throw e;
    }
    const tookMs = this.now() - sentAt;
    if (tookMs > this.renewDeadlineMs / 2) {
      // Renews this slow make a holder step down on a loaded machine: worth seeing before it flaps.
      this.opts.logger?.warn({ lease: `${this.opts.namespace}/${this.opts.name}`, tookMs, renewDeadlineMs: this.renewDeadlineMs },
        "a Lease renew took more than half the renew deadline");
    }
    if (held) {
      this.lastRenewOk = sentAt;
      // An answer that came after the deadline (counted from the send) leads to nothing: not even a flap in the log.
      if (this.now() - sentAt < this.renewDeadlineMs) {
        this.setLeading(true);
        this.armDeadline();
      }
    }
    return held;
  }

  /**
   * Steps down when the renew deadline passes without a successful renew, even while a renew hangs (a
   * tick awaits it): the running updates must be stopped before another replica may take over.
   */
  private armDeadline(): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(() => {
      this.deadlineTimer = undefined;
      if (this.leading && !this.isLeading()) this.setLeading(false);
    }, Math.max(0, this.lastRenewOk + this.renewDeadlineMs - this.now()));
    this.deadlineTimer.unref();
  }

  private async attempt(): Promise<boolean> {
    const { client, namespace, name, identity } = this.opts;
    const leaseSeconds = this.leaseMs / 1000;
    const nowMs = this.now();
    const stamp = microTime(new Date(nowMs));
    // A holder renews what it last wrote in one request (half the round trips of read-then-write, which
    // matters on a loaded API server); the resourceVersion makes it fail if anyone wrote since.
    const last = this.written;
    this.written = undefined;
    if (last && this.leading && last.spec?.holderIdentity === identity) {
      const renewed = await this.write(() => client.replaceLease(renewedLease(last, stamp)), nowMs);
      if (renewed) return true;
    }
    const current = await client.getLease(namespace, name);
    if (!current) return this.write(() => client.createLease(createdLease(this.opts, identity, leaseSeconds, stamp)), nowMs);
    this.observe(current, nowMs);
    const holder = current.spec?.holderIdentity ?? "";
    if (holder !== "" && holder !== identity && !this.expired(nowMs)) return false;
    return this.write(() => client.replaceLease(heldLease(current, identity, leaseSeconds, stamp)), nowMs);
  }

  /** One conditional write: true when it landed (and is remembered), false on a conflict. */
  private async write(send: () => Promise<LeaseObject>, nowMs: number): Promise<boolean> {
    try {
      const lease = await send();
      this.observe(lease, nowMs);
      this.written = lease;
      return true;
    } catch (e) {
      if (isConflict(e)) return false;
      throw e;
    }
  }

  private expired(nowMs: number): boolean {
    const o = this.observed;
    if (!o) return true;
    return nowMs >= o.seenAt + o.leaseDurationSeconds * 1000;
  }

  private observe(lease: LeaseObject, nowMs: number): void {
    const rv = lease.metadata.resourceVersion ?? "";
    const holder = lease.spec?.holderIdentity ?? "";
    if (this.observed?.resourceVersion === rv) return;
    const previousHolder = this.observed?.holder;
    this.observed = {
      holder, resourceVersion: rv, seenAt: nowMs,
      leaseDurationSeconds: lease.spec?.leaseDurationSeconds ?? this.leaseMs / 1000,
    };
    if (holder !== previousHolder && holder !== "") this.opts.onNewLeader?.(holder);
  }

  private async release(): Promise<void> {
    const { client, namespace, name, identity } = this.opts;
    this.written = undefined;
    const current = await client.getLease(namespace, name);
    if (!current || current.spec?.holderIdentity !== identity) return;
    await client.replaceLease(releasedLease(current, microTime(new Date(this.now()))));
    this.opts.logger?.info({ lease: `${namespace}/${name}`, identity }, "released leadership");
  }

  private schedule(delayMs: number): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.inFlight = this.tick().finally(() => {
        this.inFlight = undefined;
      });
    }, delayMs);
  }

  /**
   * While the Lease is not wanted: step down at once, keep renewing the Lease while `beforeRelease` waits for
   * what ran under it (so nobody may take it meanwhile), then release it; or, not holding it, only observe it.
   */
  private async standAside(): Promise<void> {
    try {
      if (this.leading) {
        this.setLeading(false);
        const h = { drained: false, done: Promise.resolve() };
        h.done = (this.opts.beforeRelease?.() ?? Promise.resolve()).catch((e) => this.logError(e)).finally(() => {
          h.drained = true;
        });
        this.handover = h;
      }
      if (this.handover?.drained) {
        await this.release();
        this.handover = undefined;
      } else if (this.handover) {
        await this.attempt();
      } else {
        const current = await this.opts.client.getLease(this.opts.namespace, this.opts.name);
        if (current) this.observe(current, this.now());
      }
      this.reachable = true;
    } catch (e) {
      this.reachable = false;
      this.logError(e);
    }
  }

  private async tick(): Promise<void> {
    if (this.opts.wants && !this.opts.wants()) {
      await this.standAside();
      this.schedule(this.retryMs);
      return;
    }
    this.handover = undefined; // wanted again before it was released: keep it
    let held = false;
    try {
      held = await this.tryAcquireOrRenew();
      this.lastErrorText = undefined;
    } catch (e) {
      this.logError(e);
    }
    // Leadership is updated even when stopping, so stop() knows whether there is a Lease to release.
    const nowMs = this.now();
    if (!held && this.leading) {
      // Another holder took over: step down at once. Otherwise keep trying until the deadline.
      const takenOver = this.observed !== undefined && this.observed.holder !== "" && this.observed.holder !== this.opts.identity;
      if (takenOver || nowMs - this.lastRenewOk >= this.renewDeadlineMs) this.setLeading(false);
    }
    this.schedule(this.retryMs);
  }

  private setLeading(v: boolean): void {
    if (!v && this.deadlineTimer) {
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = undefined;
    }
    if (v === this.leading) return;
    this.leading = v;
    const { namespace, name, identity } = this.opts;
    this.opts.logger?.info({ lease: `${namespace}/${name}`, identity }, v ? "became leader" : "stopped leading");
    if (v) this.opts.onStartedLeading?.();
    else this.opts.onStoppedLeading?.();
  }

  /** Logs an error once per distinct message, so a long outage is one line, not one per retry. */
  private logError(e: unknown): void {
    const text = e instanceof Error ? e.message : String(e);
    if (text === this.lastErrorText) return;
    this.lastErrorText = text;
    this.opts.logger?.warn({ err: e, lease: `${this.opts.namespace}/${this.opts.name}` }, "leader election error");
  }
}

/** A default identity for this replica: POD_NAME when set (Downward API), else hostname_pid. */
export function defaultIdentity(hostname: string, pid: number, env: NodeJS.ProcessEnv = process.env): string {
  return env.POD_NAME ?? `${hostname}_${pid}`;
}
