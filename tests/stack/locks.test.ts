// Lock judgement and pending-operation clearing as pure logic (no Pulumi process): which DIY lock
// files are stale, that only those are deleted, what resolvePendingOperations changes, and the pending
// operations read from a checkpoint without pulumi.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import {
  assessLock, clearStaleLocks, DiyLock, pendingOperationsOf, pulumiProcessAlive, readLocks, resolvePendingOperations,
  stackLockDir, storedPendingOperations,
} from "../../stack/locks";
import { FileStateStore, stateDirOf, stateStoreOf } from "../../stack/stateStore";

const NOW = Date.parse("2026-12-01T12:00:00Z");
const lock = (over: Partial<DiyLock>): DiyLock => ({
  key: ".pulumi/locks/organization/p/s/x.json", pid: 4242, username: "bmw", hostname: "reconciler-0", timestamp: new Date(NOW - 60_000), ...over,
});

describe("assessLock", () => {
  const base = { hostname: "reconciler-0", now: () => NOW, maxAgeMs: 3_600_000 };

  it("a lock of this host is stale exactly when its pulumi process is gone", () => {
    expect(assessLock(lock({}), { ...base, isPulumiAlive: () => true })).toMatchObject({ stale: false, reason: "held by live pid 4242 on reconciler-0" });
    expect(assessLock(lock({}), { ...base, isPulumiAlive: () => false })).toMatchObject({ stale: true, reason: "pid 4242 on reconciler-0 is no longer running" });
    // even a very old lock of a live local process is kept: a long up is still running
    expect(assessLock(lock({ timestamp: new Date(NOW - 86_400_000) }), { ...base, isPulumiAlive: () => true }).stale).toBe(false);
  });

  it("a lock of another host is stale only past the age bound or when that host is known gone", () => {
    const other = lock({ hostname: "reconciler-1" });
    const neverAsked = () => {
      throw new Error("must not check pids of another host");
    };
    expect(assessLock(other, { ...base, isPulumiAlive: neverAsked }).stale).toBe(false);
    expect(assessLock(lock({ hostname: "reconciler-1", timestamp: new Date(NOW - 3_600_001) }), { ...base, isPulumiAlive: neverAsked }))
      .toMatchObject({ stale: true });
    expect(assessLock(other, { ...base, isPulumiAlive: neverAsked, isHostGone: (h) => h === "reconciler-1" }))
      .toMatchObject({ stale: true, reason: "host of pid 4242 on reconciler-1 is gone" });
  });

  it("pulumiProcessAlive is false for a dead pid and for a live process that is not pulumi (pid reuse)", () => {
    expect(pulumiProcessAlive(process.pid)).toBe(false); // this is node, not pulumi
    expect(pulumiProcessAlive(2 ** 22 + 1)).toBe(false);
    expect(pulumiProcessAlive(-1)).toBe(false);
  });
});

describe("clearStaleLocks on a lock directory", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-locks-"));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("deletes the stale lock files and leaves live ones", async () => {
    const store = new FileStateStore(tmp);
    const dir = stackLockDir(tmp, "proj", "ns--o");
    expect(dir).toBe(path.join(tmp, ".pulumi", "locks", "organization", "proj", "ns--o"));
    fs.mkdirSync(dir, { recursive: true });
    const write = (id: string, pid: number) => fs.writeFileSync(path.join(dir, `${id}.json`),
      JSON.stringify({ pid, username: "bmw", hostname: os.hostname(), timestamp: new Date().toISOString() }));
    write("dead", 111);
    write("live", 222);
    expect((await readLocks(store, "proj", "ns--o")).map((l) => l.pid).sort()).toEqual([111, 222]);
    const sweep = await clearStaleLocks(store, "proj", "ns--o", { isPulumiAlive: (pid) => pid === 222 });
    expect(sweep.cleared.map((a) => a.lock.pid)).toEqual([111]);
    expect(sweep.held.map((a) => a.lock.pid)).toEqual([222]);
    expect(fs.readdirSync(dir)).toEqual(["live.json"]);
    expect(await readLocks(store, "proj", "absent")).toEqual([]);
  });

  it("only file:// backends have a state directory; file:// and postgres:// have a store of blobs", () => {
    expect(stateDirOf("file:///var/lib/bmw/state")).toBe("/var/lib/bmw/state");
    expect(stateDirOf("s3://bucket/prefix")).toBeUndefined();
    expect(stateStoreOf("file:///var/lib/bmw/state")?.location).toBe("/var/lib/bmw/state");
    expect(stateStoreOf("postgres://bmw:secret@db:5432/pulumi?sslmode=disable")?.location).toBe("postgres://db:5432/pulumi (table pulumi_state)");
    expect(() => stateStoreOf("postgres://db/pulumi?table=x;drop")).toThrow(/plain identifier/);
    expect(stateStoreOf("s3://bucket/prefix")).toBeUndefined();
  });
});

