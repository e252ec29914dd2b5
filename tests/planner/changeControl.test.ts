// Change control by kind (issue 17, point 2): every planned BMI create and delete has a kind; kinds the
// policy names wait for an approval of exactly that plan (its fingerprint); a cap bounds creates in flight.
import { APPROVAL_REQUIRED_ANNOTATION, APPROVED_PLAN_ANNOTATION, changesFingerprint, PENDING_PLAN_ANNOTATION } from "../../planner/changeControl";
import { incarnationNames } from "../../io/incarnationNames";
import type { Plan } from "../../planner/types";
import { bmiFor, bmRequest, boundAgent, conditionOf, entry, iso, MIN, ORDER, planOf, SEC, type SnapOptions, statusOf, UID } from "./builders";

const ready = entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) });
const unbinding = { ...ready, phase: "Unbinding" as const, attemptStartedAt: iso(-1 * MIN) };
/** CAPI released w1's Agent; its Unbinding is persisted: this pass deletes its BMI. */
const scaleDown: SnapOptions = {
  nodeRequests: [bmRequest("compute", 0)], workers: [unbinding], bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "unbinding-pending-user-action")],
};
const kinds = (p: Plan) => (p.changes ?? p.approval?.changes ?? []).map((c) => `${c.op} ${c.kind} ${c.slot}`);

describe("the kind of each planned change", () => {
  it("names a new slot's create, a failed slot's delete and retry, a retired unbound slot, a CAPI scale-down", () => {
    expect(kinds(planOf({ nodeRequests: [bmRequest("compute", 1)] }))).toEqual(["create create n1"]);
    const failed = entry("w1", { phase: "Failed", attemptCount: 1, nextRetryTime: iso(-1 * SEC), bareMetalInstance: { name: `${ORDER}-w1`, id: "id-w1" } });
    expect(kinds(planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [failed], bmis: [bmiFor("w1", { state: "Failed" })] }))).toEqual(["delete retry w1"]);
    const gone = { ...failed, bareMetalInstance: { name: `${ORDER}-w1` }, bmiCreateState: undefined };
    expect(kinds(planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [gone], bmis: [] }))).toEqual(["create retry w1"]);
    const retired = entry("w1", { phase: "Deleting", attemptStartedAt: iso(-SEC) });
    expect(kinds(planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [retired], bmis: [bmiFor("w1")] }))).toEqual(["delete retire w1"]);
    expect(kinds(planOf({ ...scaleDown, configPatch: { approvalRequired: [] } }))).toEqual(["delete scaleDown w1"]);
  });
});

