// The simulator's store on disk: after any sequence of commits (creates, updates, deletes, lifecycle moves
// that change objects in place, host allocations, boots), a store loaded from the state directory holds
// exactly what the running one holds, whether the journal was folded into a snapshot or not.
// Size: BMW_STORE_RUNS sequences (default 40) of up to 30 steps, seeded by BMW_PROPERTY_SEED.
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import { FulfillmentEngine } from "../../lab/fulfillment/engine";
import { KINDS, Store } from "../../lab/fulfillment/store";
import type { Subject } from "../../lab/fulfillment/auth";
import { tempDir, testSeed, workerBmi } from "./helpers";

const SEED = Number(process.env.BMW_PROPERTY_SEED ?? (Date.now() % 2_147_483_647));
const RUNS = Number(process.env.BMW_STORE_RUNS ?? 40);
const ADMIN: Subject = { admin: true, tenants: [] };

/** Everything a store holds, in the persisted form, ordered. */
function contents(store: Store): unknown {
  const rows = Object.fromEntries(KINDS.map((k) => {
    const t = store.typeOf(k);
    return [k, store.rows(k).map((r) => ({ obj: t.toObject(t.fromObject(r.obj as object), { longs: String, enums: String, bytes: String }), sim: r.sim }))
      .sort((a, b) => (a.obj as { id: string }).id.localeCompare((b.obj as { id: string }).id))];
  }));
  return JSON.parse(JSON.stringify({ rows, hosts: store.hosts, boots: store.boots, creates: store.createsWithoutSystemTenant }));
}

function reloaded(dir: string): Store {
  const store = new Store(dir);
  store.load();
  return store;
}

type Step =
  | { op: "create"; n: number; tenantless: boolean }
  | { op: "label"; pick: number; value: string }
  | { op: "delete"; pick: number }
  | { op: "time"; ms: number }
  | { op: "restart" };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant("create" as const), n: fc.nat(1000), tenantless: fc.boolean() }),
  fc.record({ op: fc.constant("label" as const), pick: fc.nat(), value: fc.constantFrom("a", "b", "c") }),
  fc.record({ op: fc.constant("delete" as const), pick: fc.nat() }),
  fc.record({ op: fc.constant("time" as const), ms: fc.integer({ min: 50, max: 400 }) }),
  fc.record({ op: fc.constant("restart" as const) }),
);

it(`a store loaded from disk holds what the running one held, after any commits (seed ${SEED}, ${RUNS} runs)`, () => {
  let compactions = 0;
  let replayed = 0;
  fc.assert(fc.property(fc.array(step, { maxLength: 30 }), fc.boolean(), (steps, smallJournal) => {
    const dir = tempDir("store");
    let clock = 1_800_000_000_000;
    // A small journal limit folds it into snapshots along the way; the default one never does here.
    const open = () => new FulfillmentEngine({ seed: testSeed({ timings: { provisionMs: 150, deleteMs: 300 } }), stateDir: dir,
      now: () => clock, ...(smallJournal ? { journalCompactBytes: 4096 } : {}) });
    let engine = open();
    try {
      for (const s of steps) {
        const bmis = engine.store.rows("BareMetalInstances").filter((r) => !r.obj.metadata?.deletion_timestamp);
        const picked = bmis.length ? bmis[("pick" in s ? s.pick : 0) % bmis.length].obj : undefined;
        if (s.op === "create") {
          const bmi = workerBmi(`w-${s.n}`);
          if (!s.tenantless) bmi.metadata = { ...bmi.metadata, tenant: "system" };
          try {
            engine.create("BareMetalInstances", ADMIN, bmi, false);
          } catch {
            // a name already taken: refused, nothing written
          }
        } else if (s.op === "label" && picked) {
          engine.update("BareMetalInstances", ADMIN, { ...picked, metadata: { ...picked.metadata, labels: { ...picked.metadata?.labels, step: s.value } } },
            ["metadata.labels"], false);
        } else if (s.op === "delete" && picked) {
          engine.delete("BareMetalInstances", ADMIN, picked.id);
        } else if (s.op === "time") {
          clock += s.ms;
          engine.tick();
        } else if (s.op === "restart") {
          const before = contents(engine.store);
          engine.stop();
          engine.store.close(); // a crash: no snapshot at stop
          engine = open();
          expect(contents(engine.store)).toEqual(before);
        }
        const journal = path.join(dir, "journal.jsonl");
        if (fs.existsSync(journal) && fs.statSync(journal).size > 0) replayed++;
        else compactions++;
        expect(contents(reloaded(dir))).toEqual(contents(engine.store));
      }
    } finally {
      engine.stop();
      engine.store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }), { seed: SEED, numRuns: RUNS });
  // Both ways of reading were exercised: a journal to replay, and a snapshot alone.
  expect(replayed).toBeGreaterThan(RUNS);
  expect(compactions).toBeGreaterThan(0);
});

it("writes only what a commit changed: a journal line per commit, not the whole state", () => {
  const dir = tempDir("store-lines");
  const engine = new FulfillmentEngine({ seed: testSeed(), stateDir: dir });
  try {
    for (let i = 0; i < 20; i++) engine.create("BareMetalInstances", ADMIN, { ...workerBmi(`line-${i}`), metadata: { ...workerBmi(`line-${i}`).metadata, tenant: "system" } }, false);
    const lines = fs.readFileSync(path.join(dir, "journal.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { rows?: unknown[] });
    expect(lines).toHaveLength(20);
    expect(lines.every((l) => l.rows?.length === 1)).toBe(true);
  } finally {
    engine.stop();
    engine.store.close();
  }
});

it("drops a last journal line cut short by a crash, and refuses a damaged one before it", () => {
  const dir = tempDir("store-torn");
  const engine = new FulfillmentEngine({ seed: testSeed(), stateDir: dir });
  const kept = engine.create("BareMetalInstances", ADMIN, { ...workerBmi("torn-1"), metadata: { ...workerBmi("torn-1").metadata, tenant: "system" } }, false);
  engine.stop();
  engine.store.close();
  const journal = path.join(dir, "journal.jsonl");
  const good = fs.readFileSync(journal, "utf8");
  fs.appendFileSync(journal, '{"seq":99,"rows":[{"kind":"BareMetalInst');
  expect(reloaded(dir).get("BareMetalInstances", kept.id)?.obj.metadata?.name).toBe("torn-1");
  fs.writeFileSync(journal, `{"seq":98,"rows":[{"ki\n${good}`);
  expect(() => reloaded(dir)).toThrow(/line 1 is not a journal entry/);
});