describe("resolvePendingOperations", () => {
  it("removes every pending operation through export/import and reports them", async () => {
    const deployment = {
      manifest: {}, resources: [{ urn: "urn:a", type: "pulumi-nodejs:dynamic:Resource" }],
      pending_operations: [
        { resource: { urn: "urn:b", type: "pulumi-nodejs:dynamic:Resource" }, type: "creating" },
        { resource: { urn: "urn:a", type: "pulumi-nodejs:dynamic:Resource" }, type: "updating" },
      ],
    };
    const imported: unknown[] = [];
    const store = {
      exportStack: async () => ({ version: 3, deployment }),
      importStack: async (s: { version: number; deployment: unknown }) => {
        imported.push(s);
      },
    };
    expect(pendingOperationsOf(deployment).map((p) => `${p.type} ${p.urn}`)).toEqual(["creating urn:b", "updating urn:a"]);
    const cleared = await resolvePendingOperations(store);
    expect(cleared.map((p) => p.type)).toEqual(["creating", "updating"]);
    expect(imported).toEqual([{ version: 3, deployment: { manifest: {}, resources: deployment.resources } }]);
  });

  it("does not touch a stack without pending operations", async () => {
    let imports = 0;
    const cleared = await resolvePendingOperations({
      exportStack: async () => ({ version: 3, deployment: { resources: [] } }),
      importStack: async () => {
        imports++;
      },
    });
    expect(cleared).toEqual([]);
    expect(imports).toBe(0);
  });
});

describe("storedPendingOperations", () => {
  const blobs = (files: Record<string, string | Buffer>) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-pending-"));
    for (const [key, data] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dir, key)), { recursive: true });
      fs.writeFileSync(path.join(dir, key), data);
    }
    return stateStoreOf(`file://${dir}`)!;
  };
  const checkpoint = (latest: unknown) => JSON.stringify({ version: 3, checkpoint: { stack: "organization/proj/ns--o", latest } });
  const key = ".pulumi/stacks/proj/ns--o.json";
  const pending = [{ resource: { urn: "urn:b", type: "pulumi-nodejs:dynamic:Resource" }, type: "creating" }];

  it("reads the latest checkpoint's pending operations without pulumi: none, some, gzipped, a stack never updated", async () => {
    expect(await storedPendingOperations(blobs({ [key]: checkpoint({ manifest: {}, resources: [] }) }), "proj", "ns--o")).toEqual([]);
    expect(await storedPendingOperations(blobs({ [key]: checkpoint({ resources: [], pending_operations: pending }) }), "proj", "ns--o"))
      .toEqual([{ type: "creating", urn: "urn:b", resourceType: "pulumi-nodejs:dynamic:Resource" }]);
    expect(await storedPendingOperations(blobs({ [`${key}.gz`]: zlib.gzipSync(checkpoint({ pending_operations: pending })) }), "proj", "ns--o"))
      .toHaveLength(1);
    expect(await storedPendingOperations(blobs({ [key]: checkpoint(null) }), "proj", "ns--o")).toEqual([]);
  });

  it("cannot tell (so the caller asks pulumi) without exactly one readable checkpoint", async () => {
    const cases: Record<string, string | Buffer>[] = [{}, { [key]: "{not json" }, { [key]: JSON.stringify({ version: 3 }) }, { [`${key}.gz`]: "not gzip" },
      { [key]: checkpoint({ pending_operations: "creating" }) }, { [key]: checkpoint([]) },
      { [key]: checkpoint({}), [`${key}.gz`]: zlib.gzipSync(checkpoint({})) }];
    for (const files of cases) {
      expect(await storedPendingOperations(blobs(files), "proj", "ns--o")).toBeUndefined();
    }
  });
});
