// Invariant I1 in the planner (issue 15): a BMI that backs a Binding or Ready slot, or whose host has an
// Agent bound, leaves the declared set only when the slot's retirement is persisted (Unbinding, Deleting,
// Failed in the order's current status) or the order is being deleted. A final, independent check in
// plan() refuses any other plan. The property runs BMW_PROPERTY_RUNS generated snapshots (default 1000)
// from BMW_PROPERTY_SEED (default fixed, so a failure replays).
import fc from "fast-check";
import { plan } from "../../planner";
import { hostSafetyViolations } from "../../planner/hostSafety";
import { MANAGEMENT_STATE_ANNOTATION } from "../../planner/names";
import { PHASES } from "../../planner/phases";
import type { ObservedAgent, ObservedBmi, Plan, Snapshot, WorkerStatus } from "../../planner/types";
import {
  agentFor, bmiFor, bmRequest, boundAgent, conditionOf, entry, iso, MIN, ORDER, planOf, snap, statusOf,
} from "./builders";

const RUNS = Number(process.env.BMW_PROPERTY_RUNS ?? 1000);
const SEED = Number(process.env.BMW_PROPERTY_SEED ?? 20261201);

const BMI_STATES: ObservedBmi["state"][] = ["Pending", "Provisioning", "Starting", "Running", "Stopping", "Stopped", "Failed", "Deleting", "Unknown"];
const AGENT_STATES = ["known-unbound", "binding", "installing", "added-to-existing-cluster", "unbinding-pending-user-action", "error"];

function declares(p: Plan, e: WorkerStatus): boolean {
  return p.workers.some((w) => w.bmi.name === e.bareMetalInstance?.name || (e.bareMetalInstance?.id !== undefined && w.bmi.adoptId === e.bareMetalInstance.id));
}

describe("the final host-safety check", () => {
  test("a bound worker whose BMI could not be declared (no id, unlisted, create inputs unknown) refuses the plan", () => {
    const ready = entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-2 * 60 * MIN), bareMetalInstance: { name: `${ORDER}-b-w1` } });
    const p = planOf({
      nodeRequests: [bmRequest("compute", 1)], workers: [ready], bmis: [], ignition: undefined,
      agents: [boundAgent("w1", "w1", "added-to-existing-cluster")],
    });
    expect(p.paused?.reason).toBe("HostSafetyRefused");
    expect(p.workers).toEqual([expect.objectContaining({ slot: "w1", bmi: expect.objectContaining({ name: `${ORDER}-b-w1` }) })]);
    expect(p.workers[0].binding?.agentName).toBe("agent-w1");
    expect(p.status.workers).toEqual([ready]);
    expect(p.fence).toEqual([]);
    expect(p.events).toEqual([expect.objectContaining({ type: "Warning", reason: "HostSafetyRefused", key: "HostSafetyRefused/w1" })]);
    expect(conditionOf(p, "HostSafetyRefused")).toMatchObject({ status: "True", reason: "HostSafetyRefused" });
    expect(conditionOf(p, "HostSafetyRefused")?.message).toContain(`worker w1 (Ready, BareMetalInstance ${ORDER}-b-w1)`);
  });

  test("the same world with create inputs known declares the BMI again under its name; the condition is False", () => {
    const ready = entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-2 * 60 * MIN), bareMetalInstance: { name: `${ORDER}-b-w1` } });
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [ready], bmis: [], agents: [boundAgent("w1", "w1", "added-to-existing-cluster")] });
    expect(p.paused).toBeUndefined();
    expect(p.workers.map((w) => w.bmi.name)).toEqual([`${ORDER}-b-w1`]);
    expect(conditionOf(p, "HostSafetyRefused")).toMatchObject({ status: "False", reason: "HostSafe" });
  });

  test("the check itself: a plan missing a Ready worker's BMI violates; a persisted retirement or deletion does not", () => {
    const ready = entry("w1", { phase: "Ready" });
    const s = snap({ nodeRequests: [bmRequest("compute", 1)], workers: [ready], bmis: [bmiFor("w1")] });
    const empty = { ...plan(s), workers: [] };
    expect(hostSafetyViolations(s, empty).map((v) => v.entry.name)).toEqual(["w1"]);
    for (const phase of ["Unbinding", "Deleting", "Failed"] as const) {
      expect(hostSafetyViolations(snap({ workers: [{ ...ready, phase }], bmis: [bmiFor("w1")] }), empty)).toEqual([]);
    }
    expect(hostSafetyViolations(snap({ workers: [ready], bmis: [bmiFor("w1")], deletionTimestamp: iso(0) }), empty)).toEqual([]);
    expect(hostSafetyViolations(snap({ workers: [ready], bmis: [], goneBmiIds: ["id-w1"] }), empty)).toEqual([]);
  });

  test("a WaitingForAgent slot whose host already has an Agent bound is protected too", () => {
    const waiting = entry("w1", { phase: "WaitingForAgent" });
    const s = snap({ workers: [waiting], bmis: [bmiFor("w1")], agents: [agentFor("w1", { clusterDeploymentName: { name: ORDER, namespace: "x" } })] });
    expect(hostSafetyViolations(s, { ...plan(s), workers: [] }).map((v) => v.entry.name)).toEqual(["w1"]);
  });
});

