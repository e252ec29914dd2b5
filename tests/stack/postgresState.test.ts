// The stack layer on the postgres:// DIY backend, against a real server from the Debian package: our store
// reads and writes the blobs as the CLI does (a lock row we write blocks the CLI; the CLI's checkpoint is a
// blob we find), behaves as the file store does, and a `pulumi up` killed with -9 mid-create leaves a lock
// row that recovery keeps while the process lives and clears once it is dead, resolving the pending create
// without a duplicate. History retention prunes rows as it prunes files.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Client } from "pg";
import { startPostgres, type PostgresServer } from "../../lab/postgres";
import { checkpointExists, clearStaleLocks, pendingOperationsOf, readLocks, stackLockKeys } from "../../stack/locks";
import { historyKeys } from "../../stack/stateRetention";
import { FileStateStore, PostgresStateStore, type StateStore } from "../../stack/stateStore";
import { StateStoreSettled, type StoredSettled } from "../../controller/settledStore";
import { runDir } from "../support/env";
import { eventually } from "../support/eventually";
import { alive } from "../../lab/processes";
import { RECORD_TYPE, resourcesOfType, stackSandbox, type StackSandbox } from "../controller/support";

jest.setTimeout(300_000);

/** The same operations on a store, and what it shows after each (sizes differ by encoding, not by presence). */
async function exercise(store: StateStore): Promise<unknown[]> {
  const seen: unknown[] = [];
  const look = async () => seen.push({
    top: (await store.children(".pulumi/")).sort(),
    a: (await store.list(".pulumi/a/")).map((b) => b.name).sort(),
    exists: [await store.exists(".pulumi/a/x.json"), await store.exists(".pulumi/a/b/y.json"), await store.exists(".pulumi/none")],
    x: (await store.read(".pulumi/a/x.json"))?.toString("utf8"),
    outside: (await store.bytesUnder("", [".pulumi/a/"])) > 0,
  });
  await store.write(".pulumi/a/x.json", "{\"v\":1}");
  await store.write(".pulumi/a/b/y.json", Buffer.from([0, 1, 2, 255]));
  await store.write(".pulumi/a_b/z.json", "not under a/"); // `_` is a LIKE wildcard: it must match only itself
  await look();
  expect([...((await store.read(".pulumi/a/b/y.json")) ?? [])]).toEqual([0, 1, 2, 255]);
  await store.write(".pulumi/a/x.json", "{\"v\":2}");
  await look();
  await store.remove(".pulumi/a/x.json");
  await store.remove(".pulumi/a/x.json"); // removing what is gone is no error
  await look();
  await store.removeUnder(".pulumi/a/");
  await look();
  return seen;
}

