// Failure behaviour over a real socket: lost Create responses, deadlines, retries of idempotent calls
// only, token rotation, lifecycle faults, TLS, and a simulator restart that loses nothing.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import {
  BeingDeletedError, createOrAdopt, Filter, FulfillmentClient, FulfillmentError, NotFoundError, UnauthenticatedError,
  UnavailableError,
} from "../../clients/fulfillment";
import { spawnSimulator } from "../../lab/fulfillment/process";
import {
  ADMIN_TOKEN, ADMIN_TOKEN_2, clearFaults, eventually, Harness, harnessFor, nextBoots, setFault, startHarness, stats,
  tempDir, testSeed, workerBmi,
} from "./helpers";

const OWNER = { "osac.openshift.io/cluster-order": "order-1" };
let h: Harness;
let c: FulfillmentClient;
beforeAll(async () => {
  // Enough compute hosts that no test depends on another one releasing its host.
  const hosts = Array.from({ length: 12 }, (_, i) => ({
    name: `compute-${String(i).padStart(2, "0")}`, macs: [`AA:BB:CC:10:00:${String(i).padStart(2, "0")}`],
    labels: { "osac.openshift.io/class": "compute" },
  }));
  h = await startHarness(testSeed({ hosts }));
  c = h.client();
});
afterAll(() => h.close());
afterEach(() => clearFaults(h.lab));

const calls = async (method: string) => (await stats(h.lab)).calls[method] ?? 0;
const byName = async (name: string) => (await c.bareMetalInstances.list({ filter: Filter.nameEquals(name) })).items;

describe("lost and slow responses", () => {
  it("a Create whose response is lost is not retried; a retry by name adopts the one committed BMI", async () => {
    await setFault(h.lab, { method: { method: "BareMetalInstances/Create", commit_then_drop: true, times: 1 } });
    const before = await calls("BareMetalInstances/Create");
    await expect(c.bareMetalInstances.create(workerBmi("lost-1"))).rejects.toThrow(UnavailableError);
    expect(await calls("BareMetalInstances/Create")).toBe(before + 1);
    const retried = await createOrAdopt(c.bareMetalInstances, workerBmi("lost-1"), { ownerLabels: OWNER });
    expect(retried.adopted).toBe(true);
    expect(await byName("lost-1")).toHaveLength(1);
    expect((await byName("lost-1"))[0].id).toBe(retried.bmi.id);
    expect(await calls("BareMetalInstances/Create")).toBe(before + 1); // list-before-create: no second Create
  });

  it("createOrAdopt resolves a lost response inside one call, with exactly one BMI", async () => {
    await setFault(h.lab, { method: { method: "BareMetalInstances/Create", commit_then_drop: true, times: 1 } });
    const out = await createOrAdopt(c.bareMetalInstances, workerBmi("lost-2"), { ownerLabels: OWNER, retry: { initialDelayMs: 10 } });
    expect(out.adopted).toBe(true);
    expect((await byName("lost-2")).map((b) => b.id)).toEqual([out.bmi.id]);
  });

  it("createOrAdopt creates when nothing exists, and never adopts foreign or dying objects", async () => {
    const created = await createOrAdopt(c.bareMetalInstances, workerBmi("adopt-1"), { ownerLabels: OWNER });
    expect(created.adopted).toBe(false);
    const foreign = workerBmi("adopt-1");
    foreign.metadata!.labels = { "osac.openshift.io/cluster-order": "order-2" };
    await expect(createOrAdopt(c.bareMetalInstances, foreign, { ownerLabels: { "osac.openshift.io/cluster-order": "order-2" } }))
      .rejects.toThrow(/already exists/);
    await setFault(h.lab, { lifecycle: { name_prefix: "adopt-1", stuck_deleting: true } });
    await c.bareMetalInstances.delete(created.bmi.id);
    await expect(createOrAdopt(c.bareMetalInstances, workerBmi("adopt-1"), { ownerLabels: OWNER })).rejects.toThrow(BeingDeletedError);
  });

  it("a Get slower than the deadline fails with DEADLINE_EXCEEDED and is retried", async () => {
    const bmi = await c.bareMetalInstances.create(workerBmi("slow-get"));
    const fast = h.client({ deadlineMs: 200 });
    await setFault(h.lab, { method: { method: "BareMetalInstances/Get", latency_ms: 600, times: 1 } });
    const before = await calls("BareMetalInstances/Get");
    expect((await fast.bareMetalInstances.get(bmi.id)).id).toBe(bmi.id);
    expect(await calls("BareMetalInstances/Get")).toBe(before + 2);
  });

  it("a Create slower than the deadline is reported, not retried", async () => {
    const fast = h.client({ deadlineMs: 200 });
    await setFault(h.lab, { method: { method: "BareMetalInstances/Create", latency_ms: 600, times: 1 } });
    const before = await calls("BareMetalInstances/Create");
    const err = await fast.bareMetalInstances.create(workerBmi("slow-create")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as UnavailableError).code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(await calls("BareMetalInstances/Create")).toBe(before + 1);
    // The server finished it after the deadline: adoption finds it.
    await eventually(async () => ((await byName("slow-create")).length === 1 ? true : undefined));
  });

  it("retries UNAVAILABLE for List and Delete with backoff, but gives up after maxAttempts", async () => {
    await setFault(h.lab, { method: { method: "BareMetalInstances/List", code: "UNAVAILABLE", times: 2 } });
    const before = await calls("BareMetalInstances/List");
    await c.bareMetalInstances.list();
    expect(await calls("BareMetalInstances/List")).toBe(before + 3);
    await setFault(h.lab, { method: { method: "BareMetalInstances/List", code: "UNAVAILABLE" } });
    const limited = h.client({ retry: { maxAttempts: 2, initialDelayMs: 5 } });
    await expect(limited.bareMetalInstances.list()).rejects.toThrow(UnavailableError);
    await clearFaults(h.lab);
    const bmi = await c.bareMetalInstances.create(workerBmi("del-retry"));
    await setFault(h.lab, { method: { method: "BareMetalInstances/Delete", code: "UNAVAILABLE", times: 1 } });
    await c.bareMetalInstances.delete(bmi.id);
    expect((await c.bareMetalInstances.get(bmi.id)).metadata?.deletion_timestamp).not.toBeNull();
  });

  it("does not retry other codes, and injected error rates apply per method", async () => {
    await setFault(h.lab, { method: { method: "BareMetalInstances/Get", code: "INTERNAL" } });
    const before = await calls("BareMetalInstances/Get");
    const err = await c.bareMetalInstances.get("any").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FulfillmentError);
    expect((err as FulfillmentError).code).toBe(grpc.status.INTERNAL);
    expect(await calls("BareMetalInstances/Get")).toBe(before + 1);
    await expect(c.catalogItems.list()).resolves.toBeDefined();
  });
});

