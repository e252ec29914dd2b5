// Settled records in the state backend's store (controller/settledStore.ts), on the file backend: what is
// saved is loaded by a later process, a removed record is gone, and blobs that are not records are left out.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseStoredSettled, StateStoreSettled, type StoredSettled } from "../../controller/settledStore";
import { FileStateStore } from "../../stack/stateStore";

const record = (key: string, over: Partial<StoredSettled> = {}): StoredSettled => ({
  key, uid: `uid-${key}`, resourceVersion: "10", bmiDigest: "b", hubDigest: "h", pin: "", until: 2_000_000_000_000, context: "c",
  unwatched: { keys: { namespace: key.split("/")[0], name: key.split("/")[1], clusterId: "c1" }, digest: "u" },
  gauges: { tenant: "t", desired: 4, ready: 4, failed: 0 }, ...over,
});

describe("settled records in the state store", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-settled-"));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("keeps one blob per order beside the checkpoints, loaded by another process's store", async () => {
    const a = new StateStoreSettled(new FileStateStore(dir));
    await a.save(record("ns1/o1"));
    await a.save(record("ns1/o2", { gauges: undefined }));
    await a.save(record("ns2/o1"));
    await a.save(record("ns1/o1", { resourceVersion: "11" })); // replaced whole
    expect(fs.existsSync(path.join(dir, ".baremetal-workers", "settled", "ns1", "o1.json"))).toBe(true);
    const loaded = await new StateStoreSettled(new FileStateStore(dir)).load();
    const byKey = new Map(loaded.map((r) => [r.key, r]));
    expect([...byKey.keys()].sort()).toEqual(["ns1/o1", "ns1/o2", "ns2/o1"]);
    expect(byKey.get("ns1/o1")).toEqual(record("ns1/o1", { resourceVersion: "11" }));
    expect(byKey.get("ns1/o2")).toEqual(record("ns1/o2", { gauges: undefined }));
    await a.remove("ns1/o1");
    expect((await a.load()).map((r) => r.key).sort()).toEqual(["ns1/o2", "ns2/o1"]);
  });

  it("loads nothing from a backend without records, and skips blobs that are not records", async () => {
    const s = new StateStoreSettled(new FileStateStore(dir));
    expect(await s.load()).toEqual([]);
    await s.save(record("ns/good"));
    const nsDir = path.join(dir, ".baremetal-workers", "settled", "ns");
    fs.writeFileSync(path.join(nsDir, "torn.json"), '{"key":"ns/torn","uid":');
    fs.writeFileSync(path.join(nsDir, "other.json"), JSON.stringify({ ...record("ns/other"), until: "soon" }));
    fs.writeFileSync(path.join(nsDir, "notes.txt"), "not a record");
    expect((await s.load()).map((r) => r.key)).toEqual(["ns/good"]);
  });

  it("keeps a record with no end (no refresh, no requeue) and its unwatched keys as they were", () => {
    const r = record("ns/a", { until: null, unwatched: { keys: { namespace: "ns", name: "a", clusterReference: { namespace: "ns", hostedClusterName: "hc" } }, digest: "u" } });
    expect(parseStoredSettled(JSON.stringify(r))).toEqual(r);
  });

  it.each<[string, unknown]>([
    ["a key that is not namespace/name", { ...record("x"), key: "no-slash" }],
    ["a missing digest", { ...record("ns/a"), hubDigest: undefined }],
    ["gauges of the wrong shape", { ...record("ns/a"), gauges: { tenant: "t", desired: "4" } }],
    ["no unwatched inputs (a record of the version before)", { ...record("ns/a"), unwatched: undefined }],
    ["unwatched keys of the wrong shape", { ...record("ns/a"), unwatched: { keys: { namespace: "ns", name: "a", clusterReference: { namespace: 1 } }, digest: "u" } }],
    ["an unwatched digest that is not text", { ...record("ns/a"), unwatched: { keys: { namespace: "ns", name: "a" }, digest: 7 } }],
    ["not an object", "text"],
  ])("parseStoredSettled refuses %s", (_what, value) => {
    expect(parseStoredSettled(JSON.stringify(value))).toBeUndefined();
  });
});
