// Settled orders as a property (fast-check, model-based): across random interleavings of order edits,
// BMI changes, pin changes, watch events, passes, clock steps and reconciles that start and finish in
// any order, a settled check answers "settled" only when everything it promises holds: the listed
// version, the pass's BMI listing and the pin equal what the recording reconcile observed; no watch event
// came after that reconcile started; and neither its resync nor its due time has come.
// Size: BMW_SETTLED_RUNS sequences (default 300) of up to 40 steps, seeded by BMW_PROPERTY_SEED.
import fc from "fast-check";
import { SettledOrders, type SettleToken } from "../../controller/settledOrders";
import type { Plan } from "../../planner/types";

const SEED = Number(process.env.BMW_PROPERTY_SEED ?? (Date.now() % 2_147_483_647));
const RUNS = Number(process.env.BMW_SETTLED_RUNS ?? 300);
const RESYNC = 10_000;
const ref = { namespace: "ns", name: "o" };
const plan: Plan = { nodePoolReplicas: {}, workers: [], fence: [], events: [],
  status: { workers: [], desiredWorkers: 0, currentWorkers: 0, readyWorkers: 0, conditions: [] } };

type Step =
  | { kind: "edit" } | { kind: "editUnseen" } | { kind: "bmis" } | { kind: "pin" } | { kind: "event" } | { kind: "pass" }
  | { kind: "clock"; ms: number } | { kind: "start" } | { kind: "finish"; which: number; dueIn?: number } | { kind: "check" };

// Changes are rarer than reconciles and checks, so that many sequences reach a settled answer.
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant<Step>({ kind: "edit" }), weight: 1 },
  { arbitrary: fc.constant<Step>({ kind: "editUnseen" }), weight: 1 },
  { arbitrary: fc.constant<Step>({ kind: "bmis" }), weight: 1 },
  { arbitrary: fc.constant<Step>({ kind: "pin" }), weight: 1 },
  { arbitrary: fc.constant<Step>({ kind: "event" }), weight: 1 },
  { arbitrary: fc.constant<Step>({ kind: "pass" }), weight: 3 },
  { arbitrary: fc.integer({ min: 1, max: 3_000 }).map<Step>((ms) => ({ kind: "clock", ms })), weight: 2 },
  { arbitrary: fc.constant<Step>({ kind: "start" }), weight: 4 },
  { arbitrary: fc.record({ which: fc.nat(3), dueIn: fc.option(fc.integer({ min: 1, max: 20_000 }), { nil: undefined }) })
    .map<Step>((r) => ({ kind: "finish", ...r })), weight: 4 },
  { arbitrary: fc.constant<Step>({ kind: "check" }), weight: 6 },
);

interface Observed {
  token: SettleToken;
  rv: number;
  digest: number;
  pin: number;
  /** Sequence number of the last watch event when the reconcile started. */
  eventsAtStart: number;
}

describe("settled orders (property)", () => {
  it(`never answers settled for an order whose world moved (seed ${SEED}, ${RUNS} runs)`, async () => {
    let answeredSettled = 0;
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 40 }), async (steps) => {
      const w = { now: 0, rv: 1, digest: 1, pin: 0, events: 0 };
      let passListing: number | undefined;
      const s = new SettledOrders({
        listBmiDigests: async () => {
          passListing = w.digest;
          return new Map([["uid", `d${w.digest}`]]);
        },
        pinOf: async () => `p${w.pin}`, resyncMs: RESYNC, now: () => w.now,
      });
      const running: Observed[] = [];
      let recorded: (Observed & { at: number; dueAt?: number }) | undefined;
      for (const st of steps) {
        switch (st.kind) {
          case "edit": w.rv++; w.events++; s.invalidate(ref); break; // the ClusterOrder's own watch event
          case "editUnseen": w.rv++; break; // an edit whose watch event was lost: only the tick's listing shows it
          case "bmis": w.digest++; break; // not watched: only the pass listing shows it
          case "pin": w.pin++; break;
          case "event": w.events++; s.invalidate(ref); break;
          case "pass": s.beginPass(); passListing = undefined; break;
          case "clock": w.now += st.ms; break;
          case "start": running.push({ token: s.begin(ref), rv: w.rv, digest: w.digest, pin: w.pin, eventsAtStart: w.events }); recorded = undefined; break;
          case "finish": {
            const r = running.splice(st.which % Math.max(1, running.length), 1)[0];
            if (!r) break;
            const ok = s.record(r.token, { resourceVersion: String(r.rv), bmiDigest: `d${r.digest}`, pin: `p${r.pin}`, plan,
              ...(st.dueIn !== undefined ? { dueAt: w.now + st.dueIn } : {}) });
            // A reconcile that started before a watch event may not settle the order.
            expect(ok).toBe(r.eventsAtStart === w.events);
            if (ok) recorded = { ...r, at: w.now, ...(st.dueIn !== undefined ? { dueAt: w.now + st.dueIn } : {}) };
            break;
          }
          case "check": {
            const c = await s.check(ref, { metadata: { ...ref, uid: "uid", resourceVersion: String(w.rv) } });
            if (!("plan" in c)) break;
            answeredSettled++;
            expect(recorded).toBeDefined();
            const r = recorded!;
            expect(r.eventsAtStart).toBe(w.events);
            expect(String(r.rv)).toBe(String(w.rv));
            expect(passListing).toBe(r.digest);
            expect(r.pin).toBe(w.pin);
            expect(w.now).toBeLessThan(r.at + RESYNC);
            if (r.dueAt !== undefined) expect(w.now).toBeLessThan(r.dueAt);
            break;
          }
        }
      }
    }), { seed: SEED, numRuns: RUNS });
    // The sequences reach the interesting case, not only misses.
    expect(answeredSettled).toBeGreaterThan(RUNS / 10);
  });
});