describe("approval", () => {
  const policy = { configPatch: { approvalRequired: ["scaleDown" as const] } };

  it("by default only 'other' waits: a CAPI scale-down applies as before", () => {
    const p = planOf(scaleDown);
    expect(p.paused).toBeUndefined();
    expect(p.workers).toEqual([]);
    expect(conditionOf(p, "ApprovalRequired")).toMatchObject({ status: "False", reason: "NothingWaits" });
  });

  it("holds a plan with a change of a named kind: nothing is deleted, the condition lists it, the fingerprint is recorded", () => {
    const p = planOf({ ...scaleDown, ...policy });
    expect(p.paused?.reason).toBe("ApprovalRequired");
    expect(p.workers.map((w) => w.slot)).toEqual(["w1"]); // still declared: its BMI stays
    expect(p.approval?.changes.map((c) => `${c.op} ${c.bmi} ${c.kind}`)).toEqual([`delete ${ORDER}-b-w1 scaleDown`]);
    const c = conditionOf(p, "ApprovalRequired");
    expect(c).toMatchObject({ status: "True", reason: "ApprovalRequired" });
    expect(c?.message).toContain(`delete ${ORDER}-b-w1 (scaleDown, worker w1)`);
    expect(c?.message).toContain(`--plan ${p.approval!.fingerprint.slice(0, 12)}`);
    expect(p.annotations?.[PENDING_PLAN_ANNOTATION]).toBe(p.approval!.fingerprint);
    expect(p.events.map((e) => e.reason)).toContain("ApprovalRequired");
  });

  it("applies exactly the approved plan, and clears what waited", () => {
    const held = planOf({ ...scaleDown, ...policy });
    const fp = held.approval!.fingerprint;
    const p = planOf({ ...scaleDown, ...policy, annotations: { [APPROVED_PLAN_ANNOTATION]: fp, [PENDING_PLAN_ANNOTATION]: fp } });
    expect(p.paused).toBeUndefined();
    expect(p.workers).toEqual([]); // the BMI is deleted by this update
    expect(changesFingerprint(UID, p.changes!)).toBe(fp);
    expect(conditionOf(p, "ApprovalRequired")).toMatchObject({ status: "False", reason: "Approved" });
    expect(p.annotations?.[PENDING_PLAN_ANNOTATION]).toBeNull();
    // Once nothing waits any more (the BMI is being deleted), the approval is withdrawn: it approves no later plan.
    const done = planOf({ ...scaleDown, ...policy, bmis: [bmiFor("w1", { deleting: true, state: "Deleting" })],
      annotations: { [APPROVED_PLAN_ANNOTATION]: fp } });
    expect(done.annotations?.[APPROVED_PLAN_ANNOTATION]).toBeNull();
  });

  it("approves changes, not names: a new slot's create keeps its approval when a write moves the order's resourceVersion", () => {
    const at = (rv: string, annotations: Record<string, string> = {}) => planOf({ nodeRequests: [bmRequest("compute", 1)],
      annotations: { [APPROVAL_REQUIRED_ANNOTATION]: "create", ...annotations }, newName: incarnationNames(`${UID}/${rv}`),
      orderPatch: (o) => { o.metadata.resourceVersion = rv; } });
    const held = at("100");
    expect(at("101").approval?.fingerprint).toBe(held.approval!.fingerprint);
    expect(at("101").approval!.changes[0].bmi).not.toBe(held.approval!.changes[0].bmi); // the name moved with the resourceVersion
    const approved = at("102", { [APPROVED_PLAN_ANNOTATION]: held.approval!.fingerprint });
    expect(approved.paused).toBeUndefined();
    expect(approved.fence).toHaveLength(1);
    // The same changes of another order are another approval.
    expect(changesFingerprint("another-uid", held.approval!.changes)).not.toBe(held.approval!.fingerprint);
  });

  it("a held plan reports the same condition whatever the resourceVersion (else each report, moving it, would change it again)", () => {
    const held = (rv: string) => planOf({ nodeRequests: [bmRequest("compute", 2)], workers: [ready], bmis: [bmiFor("w1")],
      annotations: { [APPROVAL_REQUIRED_ANNOTATION]: "create,retry" }, newName: incarnationNames(`${UID}/${rv}`),
      orderPatch: (o) => { o.metadata.resourceVersion = rv; } });
    const [a, b] = [held("200"), held("201")];
    expect(a.paused?.reason).toBe("ApprovalRequired");
    expect(a.approval?.changes[0].bmi).not.toBe(b.approval?.changes[0].bmi); // new names do move
    expect(conditionOf(a, "ApprovalRequired")).toEqual(conditionOf(b, "ApprovalRequired"));
    expect(a.events).toEqual(b.events);
    expect(conditionOf(a, "ApprovalRequired")?.message).toContain("create a new worker's BMI (create, node set compute)");
  });

  it("an approval of another plan (the plan changed since) approves nothing", () => {
    const held = planOf({ ...scaleDown, ...policy });
    // Since the approval, the tenant asked for one more worker: the plan is another one.
    const moved = planOf({ ...scaleDown, ...policy, nodeRequests: [bmRequest("compute", 1)], annotations: { [APPROVED_PLAN_ANNOTATION]: held.approval!.fingerprint } });
    expect(moved.paused?.reason).toBe("ApprovalRequired");
    expect(moved.approval?.fingerprint).not.toBe(held.approval!.fingerprint);
    expect(moved.fence).toEqual([]);
  });

  it("an order's annotation replaces the setting; an invalid one makes every kind wait and says why", () => {
    expect(planOf({ ...scaleDown, ...policy, annotations: { [APPROVAL_REQUIRED_ANNOTATION]: "none" } }).paused).toBeUndefined();
    const create = planOf({ nodeRequests: [bmRequest("compute", 1)], annotations: { [APPROVAL_REQUIRED_ANNOTATION]: "create" } });
    expect(create.paused?.reason).toBe("ApprovalRequired");
    expect(create.fence).toEqual([]);
    const bad = planOf({ nodeRequests: [bmRequest("compute", 1)], annotations: { [APPROVAL_REQUIRED_ANNOTATION]: "scale-down" } });
    expect(bad.paused?.reason).toBe("ApprovalRequired");
    expect(conditionOf(bad, "ApprovalRequired")?.message).toMatch(/is not valid, so every kind waits.*unknown kind "scale-down"/);
  });

  it("holds a cluster deletion when the policy names it", () => {
    const deleting = { nodeRequests: [bmRequest("compute", 1)], workers: [ready], bmis: [bmiFor("w1")], deletionTimestamp: iso(-SEC) };
    expect(planOf(deleting).paused).toBeUndefined();
    const p = planOf({ ...deleting, configPatch: { approvalRequired: ["clusterDeletion"] } });
    expect(p.paused?.reason).toBe("ApprovalRequired");
    expect(p.approval?.changes.map((c) => c.kind)).toEqual(["clusterDeletion"]);
    // Unknown BMIs are not absent ones: the deletion is held all the same.
    const unknown = planOf({ ...deleting, bmis: undefined, configPatch: { approvalRequired: ["clusterDeletion"] } });
    expect(unknown.paused?.reason).toBe("ApprovalRequired");
  });
});