describe("the stack layer on the postgres:// backend", () => {
  let pg: PostgresServer;
  let sb: StackSandbox;
  let store: PostgresStateStore;
  const dir = path.join(runDir(), "postgres-state");

  beforeAll(async () => {
    pg = await startPostgres(path.join(dir, "postgres"));
    store = new PostgresStateStore(pg.url);
    sb = stackSandbox({ backendUrl: pg.url, historyRetention: 3 });
  });
  afterAll(async () => {
    sb?.cleanup();
    await store?.close();
    await pg?.stop();
  });

  it("our store and the CLI read each other's blobs; a lock row we write blocks the CLI", async () => {
    const ref = { namespace: "pg1", name: "order1" };
    sb.setDesired("pg1/order1", [{ name: "a", content: "a1" }]);
    expect((await sb.manager.up(ref, { message: "first" })).summary).toBe("succeeded");
    const stack = sb.manager.stackName(ref);
    expect(await checkpointExists(store, sb.manager.projectName, stack)).toBe(true);
    expect(await checkpointExists(store, sb.manager.projectName, "pg1--absent")).toBe(false);
    expect(await sb.manager.stackExists(ref)).toBe(true);
    expect(await sb.manager.stackExists({ namespace: "pg1", name: "absent" })).toBe(false);
    const checkpoint = JSON.parse((await store.read(`.pulumi/stacks/${sb.manager.projectName}/${stack}.json`))!.toString("utf8")) as { version: number };
    expect(checkpoint.version).toBe(3);

    const lock = `${stackLockKeys(sb.manager.projectName, stack)}00000000-0000-0000-0000-00000000000a.json`;
    await store.write(lock, JSON.stringify({ pid: 1, username: "ghost", hostname: "gone-host", timestamp: new Date().toISOString() }));
    expect((await readLocks(store, sb.manager.projectName, stack)).map((l) => l.hostname)).toEqual(["gone-host"]);
    sb.setDesired("pg1/order1", [{ name: "a", content: "a2" }]);
    await expect(sb.manager.up(ref, { message: "blocked" })).rejects.toThrow(/currently locked/);
    // A lock of another host, young, whose holder is unknown: recovery keeps it.
    const report = await sb.manager.recover(ref);
    expect(report.locks?.held.map((a) => a.lock.hostname)).toEqual(["gone-host"]);
    expect((await clearStaleLocks(store, sb.manager.projectName, stack, { isHostGone: (h) => h === "gone-host" })).cleared).toHaveLength(1);
    expect((await sb.manager.up(ref, { message: "unblocked" })).summary).toBe("succeeded");
  });

  it("behaves as the file store does", async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-store-"));
    const other = new PostgresStateStore(pg.url.replace("?", "?table=store_contract&"));
    try {
      // The CLI creates its table on first use; our writes need it to exist already.
      const db = new Client({ connectionString: pg.url });
      await db.connect();
      await db.query("CREATE TABLE store_contract (key TEXT PRIMARY KEY, data JSON NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
      await db.end();
      const onFiles = await exercise(new FileStateStore(tmp));
      expect(onFiles).toHaveLength(4);
      expect(await exercise(other)).toEqual(onFiles);
    } finally {
      await other.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it("keeps the loop's settled records as the file store does", async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-settled-"));
    const other = new PostgresStateStore(pg.url.replace("?", "?table=settled_contract&"));
    const db = new Client({ connectionString: pg.url });
    await db.connect();
    await db.query("CREATE TABLE settled_contract (key TEXT PRIMARY KEY, data JSON NOT NULL, updated_at TIMESTAMPTZ NOT NULL DEFAULT now())");
    await db.end();
    const record = (key: string, rv: string): StoredSettled => ({ key, uid: `u-${key}`, resourceVersion: rv, bmiDigest: "b", hubDigest: "h",
      unwatched: { keys: { namespace: "n", name: "o", clusterReference: { namespace: "n", hostedClusterName: "hc" } }, digest: "u" },
      pin: "", until: 2_000_000_000_000, context: "c", gauges: { tenant: "t", desired: 2, ready: 2, failed: 0 } });
    const exerciseSettled = async (st: StateStore) => {
      const settled = new StateStoreSettled(st);
      await settled.save(record("ns-a/o1", "1"));
      await settled.save(record("ns-a/o_2", "1"));
      await settled.save(record("ns-b/o1", "1"));
      await settled.save(record("ns-a/o1", "2"));
      await settled.remove("ns-b/o1");
      return (await settled.load()).sort((x, y) => (x.key < y.key ? -1 : 1));
    };
    try {
      const onFiles = await exerciseSettled(new FileStateStore(tmp));
      expect(onFiles.map((r) => `${r.key}@${r.resourceVersion}`)).toEqual(["ns-a/o1@2", "ns-a/o_2@1"]);
      expect(await exerciseSettled(other)).toEqual(onFiles);
    } finally {
      await other.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it("a kill -9 mid-create leaves a lock row: kept while the process lives, cleared once it is dead, no duplicate", async () => {
    const ref = { namespace: "pg2", name: "order2" };
    const key = "pg2/order2";
    const stack = sb.manager.stackName(ref);
    sb.setDesired(key, [{ name: "a", content: "a1" }]);
    expect((await sb.manager.up(ref, { message: "first" })).summary).toBe("succeeded");
    sb.setDesired(key, [{ name: "a", content: "a1" }, { name: "b", content: "b1", sleepMs: 30_000 }]);
    const running = sb.manager.up(ref, { message: "add b" }).then(() => "finished", (e: unknown) => e);
    await eventually(async () => (fs.existsSync(path.join(sb.orderDir(key), "b.json")) ? true : undefined), 60_000, 50);
    const [held] = await readLocks(store, sb.manager.projectName, stack);
    expect(held.hostname).toBe(os.hostname());
    expect((await clearStaleLocks(store, sb.manager.projectName, stack)).held.map((a) => a.lock.pid)).toEqual([held.pid]);

    process.kill(held.pid, "SIGKILL");
    await eventually(async () => (alive(held.pid) ? undefined : true), 10_000, 20);
    expect(await running).toBeInstanceOf(Error);
    expect((await readLocks(store, sb.manager.projectName, stack)).map((l) => l.pid)).toEqual([held.pid]);

    const report = await sb.manager.recover(ref);
    expect(report.locks?.cleared.map((a) => a.reason)).toEqual([expect.stringMatching(/is no longer running$/)]);
    expect(report.pendingCleared.map((p) => p.type)).toEqual(["creating"]);
    expect(await readLocks(store, sb.manager.projectName, stack)).toEqual([]);
    expect(pendingOperationsOf((await sb.manager.exportStack(ref)).deployment)).toEqual([]);
    sb.setDesired(key, [{ name: "a", content: "a1" }, { name: "b", content: "b1" }]);
    expect((await sb.manager.up(ref, { message: "add b again" })).changes.create).toBe(1);
    expect(sb.ops(key)).toEqual(["create a", "create b", "adopt b"]);
    expect(resourcesOfType((await sb.manager.exportStack(ref)).deployment, RECORD_TYPE).map((r) => r.id).sort()).toEqual(["a", "b"]);
  });

  it("history retention prunes rows: after N + k updates N entries remain, numbered as before", async () => {
    const ref = { namespace: "pg3", name: "order3" };
    for (let i = 1; i <= 5; i++) {
      sb.setDesired("pg3/order3", [{ name: "h", content: `v${i}` }]);
      expect((await sb.manager.up(ref, { message: `update ${i}` })).summary).toBe("succeeded");
    }
    const history = await sb.manager.history(ref);
    expect(history.map((h) => h.version)).toEqual([5, 4, 3]);
    const rows = await store.list(historyKeys(sb.manager.projectName, sb.manager.stackName(ref)));
    expect(rows.filter((r) => r.name.endsWith(".history.json")).length).toBe(3);
    expect(await sb.manager.stateBytes()).toBeGreaterThan(0);
  });
});