describe("token rotation", () => {
  it("reads the token file on every call", async () => {
    const file = path.join(h.dir, "rotating-token");
    fs.writeFileSync(file, ADMIN_TOKEN);
    const rot = h.client({ tokenFile: file });
    await rot.bareMetalInstances.list();
    fs.writeFileSync(file, `${ADMIN_TOKEN_2}\n`);
    await rot.bareMetalInstances.list();
    fs.writeFileSync(file, "revoked-token-value");
    const err = await rot.bareMetalInstances.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnauthenticatedError);
    expect(String(err)).not.toContain("revoked-token-value");
    fs.writeFileSync(file, "");
    await expect(rot.bareMetalInstances.list()).rejects.toThrow(/is empty/);
    fs.writeFileSync(file, ADMIN_TOKEN_2);
    await expect(rot.bareMetalInstances.list()).resolves.toBeDefined();
  });
});

describe("lifecycle faults", () => {
  it("a BMI stuck in DELETING stays until the fault is cleared", async () => {
    await setFault(h.lab, { lifecycle: { name_prefix: "stuck-", stuck_deleting: true } });
    const bmi = await c.bareMetalInstances.create(workerBmi("stuck-1"));
    await c.bareMetalInstances.delete(bmi.id);
    await new Promise((r) => setTimeout(r, 600)); // twice the delete delay
    expect((await c.bareMetalInstances.get(bmi.id)).status?.state).toBe("BARE_METAL_INSTANCE_STATE_DELETING");
    await clearFaults(h.lab);
    await eventually(async () => c.bareMetalInstances.get(bmi.id).then(() => undefined, (e: unknown) => (e instanceof NotFoundError ? true : undefined)));
  });

  it("a host that boots without reporting MACs: RUNNING, no hardware, READY false; the boot still carries the MACs", async () => {
    await setFault(h.lab, { lifecycle: { name_prefix: "nomac-", withhold_macs: true } });
    const boots = nextBoots(h.lab, 1);
    const bmi = await c.bareMetalInstances.create(workerBmi("nomac-1"));
    const [boot] = await boots;
    const got = await c.bareMetalInstances.get(bmi.id);
    expect(got.status?.state).toBe("BARE_METAL_INSTANCE_STATE_RUNNING");
    expect(got.status?.hardware).toBeUndefined();
    expect(got.status?.conditions).toContainEqual(expect.objectContaining({
      type: "BARE_METAL_INSTANCE_CONDITION_TYPE_READY", status: "CONDITION_STATUS_FALSE", reason: "NICMetadataUnavailable" }));
    expect(boot.bmi_id).toBe(bmi.id);
    expect(boot.macs.length).toBeGreaterThan(0);
    await c.bareMetalInstances.delete(bmi.id);
  });
});