// ---- the property ---------------------------------------------------------------------------------

interface Slot {
  phase: WorkerStatus["phase"];
  nodeSet: string;
  hasId: boolean;
  attempted: boolean;
  attemptCount: number;
  startedMin: number;
  retryMin: number;
  bmi: "listed" | "gone" | "unlisted";
  state: ObservedBmi["state"];
  macs: boolean;
  deleting: boolean;
  spec: boolean;
  agent: "none" | "bound" | "unbound" | "unreadable";
  agentState: string;
}

const slotArb: fc.Arbitrary<Slot> = fc.record({
  phase: fc.constantFrom(...PHASES),
  nodeSet: fc.constantFrom("compute", "gpu", "old"),
  hasId: fc.boolean(),
  attempted: fc.boolean(),
  attemptCount: fc.integer({ min: 0, max: 6 }),
  startedMin: fc.integer({ min: 0, max: 90 }),
  retryMin: fc.integer({ min: -10, max: 10 }),
  bmi: fc.constantFrom("listed", "gone", "unlisted"),
  state: fc.constantFrom(...BMI_STATES),
  macs: fc.boolean(),
  deleting: fc.boolean(),
  spec: fc.boolean(),
  agent: fc.constantFrom("none", "bound", "unbound", "unreadable"),
  agentState: fc.constantFrom(...AGENT_STATES),
});

const worldArb = fc.record({
  slots: fc.array(slotArb, { maxLength: 7 }),
  requests: fc.array(fc.record({ nodeSet: fc.constantFrom("compute", "gpu"), n: fc.integer({ min: -1, max: 5 }), type: fc.constantFrom("bm.small", "bm.gpu", "bm.none") }), { maxLength: 3 }),
  orphans: fc.integer({ min: 0, max: 2 }),
  deleting: fc.boolean(),
  unmanaged: fc.boolean(),
  listFails: fc.boolean(),
  ignition: fc.boolean(),
  clusterDeployment: fc.boolean(),
  staleInfraEnv: fc.boolean(),
  sgEdited: fc.boolean(),
});

type World = typeof worldArb extends fc.Arbitrary<infer T> ? T : never;

