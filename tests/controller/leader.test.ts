// Leader election against the real kube-apiserver of the test plane: two electors on one Lease, one
// leads; failover when the leader stops renewing (within a lease period plus one retry period) and
// at once after a graceful release; errors other than conflicts surface, logged once.
import { Writable } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import { Kube, type LeaseObject } from "../../clients/kube";
import { LeaderElector } from "../../controller/leader";
import { createLogger } from "../../lib/logger";
import { eventually } from "../support/eventually";
import { createTestNamespace, kubeConfig } from "../support/kube";

const LEASE_SECONDS = 2;
const RETRY_MS = 200;

function elector(kube: Kube, namespace: string, identity: string, events: string[], name = "baremetal-workers"): LeaderElector {
  return new LeaderElector({
    client: kube, namespace, name, identity, leaseDurationSeconds: LEASE_SECONDS,
    renewDeadlineMs: 1_400, retryPeriodMs: RETRY_MS,
    onStartedLeading: () => events.push(`${identity} started`),
    onStoppedLeading: () => events.push(`${identity} stopped`),
  });
}

describe("Lease leader election", () => {
  const kc = kubeConfig();
  const kube = new Kube(kc);
  let ns = "";
  const running: LeaderElector[] = [];
  beforeAll(async () => {
    ns = await createTestNamespace(kc, "leader");
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((e) => e.abandon()));
  });

  it("elects exactly one of two replicas, fails over when it stops renewing, and at once on release", async () => {
    const events: string[] = [];
    const a = elector(kube, ns, "replica-a", events);
    const b = elector(kube, ns, "replica-b", events);
    running.push(a, b);
    a.start();
    b.start();
    const first = await eventually(async () => (a.isLeader() ? a : b.isLeader() ? b : undefined), 10_000);
    const second = first === a ? b : a;
    // hold steady for more than a lease period: never two leaders, no flapping
    for (let i = 0; i < 15; i++) {
      expect([a.isLeader(), b.isLeader()].filter(Boolean)).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 200));
    }
    const lease = await kube.getLease(ns, "baremetal-workers");
    expect(lease?.spec).toMatchObject({ holderIdentity: first.identity, leaseDurationSeconds: LEASE_SECONDS, leaseTransitions: 0 });
    expect(lease?.spec?.renewTime).toMatch(/\.\d{6}Z$/);
    expect(second.leader()).toBe(first.identity);
    expect(second.healthy()).toBe(true);

    // the leader dies without releasing: the standby takes over once the record is a lease old
    const stoppedAt = Date.now();
    await first.abandon();
    await eventually(async () => (second.isLeader() ? true : undefined), 10_000, 20);
    const failoverMs = Date.now() - stoppedAt;
    expect(failoverMs).toBeLessThanOrEqual(LEASE_SECONDS * 1000 + 2 * RETRY_MS + 800); // + scheduling slack on a busy CI machine
    expect(failoverMs).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - RETRY_MS - 300);
    expect((await kube.getLease(ns, "baremetal-workers"))?.spec).toMatchObject({ holderIdentity: second.identity, leaseTransitions: 1 });

    // the old leader comes back: it stands by; a graceful stop of the leader hands over within a retry
    const again = elector(kube, ns, first.identity, events);
    running.push(again);
    again.start();
    await new Promise((r) => setTimeout(r, 3 * RETRY_MS));
    expect(again.isLeader()).toBe(false);
    const releasedAt = Date.now();
    await second.stop();
    expect((await kube.getLease(ns, "baremetal-workers"))?.spec?.holderIdentity).toBe("");
    await eventually(async () => (again.isLeader() ? true : undefined), 5_000, 20);
    expect(Date.now() - releasedAt).toBeLessThan(LEASE_SECONDS * 1000);
    expect(events).toEqual([
      `${first.identity} started`, `${first.identity} stopped`, `${second.identity} started`, `${second.identity} stopped`,
      `${first.identity} started`,
    ]);
  });

  it("a leader cut off from the API server stops acting by its renew deadline, and never judges the new leader gone", async () => {
    const events: string[] = [];
    let cut = false;
    const partitioned: Kube = Object.assign(Object.create(kube) as Kube, {
      // requests that never answer, as across a network partition
      getLease: (n: string, name: string) => (cut ? new Promise<never>(() => undefined) : kube.getLease(n, name)),
      replaceLease: (l: LeaseObject) => (cut ? new Promise<never>(() => undefined) : kube.replaceLease(l)),
    });
    const a = new LeaderElector({ client: partitioned, namespace: ns, name: "cut", identity: "replica-a", leaseDurationSeconds: LEASE_SECONDS,
      renewDeadlineMs: 1_400, retryPeriodMs: RETRY_MS, onStoppedLeading: () => events.push("replica-a stopped") });
    const b = elector(kube, ns, "replica-b", events, "cut");
    running.push(b);
    try {
      a.start();
      await eventually(async () => (a.isLeading() ? true : undefined), 10_000, 20);
      b.start();
      await new Promise((r) => setTimeout(r, 3 * RETRY_MS));
      expect(b.isLeader()).toBe(false);
      expect(b.isHolderGone("replica-a")).toBe(false); // its Lease is live

      cut = true;
      const cutAt = Date.now();
      // its renew hangs: it stops leading (its updates are aborted) by the renew deadline, before anyone may take over
      await eventually(async () => (events.includes("replica-a stopped") ? true : undefined), 5_000, 20);
      expect(a.isLeading()).toBe(false);
      expect(Date.now() - cutAt).toBeLessThan(LEASE_SECONDS * 1000);
      await eventually(async () => (b.isLeading() ? true : undefined), 10_000, 20);
      // the cut-off replica's last observation is its own record, long unchanged: the new leader is still not gone
      await new Promise((r) => setTimeout(r, LEASE_SECONDS * 1000));
      expect(a.isHolderGone("replica-b")).toBe(false);
      expect(b.isHolderGone("replica-a")).toBe(true);
      expect(events).toEqual(["replica-a stopped", "replica-b started"]);
    } finally {
      void a.abandon(); // its renew never answers: do not wait for it
    }
  });

  it("a holder renews with one write of what it last wrote; a write by anyone since makes it read again, and lose", async () => {
    const calls: string[] = [];
    const counted: Kube = Object.assign(Object.create(kube) as Kube, {
      getLease: (n: string, name: string) => (calls.push("get"), kube.getLease(n, name)),
      replaceLease: (l: LeaseObject) => (calls.push("replace"), kube.replaceLease(l)),
      createLease: (l: LeaseObject) => (calls.push("create"), kube.createLease(l)),
    });
    const events: string[] = [];
    const a = new LeaderElector({ client: counted, namespace: ns, name: "one-write", identity: "solo", leaseDurationSeconds: LEASE_SECONDS,
      renewDeadlineMs: 1_400, retryPeriodMs: RETRY_MS, onStoppedLeading: () => events.push("solo stopped") });
    running.push(a);
    a.start();
    await eventually(async () => (a.isLeading() ? true : undefined), 10_000, 20);
    calls.length = 0;
    await new Promise((r) => setTimeout(r, 6 * RETRY_MS));
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(new Set(calls)).toEqual(new Set(["replace"]));
    expect((await kube.getLease(ns, "one-write"))?.spec).toMatchObject({ holderIdentity: "solo", leaseTransitions: 0 });
    // another writer takes the Lease (read-modify-write, again while our renews win): the next renew
    // conflicts, reads it, and steps down at once
    await eventually(async () => {
      const seen = await kube.getLease(ns, "one-write");
      calls.length = 0;
      return kube.replaceLease({ ...seen!, spec: { ...seen!.spec, holderIdentity: "intruder" } }).then(() => true, () => undefined);
    }, 5_000, 0);
    await eventually(async () => (events.includes("solo stopped") ? true : undefined), 5_000, 20);
    expect(calls.slice(0, 2)).toEqual(["replace", "get"]);
    expect((await kube.getLease(ns, "one-write"))?.spec?.holderIdentity).toBe("intruder");
  });

  it("a conditional update on a stale resourceVersion loses instead of overwriting", async () => {
    const events: string[] = [];
    const a = elector(kube, ns, "solo", events, "race");
    expect(await a.tryAcquireOrRenew()).toBe(true);
    // someone else writes the Lease between our read and our write
    const realGet = kube.getLease.bind(kube);
    const racing: Kube = Object.assign(Object.create(kube) as Kube, {
      getLease: async (n: string, name: string) => {
        const seen = await realGet(n, name);
        await kube.replaceLease({ ...seen!, spec: { ...seen!.spec, holderIdentity: "intruder" } });
        return seen;
      },
    });
    const b = new LeaderElector({ client: racing, namespace: ns, name: "race", identity: "solo",
      leaseDurationSeconds: LEASE_SECONDS, retryPeriodMs: RETRY_MS, renewDeadlineMs: 1_400 });
    expect(await b.tryAcquireOrRenew()).toBe(false);
    expect((await kube.getLease(ns, "race"))?.spec?.holderIdentity).toBe("intruder");
  });

  it("throws errors other than conflicts, logs each distinct error once, and reports unhealthy", async () => {
    const lines: string[] = [];
    const logger = createLogger({ destination: new Writable({ write(c: Buffer, _e, cb) {
      lines.push(c.toString());
      cb();
    } }) });
    const missing = `absent-${Date.now()}`;
    const e = new LeaderElector({ client: kube, namespace: missing, name: "baremetal-workers", identity: "x",
      leaseDurationSeconds: LEASE_SECONDS, retryPeriodMs: 100, renewDeadlineMs: 1_000, logger });
    await expect(e.tryAcquireOrRenew()).rejects.toMatchObject({ code: 404 });
    running.push(e);
    e.start();
    await new Promise((r) => setTimeout(r, 800)); // several retries
    expect(e.healthy()).toBe(false);
    expect(e.isLeader()).toBe(false);
    expect(lines.filter((l) => l.includes("leader election error"))).toHaveLength(1);
  });

  it("an identity with no Lease permission is refused (Forbidden) rather than treated as a standby", async () => {
    const tokenFile = `${process.env.BMW_TEST_RUN_DIR}/controlplane/pki/unprivileged.token`;
    const fs = await import("node:fs");
    const unprivileged = new k8s.KubeConfig();
    const cluster = kc.getCurrentCluster()!;
    unprivileged.loadFromOptions({
      clusters: [cluster], users: [{ name: "unprivileged", token: fs.readFileSync(tokenFile, "utf8").trim() }],
      contexts: [{ name: "u", cluster: cluster.name, user: "unprivileged" }], currentContext: "u",
    });
    const e = new LeaderElector({ client: new Kube(unprivileged), namespace: ns, name: "baremetal-workers", identity: "u",
      leaseDurationSeconds: LEASE_SECONDS, retryPeriodMs: RETRY_MS, renewDeadlineMs: 1_400 });
    await expect(e.tryAcquireOrRenew()).rejects.toMatchObject({ code: 403 });
  });
});