describe("persistence", () => {
  it("a restarted simulator process keeps objects, deletes in progress, hosts and boots", async () => {
    const dir = tempDir("restart");
    const first = harnessFor(await spawnSimulator({ seed: testSeed({ timings: { provisionMs: 100, deleteMs: 8_000 } }), stateDir: dir }), dir);
    const c1 = first.client();
    const kept = await c1.bareMetalInstances.create(workerBmi("persist-1"));
    await eventually(async () => ((await c1.bareMetalInstances.get(kept.id)).status?.hardware ? true : undefined));
    const dying = await c1.bareMetalInstances.create(workerBmi("persist-2"));
    await c1.bareMetalInstances.delete(dying.id);
    const hostsBefore = await stats(first.lab);
    await first.close();

    const second = harnessFor(await spawnSimulator({ seed: testSeed({ timings: { provisionMs: 100, deleteMs: 8_000 } }), stateDir: dir }), dir);
    try {
      const c2 = second.client();
      const again = await c2.bareMetalInstances.get(kept.id);
      expect(again.status?.hardware?.nics.map((n) => n.mac)).toEqual(["aa:bb:cc:00:00:01", "aa:bb:cc:00:00:02"]);
      expect(again.metadata).toMatchObject({ name: "persist-1", tenant: "system" });
      expect((await c2.bareMetalInstances.get(dying.id)).status?.state).toBe("BARE_METAL_INSTANCE_STATE_DELETING");
      expect((await stats(second.lab)).hosts_allocated).toBe(hostsBefore.hosts_allocated);
      const replay = await nextBoots(second.lab, 1, true);
      expect(replay[0].bmi_id).toBe(kept.id);
      // The delete resumes from its persisted due time.
      await eventually(async () => c2.bareMetalInstances.get(dying.id).then(() => undefined,
        (e: unknown) => (e instanceof NotFoundError ? true : undefined)), 15_000);
      await expect(c2.bareMetalInstances.create(workerBmi("persist-1"))).rejects.toThrow(/already exists/);
    } finally {
      await second.close();
    }
  });

  it("a simulator killed with SIGKILL loses no answered call: creates, deletes in progress and lifecycle moves", async () => {
    const dir = tempDir("sigkill");
    const seed = testSeed({ timings: { provisionMs: 100, deleteMs: 8_000 } });
    const first = harnessFor(await spawnSimulator({ seed, stateDir: dir }), dir);
    const c1 = first.client();
    const running = await c1.bareMetalInstances.create(workerBmi("kill-1"));
    await eventually(async () => ((await c1.bareMetalInstances.get(running.id)).status?.hardware ? true : undefined));
    const dying = await c1.bareMetalInstances.create(workerBmi("kill-2"));
    await c1.bareMetalInstances.delete(dying.id);
    const labelled = await c1.bareMetalInstances.create(workerBmi("kill-3"));
    await c1.bareMetalInstances.update({ id: labelled.id, metadata: { labels: { ...labelled.metadata?.labels, step: "after" } } }, { updateMask: ["metadata.labels"] });
    await eventually(async () => ((await c1.bareMetalInstances.get(labelled.id)).status?.hardware ? true : undefined));
    const hostsBefore = await stats(first.lab);
    process.kill(first.sim.pid, "SIGKILL");
    await first.close();

    const second = harnessFor(await spawnSimulator({ seed, stateDir: dir }), dir);
    try {
      const c2 = second.client();
      expect((await c2.bareMetalInstances.get(running.id)).status?.state).toBe("BARE_METAL_INSTANCE_STATE_RUNNING");
      expect((await c2.bareMetalInstances.get(dying.id)).status?.state).toBe("BARE_METAL_INSTANCE_STATE_DELETING");
      expect((await c2.bareMetalInstances.get(labelled.id)).metadata?.labels?.step).toBe("after");
      expect((await stats(second.lab)).hosts_allocated).toBe(hostsBefore.hosts_allocated);
      expect(hostsBefore.hosts_allocated).toBe(2);
      expect((await nextBoots(second.lab, 2, true)).map((b) => b.bmi_id)).toEqual([running.id, labelled.id]);
    } finally {
      await second.close();
    }
  });
});

describe("TLS", () => {
  it("connects with the CA bundle and fails without it", async () => {
    const dir = tempDir("tls");
    const key = path.join(dir, "tls.key");
    const cert = path.join(dir, "tls.crt");
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=fulfillment.lab",
      "-addext", "subjectAltName=DNS:fulfillment.lab,IP:127.0.0.1", "-keyout", key, "-out", cert], { stdio: "ignore" });
    const sim = await spawnSimulator({ seed: testSeed(), stateDir: dir, tls: { certFile: cert, keyFile: key } });
    const tls = harnessFor(sim, dir);
    try {
      const good = tls.client({ transport: { kind: "tls", caFile: cert, serverNameOverride: "fulfillment.lab" } });
      await expect(good.instanceTypes.list()).resolves.toMatchObject({ total: 2 });
      const plain = tls.client({ retry: { maxAttempts: 1 } });
      await expect(plain.instanceTypes.list()).rejects.toThrow(UnavailableError);
      const untrusted = tls.client({ transport: { kind: "tls", serverNameOverride: "fulfillment.lab" }, retry: { maxAttempts: 1 } });
      await expect(untrusted.instanceTypes.list()).rejects.toThrow(UnavailableError);
    } finally {
      await tls.close();
    }
  });
});