function build(world: World): Snapshot {
  const workers: WorkerStatus[] = [];
  const bmis: ObservedBmi[] = [];
  const agents: ObservedAgent[] = [];
  const gone: string[] = [];
  world.slots.forEach((s, i) => {
    const name = `w${i}`;
    const id = s.hasId ? `id-${name}` : undefined;
    workers.push(entry(name, {
      phase: s.phase, nodeSet: s.nodeSet, instanceType: s.nodeSet === "gpu" ? "bm.gpu" : "bm.small",
      bareMetalInstance: { name: `${ORDER}-b-${name}`, ...(id ? { id } : {}) },
      bmiCreateState: s.attempted || s.hasId ? "Attempted" : "Reserved", attemptCount: s.attemptCount,
      attemptStartedAt: iso(-s.startedMin * MIN), ...(s.phase === "Failed" ? { nextRetryTime: iso(s.retryMin * MIN) } : {}),
      ...(s.phase === "Ready" ? { readySince: iso(-s.startedMin * MIN) } : {}),
    }));
    if (s.bmi === "listed" && (s.hasId || s.attempted)) {
      bmis.push(bmiFor(name, {
        state: s.state, deleting: s.deleting, ...(s.macs ? {} : { macs: [] }),
        ...(s.spec ? { spec: { catalogItem: "cat-old", instanceType: "bm.small", networkAttachment: { subnet: "subnet-1", securityGroups: ["sg-1"], interface: "eth1" } } } : {}),
      }));
    } else if (s.bmi === "gone" && id) {
      gone.push(id);
    }
    if (s.agent === "bound") agents.push(boundAgent(name, name, s.agentState));
    else if (s.agent === "unbound") agents.push(agentFor(name, { state: s.agentState }));
    else if (s.agent === "unreadable") agents.push(agentFor(name, { macs: undefined }));
  });
  for (let i = 0; i < world.orphans; i++) bmis.push(bmiFor(`orphan${i}`));
  return snap({
    nodeRequests: world.requests.map((r) => bmRequest(r.nodeSet, r.n, r.type)),
    workers,
    bmis: world.listFails ? undefined : bmis,
    goneBmiIds: world.listFails ? [] : gone,
    agents,
    ...(world.deleting ? { deletionTimestamp: iso(-MIN) } : {}),
    ...(world.unmanaged ? { annotations: { [MANAGEMENT_STATE_ANNOTATION]: "Unmanaged" } } : {}),
    ...(world.ignition ? {} : { ignition: undefined }),
    ...(world.clusterDeployment ? {} : { clusterDeployment: undefined }),
    ...(world.staleInfraEnv ? { recordedInfraEnvUid: "ie-0" } : {}),
    ...(world.sgEdited ? { orderPatch: (o) => { o.spec.networkAttachment = { subnetRef: "subnet-1", securityGroupRefs: ["sg-9"] }; } } : {}),
    fulfillmentErrors: world.listFails ? 1 : 0,
  });
}

describe("property: no bound worker's BMI is released without a persisted retirement", () => {
  test(`${RUNS} generated snapshots (seed ${SEED})`, () => {
    let refused = 0;
    fc.assert(fc.property(worldArb, (world) => {
      const s = build(world);
      const p = plan(s);
      const gone = new Set(s.goneBmiIds ?? []);
      for (const e of s.order.status?.workers ?? []) {
        const confirmedGone = e.bareMetalInstance?.id !== undefined && gone.has(e.bareMetalInstance.id);
        // I1: every previous Binding/Ready entry whose BMI may exist is still declared, unless the order is deleting.
        const mayExist = Boolean(e.bareMetalInstance?.id) || e.bmiCreateState === "Attempted";
        if ((e.phase === "Binding" || e.phase === "Ready") && mayExist && !confirmedGone && !world.deleting) {
          expect({ slot: e.name, declared: declares(p, e) }).toEqual({ slot: e.name, declared: true });
        }
        // I3: an entry with a recorded id leaves the status only once its BMI is confirmed gone.
        if (e.bareMetalInstance?.id && !confirmedGone) expect(statusOf(p, e.name)).toBeDefined();
      }
      // The planner itself keeps I1 for every entry with a recorded id: the final check only ever has
      // to step in for entries whose BMI it cannot name by id and cannot declare without create inputs.
      if (p.paused?.reason === "HostSafetyRefused") {
        refused++;
        expect(s.order.status?.workers?.some((e) => !e.bareMetalInstance?.id && (e.phase === "Binding" || e.phase === "Ready" || e.phase === "WaitingForAgent" || e.phase === "Provisioning"))).toBe(true);
      }
    }), { numRuns: RUNS, seed: SEED });
    // The generator reaches worlds where the final check has to step in.
    if (RUNS >= 1000) expect(refused).toBeGreaterThan(0);
  });
});
