// The pulumi processes a stack manager starts, and for which Lease holder: no process starts unless the
// holder may act on the stack's order at that moment (one Lease, or the order's shard Lease); each is
// recorded as the holder's while it runs (so the lock it takes can be judged by the Lease, see locks.ts);
// and the processes of the orders the holder may no longer act on are stopped.
import type { ChildProcess } from "node:child_process";
import * as os from "node:os";
import type { OrderRef } from "../io/observe";
import { NotLeaderError } from "../lib/notLeader";
import { forgetLockHolder, readLocks, recordLockHolder } from "./locks";
import { killTree } from "./pulumiProcess";
import type { StateStore } from "./stateStore";

/** The Lease holder this process acts for (run.ts), and how to tell that another holder has stopped acting. */
export interface LeaseOwner {
  identity: string;
  /** Whether the holder `identity` certainly acts no more on the order (its Lease, or the order's shard Lease, moved). */
  isHolderGone: (identity: string, ref: OrderRef) => boolean;
  /** Whether this process may act on the order now; no pulumi process for it starts while false. */
  isLeading: (ref: OrderRef) => boolean;
}

export class LeaderProcesses {
  /** Still running, with their stack (aborted when the holder may no longer act on its order). */
  private readonly children = new Map<ChildProcess, string>();
  /** Holder-record cleanups of processes that ended, not yet done. */
  private readonly cleanups = new Set<Promise<void>>();
  /** The order of each stack this manager selected. */
  private readonly refs = new Map<string, OrderRef>();
  private owner?: LeaseOwner;

  /** `store`: the backend's blobs; undefined for backends without one (no locks to judge). */
  constructor(private readonly store: StateStore | undefined, private readonly projectName: string) {}

  /** See StackManager.setLeaseOwner. */
  setOwner(owner: LeaseOwner | undefined): void {
    this.owner = owner;
  }

  /** Which order a stack is for (the owner judges by the order). */
  noteStack(stackName: string, ref: OrderRef): void {
    this.refs.set(stackName, ref);
  }

  /** Whether a pulumi process of the stack may run now: the owner may act on its order, or there is no owner (the CLI). */
  leading(stackName: string): boolean {
    if (!this.owner) return true;
    const ref = this.refs.get(stackName);
    return ref !== undefined && this.owner.isLeading(ref);
  }

  assertLeading(what: string, stackName: string): void {
    if (!this.leading(stackName)) {
      throw new NotLeaderError(`not the leader: ${what} of stack ${stackName} refused (this replica does not hold the order's Lease)`);
    }
  }

  /** A failure of an operation during which leadership was lost is the loss of leadership, not the order's failure. */
  lostLeadership(err: unknown, what: string, stackName: string): unknown {
    if (this.leading(stackName) || err instanceof NotLeaderError) return err;
    return new NotLeaderError(`not the leader: ${what} of stack ${stackName} stopped, leadership was lost meanwhile`, { cause: err });
  }

  /** The owner's judgement of other holders, for the stack's lock recovery. */
  isHolderGone(stackName: string): ((identity: string) => boolean) | undefined {
    const owner = this.owner;
    const ref = this.refs.get(stackName);
    if (!owner) return undefined;
    return (identity) => ref !== undefined && owner.isHolderGone(identity, ref);
  }

  /**
   * Registers a pulumi process just started: abortable by abortAll, and, while there is an owner, recorded as
   * that holder's. Written right after the spawn, before the CLI has started far enough to lock.
   */
  track(stackName: string, child: ChildProcess): void {
    const pid = child.pid;
    if (pid === undefined) return;
    this.children.set(child, stackName);
    const store = this.store;
    const owner = this.owner;
    const hostname = os.hostname();
    if (!store || !owner) {
      child.once("close", () => this.children.delete(child));
      return;
    }
    // The CLI needs far longer to start than this write takes; a record that could not be written only
    // means the lock is judged by its age, as an admin's is.
    const recorded = recordLockHolder(store, { identity: owner.identity, hostname, pid, stack: stackName, startedAt: new Date() })
      .then(() => true, () => false);
    child.once("close", () => {
      this.children.delete(child);
      // A killed process leaves its lock: the record stays with it, for the next holder to judge.
      const cleanup = (async () => {
        if (!(await recorded)) return;
        const leftLock = (await readLocks(store, this.projectName, stackName)).some((l) => l.pid === pid && l.hostname === hostname);
        if (!leftLock) await forgetLockHolder(store, hostname, pid);
      })().catch(() => undefined); // a record left behind matches no later lock (locks.ts: the start-time window)
      this.cleanups.add(cleanup);
      void cleanup.finally(() => this.cleanups.delete(cleanup));
    });
  }

  /** Resolves when the holder records of the processes that ended are settled. */
  async settled(): Promise<void> {
    await Promise.all([...this.cleanups]);
  }

  /**
   * SIGINT to every process (of the orders `which` selects) at once: the engine finishes in-flight steps and
   * unlocks; its tree is killed after `killAfterMs`.
   */
  abortAll(killAfterMs: number, which: (ref: OrderRef | undefined) => boolean = () => true): void {
    for (const [child, stackName] of this.children) {
      if (!which(this.refs.get(stackName))) continue;
      child.kill("SIGINT");
      const timer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null && child.pid) killTree(child.pid);
      }, killAfterMs);
      timer.unref();
      child.once("close", () => clearTimeout(timer));
    }
  }
}
