// The pulumi processes a stack manager started, and for which leader: each is recorded as the Lease
// holder's while it runs (so the lock it takes can be judged by the Lease, see locks.ts), and all of
// them are stopped when this replica loses the Lease.
import type { ChildProcess } from "node:child_process";
import * as os from "node:os";
import { forgetLockHolder, readLocks, recordLockHolder } from "./locks";
import { killTree } from "./pulumiProcess";
import type { StateStore } from "./stateStore";

/** The leader this process acts for, and how to tell that another leader has stopped acting (run.ts). */
export interface LeaseOwner {
  identity: string;
  isHolderGone: (identity: string) => boolean;
  /** Whether this process leads now (LeaderElector.isLeading); no pulumi process starts while it is false. */
  isLeading: () => boolean;
}

export class LeaderProcesses {
  /** Still running (aborted when leadership is lost). */
  private readonly children = new Set<ChildProcess>();
  /** Holder-record cleanups of processes that ended, not yet done. */
  private readonly cleanups = new Set<Promise<void>>();

  /** `store`: the backend's blobs; undefined for backends without one (no locks to judge). */
  constructor(private readonly store: StateStore | undefined, private readonly projectName: string) {}

  /**
   * Registers a pulumi process just started: abortable by abortAll, and, while `owner` is set, recorded as
   * that leader's. Written right after the spawn, before the CLI has started far enough to lock.
   */
  track(stackName: string, child: ChildProcess, owner: LeaseOwner | undefined): void {
    const pid = child.pid;
    if (pid === undefined) return;
    this.children.add(child);
    const store = this.store;
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
      // A killed process leaves its lock: the record stays with it, for the next leader to judge.
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

  /** SIGINT to every process at once (the engine finishes in-flight steps and unlocks); its tree is killed after `killAfterMs`. */
  abortAll(killAfterMs: number): void {
    for (const child of this.children) {
      child.kill("SIGINT");
      const timer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null && child.pid) killTree(child.pid);
      }, killAfterMs);
      timer.unref();
      child.once("close", () => clearTimeout(timer));
    }
  }
}
