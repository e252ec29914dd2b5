// The skip shortcut (issue 15, finding 13): the fingerprint covers whether what the plan declares was
// observed, so a hand-deleted InfraEnv or BMI makes the loop run `up` (which recreates it) instead of
// skipping until the next periodic refresh, while a steady state still hashes the same every time.
import fc from "fast-check";
import { fingerprint } from "../../planner";
import { presenceOf } from "../../planner/presence";
import {
  bmiFor, bmRequest, boundAgent, entry, iso, MIN, planOf, snap, SnapOptions,
} from "./builders";

const readyEntry = (name: string) => entry(name, { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) });

function readyWorld(names: string[], o: SnapOptions = {}): SnapOptions {
  return {
    nodeRequests: [bmRequest("compute", names.length)],
    workers: names.map(readyEntry),
    bmis: names.map((x) => bmiFor(x)),
    agents: names.map((x) => boundAgent(x, x, "added-to-existing-cluster")),
    nodePools: [{ name: "np-compute", namespace: "tenant-a", nodeSet: "compute", replicas: names.length, statusReplicas: names.length }],
    ...o,
  };
}

const fp = (o: SnapOptions) => fingerprint(planOf(o));
const R = ["r1", "r2", "r3"];

describe("fingerprint covers presence (finding 13)", () => {
  test("steady state: the plan observed after a successful update hashes equal to the next unchanged observation", () => {
    const afterUpdate = planOf(readyWorld(R));
    const next = planOf(readyWorld(R, { now: new Date(Date.parse(iso(10 * MIN))) }));
    expect(afterUpdate.presence).toEqual({ infraEnv: true, bmiAbsent: [], agentAbsent: [] });
    expect(fingerprint(next)).toBe(fingerprint(afterUpdate));
    // Everything present hashes as a plan without presence does: no extra `up` per order on upgrade.
    expect(fingerprint({ ...afterUpdate, presence: undefined })).toBe(fingerprint(afterUpdate));
  });

  test("an InfraEnv deleted by hand changes the fingerprint; observed again, it hashes as before", () => {
    const base = fp(readyWorld(R));
    const deleted = planOf(readyWorld(R, { infraEnv: undefined, ignition: undefined }));
    expect(deleted.infraEnv?.name).toBe("co1-infraenv"); // still declared: `up` recreates it
    expect(deleted.presence?.infraEnv).toBe(false);
    expect(fingerprint(deleted)).not.toBe(base);
    expect(fp(readyWorld(R))).toBe(base);
  });

  test("a BMI deleted by hand (not listed) changes the fingerprint", () => {
    const base = fp(readyWorld(R));
    const missing = planOf(readyWorld(R, { bmis: [bmiFor("r1"), bmiFor("r3")] }));
    expect(fingerprint(missing)).not.toBe(base);
  });

  test("a declared binding whose Agent is not observed is an absence", () => {
    const p = planOf(readyWorld(R));
    const presence = presenceOf(snap(readyWorld(R, { agents: [boundAgent("r1", "r1", "added-to-existing-cluster")] })), p);
    expect(presence.agentAbsent).toEqual(["r2", "r3"]);
    expect(fingerprint({ ...p, presence })).not.toBe(fingerprint(p));
  });

  test("only declared workers' absences count (the program may declare fewer workers than planned)", () => {
    const full = planOf(readyWorld(R));
    // Left out of the List, not confirmed gone (I3): r3 stays declared, and its absence counts.
    const missing = planOf(readyWorld(R, { bmis: [bmiFor("r1"), bmiFor("r2")], goneBmiIds: [] }));
    const without = (p: typeof full) => fingerprint({ ...p, workers: p.workers.filter((w) => w.slot !== "r3") });
    expect(missing.presence?.bmiAbsent).toEqual(["r3"]);
    expect(without(missing)).toBe(without(full));
  });

  test("property: the fingerprint equals the steady state's exactly when every declared object was observed", () => {
    const base = fp(readyWorld(R));
    fc.assert(fc.property(fc.boolean(), fc.subarray(R), (infraEnvPresent, listed) => {
      const world = readyWorld(R, {
        bmis: listed.map((x) => bmiFor(x)),
        ...(infraEnvPresent ? {} : { infraEnv: undefined, ignition: undefined }),
      });
      const same = fp(world) === base;
      expect(same).toBe(infraEnvPresent && listed.length === R.length);
    }), { numRuns: 64 });
  });
});