describe("the in-flight create cap", () => {
  it("spreads a 20-worker scale-up over passes: at most the cap in flight, the rest deferred", () => {
    const cap = { configPatch: { maxCreatesInFlight: 3 } };
    const first = planOf({ nodeRequests: [bmRequest("compute", 20)], ...cap });
    expect(first.fence).toHaveLength(3);
    expect(first.createsDeferred).toBe(17);
    // Three in flight: nothing more this pass.
    const inFlight = first.status.workers;
    const second = planOf({ nodeRequests: [bmRequest("compute", 20)], workers: inFlight, bmis: inFlight.map((w) => bmiFor(w.name, { macs: [] })), ...cap });
    expect(second.fence).toHaveLength(0);
    expect(second.createsDeferred).toBe(17);
    // Two of them became Ready: two more start.
    const settled = inFlight.map((w, i) => (i < 2 ? { ...w, phase: "Ready" as const, readySince: iso(-MIN) } : w));
    const third = planOf({ nodeRequests: [bmRequest("compute", 20)], workers: settled,
      bmis: settled.map((w) => bmiFor(w.name)), agents: settled.slice(0, 2).map((w) => boundAgent(w.name, w.name, "added-to-existing-cluster")), ...cap });
    expect(third.fence).toHaveLength(2);
    expect(statusOf(third, settled[0].name)?.phase).toBe("Ready");
  });

  it("no cap by default", () => {
    expect(planOf({ nodeRequests: [bmRequest("compute", 20)] }).fence).toHaveLength(20);
  });
});

describe("the in-flight delete cap and the hub-wide caps", () => {
  const retired = ["w1", "w2", "w3"].map((n) => entry(n, { phase: "Deleting", attemptStartedAt: iso(-SEC) }));
  const retiring: SnapOptions = { nodeRequests: [bmRequest("compute", 0)], workers: retired, bmis: retired.map((w) => bmiFor(w.name)) };
  const declaredSlots = (p: Plan) => p.workers.map((w) => w.slot).sort();

  it("deletes at most the cap's worth of BMIs at once; the others stay declared as they are until deletes finish", () => {
    expect(declaredSlots(planOf(retiring))).toEqual([]); // no cap: all three go
    const capped = planOf({ ...retiring, configPatch: { maxDeletesInFlight: 1 } });
    expect(declaredSlots(capped)).toEqual(["w2", "w3"]);
    expect(capped.deletesDeferred).toBe(2);
    expect(capped.changes?.filter((c) => c.op === "delete").map((c) => c.slot)).toEqual(["w1"]);
    expect(capped.workers.every((w) => w.bmi.adoptId)).toBe(true); // kept as they are: nothing is created
    // w1's delete is in flight (the service shows it Deleting): nothing more this pass.
    const inFlight = planOf({ ...retiring, bmis: [bmiFor("w1", { deleting: true, state: "Deleting" }), bmiFor("w2"), bmiFor("w3")],
      configPatch: { maxDeletesInFlight: 1 } });
    expect(declaredSlots(inFlight)).toEqual(["w2", "w3"]);
    expect(inFlight.changes?.filter((c) => c.op === "delete")).toEqual([]);
  });

  it("counts the hub's other orders against the hub-wide caps, and starts nothing of a kind whose hub count is unknown", () => {
    const creates = (o: SnapOptions) => planOf({ nodeRequests: [bmRequest("compute", 5)], ...o }).fence.length;
    expect(creates({ configPatch: { hubMaxCreatesInFlight: 4 }, hub: { creates: 3, deletes: 0 } })).toBe(1);
    expect(creates({ configPatch: { hubMaxCreatesInFlight: 4 }, hub: { creates: 9, deletes: 0 } })).toBe(0);
    expect(creates({ configPatch: { hubMaxCreatesInFlight: 4 } })).toBe(0);
    expect(creates({ configPatch: { hubMaxCreatesInFlight: 4, maxCreatesInFlight: 2 }, hub: { creates: 0, deletes: 0 } })).toBe(2);
    const hubDeletes = planOf({ ...retiring, configPatch: { hubMaxDeletesInFlight: 3 }, hub: { creates: 0, deletes: 1 } });
    expect(hubDeletes.deletesDeferred).toBe(1);
    expect(declaredSlots(hubDeletes)).toEqual(["w3"]);
  });
});
