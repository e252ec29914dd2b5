// Failover of a stack lock (issue 15, finding 6): a leader killed mid-update leaves its DIY lock file. The
// lock names the pulumi process's host and pid; the holder record names the leader it ran for. The next
// leader recovers such a lock as soon as the dead leader no longer holds the Lease (it passed to us, or
// was released, or expired on our clock), never while that leader's Lease is live, and never a lock
// whose holder is unknown. Lease changes run on an in-memory Lease client with an injected clock.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { LeaseObject } from "../../clients/kube/types";
import { LeaderElector, type LeaseClient } from "../../controller/leader";
import {
  assessLock, clearStaleLocks, forgetLockHolder, lockHolderDir, lockHolderOf, readLocks, recordLockHolder, stackLockDir,
} from "../../stack/locks";
import { FileStateStore } from "../../stack/stateStore";

const STACK = "ns--order";
const PROJECT = "proj";
const T0 = Date.parse("2026-12-01T12:00:00Z");

/** One Lease in memory with resourceVersion checks, as the API server does. */
class MemoryLeases implements LeaseClient {
  lease?: LeaseObject;
  private rv = 0;
  async getLease(): Promise<LeaseObject | undefined> {
    return this.lease && structuredClone(this.lease);
  }
  async createLease(l: LeaseObject): Promise<LeaseObject> {
    if (this.lease) throw Object.assign(new Error("exists"), { code: 409 });
    this.lease = { ...l, metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.lease);
  }
  async replaceLease(l: LeaseObject): Promise<LeaseObject> {
    if (l.metadata.resourceVersion !== this.lease?.metadata.resourceVersion) throw Object.assign(new Error("conflict"), { code: 409 });
    this.lease = { ...l, metadata: { ...l.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.lease);
  }
}

function electors(clock: { t: number }) {
  const leases = new MemoryLeases();
  const make = (identity: string) => new LeaderElector({
    client: leases, namespace: "bmw-system", name: "baremetal-workers", identity, leaseDurationSeconds: 15, now: () => clock.t,
  });
  return { leases, old: make("reconciler-old"), us: make("reconciler-new") };
}

/** A state dir with the lock the dead leader's pulumi left and the holder record it wrote at spawn. */
async function deadLeadersLock(holderIdentity: string | undefined, opts: { hostname?: string; pid?: number } = {}) {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-failover-"));
  const hostname = opts.hostname ?? "reconciler-old-7c9f";
  const pid = opts.pid ?? 4711;
  const startedAt = new Date(Date.now() - 5_000);
  if (holderIdentity) await recordLockHolder(new FileStateStore(stateDir), { identity: holderIdentity, hostname, pid, stack: STACK, startedAt });
  const dir = stackLockDir(stateDir, PROJECT, STACK);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "3f2a.json"), JSON.stringify({ pid, username: "bmw", hostname, timestamp: new Date(startedAt.getTime() + 800).toISOString() }));
  return { stateDir, dir, cleanup: () => fs.rmSync(stateDir, { recursive: true, force: true }) };
}

const policyOf = (us: LeaderElector) => ({ hostname: "reconciler-new-5d8b", isHolderGone: (h: string) => us.isHolderGone(h) });

describe("stack lock failover through the Lease", () => {
  it("recovers at once the lock of a leader whose Lease passed to us, long before the age bound", async () => {
    const clock = { t: T0 };
    const { old, us } = electors(clock);
    expect(await old.tryAcquireOrRenew()).toBe(true);
    expect(await us.tryAcquireOrRenew()).toBe(false);
    const s = await deadLeadersLock("reconciler-old");
    try {
      // the old leader is killed; while its Lease is live its lock is held
      expect(await clearStaleLocks(new FileStateStore(s.stateDir), PROJECT, STACK, policyOf(us))).toMatchObject({ cleared: [], held: [{ stale: false }] });
      clock.t += 10_000;
      expect(await us.tryAcquireOrRenew()).toBe(false);
      expect((await clearStaleLocks(new FileStateStore(s.stateDir), PROJECT, STACK, policyOf(us))).held).toHaveLength(1);
      // a lease duration later on our clock the Lease is ours
      clock.t += 6_000;
      expect(await us.tryAcquireOrRenew()).toBe(true);
      const sweep = await clearStaleLocks(new FileStateStore(s.stateDir), PROJECT, STACK, policyOf(us));
      expect(sweep.held).toEqual([]);
      expect(sweep.cleared).toHaveLength(1);
      expect(sweep.cleared[0].reason).toBe("pid 4711 on reconciler-old-7c9f ran for leader reconciler-old, which no longer holds the Lease");
      expect(fs.readdirSync(s.dir)).toEqual([]);
      expect(fs.readdirSync(lockHolderDir(s.stateDir))).toEqual([]); // the holder record goes with the lock
    } finally {
      s.cleanup();
    }
  });

  it("recovers the lock of a leader whose Lease expired on our clock or was released only once we lead", async () => {
    const clock = { t: T0 };
    const { old, us } = electors(clock);
    expect(await old.tryAcquireOrRenew()).toBe(true);
    expect(await us.tryAcquireOrRenew()).toBe(false);
    const s = await deadLeadersLock("reconciler-old");
    try {
      clock.t += 15_000;
      // unchanged for a whole lease duration on our clock, but our observation may be stale (we could be cut off
      // from the API server while another replica leads): nothing is gone until the Lease is ours
      expect(us.isHolderGone("reconciler-old")).toBe(false);
      expect((await clearStaleLocks(new FileStateStore(s.stateDir), PROJECT, STACK, policyOf(us))).held).toHaveLength(1);
      expect(await us.tryAcquireOrRenew()).toBe(true);
      expect(us.isLeading()).toBe(true);
      expect(us.isHolderGone("reconciler-old")).toBe(true);
      expect((await clearStaleLocks(new FileStateStore(s.stateDir), PROJECT, STACK, policyOf(us))).cleared).toHaveLength(1);
      // a leader whose last renew is older than the renew deadline acts no more, and judges nobody gone
      clock.t += 10_000;
      expect(us.isLeading()).toBe(false);
      expect(us.isHolderGone("reconciler-old")).toBe(false);
    } finally {
      s.cleanup();
    }
    // a graceful stop releases the Lease (holder ""): the next replica takes it at once, and then its holder is gone
    const next = electors(clock);
    expect(await next.old.tryAcquireOrRenew()).toBe(true);
    await next.old.stop();
    expect(next.leases.lease?.spec?.holderIdentity).toBe("");
    expect(next.us.isHolderGone("reconciler-old")).toBe(false);
    clock.t += 1;
    expect(await next.us.tryAcquireOrRenew()).toBe(true);
    expect(next.us.isHolderGone("reconciler-old")).toBe(true);
  });

  it("never recovers the lock of a leader that still holds a live Lease, however it is asked", async () => {
    const clock = { t: T0 };
    const { old, us } = electors(clock);
    expect(await old.tryAcquireOrRenew()).toBe(true);
    const s = await deadLeadersLock("reconciler-old");
    try {
      for (let i = 0; i < 20; i++) {
        clock.t += 2_000;
        expect(await old.tryAcquireOrRenew()).toBe(true); // it renews: it may still be running pulumi
        expect(await us.tryAcquireOrRenew()).toBe(false);
        expect(us.isHolderGone("reconciler-old")).toBe(false);
        expect(await clearStaleLocks(new FileStateStore(s.stateDir), PROJECT, STACK, policyOf(us))).toMatchObject({ cleared: [], held: [{ stale: false }] });
      }
      // nor before anything was observed, nor for ourselves
      const fresh = electors(clock).us;
      expect(fresh.isHolderGone("reconciler-old")).toBe(false);
      expect(old.isHolderGone("reconciler-old")).toBe(false);
    } finally {
      s.cleanup();
    }
  });

  it("a lock without a holder record (an admin's CLI run) waits for the age bound even when every leader is gone", async () => {
    const s = await deadLeadersLock(undefined);
    try {
      const sweep = await clearStaleLocks(new FileStateStore(s.stateDir), PROJECT, STACK, { hostname: "reconciler-new-5d8b", isHolderGone: () => true });
      expect(sweep.held.map((a) => a.reason)).toEqual([expect.stringMatching(/^held by pid 4711 on reconciler-old-7c9f on another host/)]);
    } finally {
      s.cleanup();
    }
  });

  it("a dead pulumi process on this host is recovered as before, whatever the Lease says", async () => {
    const s = await deadLeadersLock("reconciler-old", { hostname: "reconciler-new-5d8b", pid: 2 ** 22 + 3 });
    try {
      const never = () => false;
      expect((await clearStaleLocks(new FileStateStore(s.stateDir), PROJECT, STACK, { hostname: "reconciler-new-5d8b", isHolderGone: never })).cleared[0].reason)
        .toBe(`pid ${2 ** 22 + 3} on reconciler-new-5d8b is no longer running`);
      expect(fs.readdirSync(s.dir)).toEqual([]);
    } finally {
      s.cleanup();
    }
  });

  it("a holder record names a lock only for its stack, host and pid, taken after the process started and soon after", async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-holder-"));
    try {
      const startedAt = new Date(T0);
      await recordLockHolder(new FileStateStore(stateDir), { identity: "pod-a", hostname: "host-a", pid: 10, stack: STACK, startedAt });
      const at = (ms: number) => new Date(T0 + ms);
      expect(await lockHolderOf(new FileStateStore(stateDir), STACK, { hostname: "host-a", pid: 10, timestamp: at(900) })).toBe("pod-a");
      expect(await lockHolderOf(new FileStateStore(stateDir), "ns--other", { hostname: "host-a", pid: 10, timestamp: at(900) })).toBeUndefined();
      expect(await lockHolderOf(new FileStateStore(stateDir), STACK, { hostname: "host-b", pid: 10, timestamp: at(900) })).toBeUndefined();
      expect(await lockHolderOf(new FileStateStore(stateDir), STACK, { hostname: "host-a", pid: 11, timestamp: at(900) })).toBeUndefined();
      // a lock older than the process (a reused pid's record), or taken long after it started (a later process
      // that reused the pid after a container restart), is not attributed
      expect(await lockHolderOf(new FileStateStore(stateDir), STACK, { hostname: "host-a", pid: 10, timestamp: at(-60_000) })).toBeUndefined();
      expect(await lockHolderOf(new FileStateStore(stateDir), STACK, { hostname: "host-a", pid: 10, timestamp: at(3_600_000) })).toBeUndefined();
      const lockDir = stackLockDir(stateDir, PROJECT, STACK);
      fs.mkdirSync(lockDir, { recursive: true });
      fs.writeFileSync(path.join(lockDir, "a.json"), JSON.stringify({ pid: 10, username: "u", hostname: "host-a", timestamp: at(500).toISOString() }));
      expect((await readLocks(new FileStateStore(stateDir), PROJECT, STACK)).map((l) => l.holder)).toEqual(["pod-a"]);
      await forgetLockHolder(new FileStateStore(stateDir), "host-a", 10);
      expect((await readLocks(new FileStateStore(stateDir), PROJECT, STACK)).map((l) => l.holder)).toEqual([undefined]);
      expect(assessLock({ key: "x", pid: 10, username: "u", hostname: "host-a", timestamp: at(0), holder: "pod-a" },
        { hostname: "host-z", now: () => T0, isHolderGone: (h) => h === "pod-a" })).toMatchObject({ stale: true });
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it("a holder record that is not a JSON object names no holder (it does not fail the lock sweep)", async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-holder-"));
    try {
      await recordLockHolder(new FileStateStore(stateDir), { identity: "pod-a", hostname: "host-a", pid: 10, stack: STACK, startedAt: new Date(T0) });
      const [file] = fs.readdirSync(lockHolderDir(stateDir));
      for (const text of ["null", "[]", "\"pod-a\"", "{"]) {
        fs.writeFileSync(path.join(lockHolderDir(stateDir), file), text);
        expect(await lockHolderOf(new FileStateStore(stateDir), STACK, { hostname: "host-a", pid: 10, timestamp: new Date(T0 + 900) })).toBeUndefined();
      }
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
