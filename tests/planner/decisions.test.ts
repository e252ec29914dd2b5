// One test per [conflict] of the design (osac-2135-design.md §6.5 item 12 and the inline markers); each
// is referenced from docs/decisions.md.
import { backoffFor, defaultPlannerConfig, plan } from "../../planner";
import { ORDER_LABEL } from "../../planner/names";
import {
  bmiFor, bmRequest, boundAgent, entry, iso, MIN, NS, ORDER, planOf, snap, statusOf, UID,
} from "./builders";

const readyEntry = (name: string) => entry(name, { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) });

describe("design conflicts: the decisions taken", () => {
  test("C1 NodePool replicas = the node set's requested numberOfNodes, not the correlated Agents", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 3)],
      workers: [readyEntry("a"), entry("b"), entry("c", { phase: "WaitingForAgent" })],
      bmis: [bmiFor("a"), bmiFor("b", { state: "Provisioning", macs: [] }), bmiFor("c")],
      agents: [boundAgent("a", "a", "added-to-existing-cluster")],
    });
    expect(p.nodePoolReplicas).toEqual({ "np-compute": 3 });
    const down = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [readyEntry("a"), readyEntry("b")], bmis: [bmiFor("a"), bmiFor("b")],
      agents: [boundAgent("a", "a", "added-to-existing-cluster"), boundAgent("b", "b", "added-to-existing-cluster")] });
    expect(down.nodePoolReplicas).toEqual({ "np-compute": 1 });
  });

  test("C2 desired is compared with the active-phase count, not with every entry", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 2)],
      workers: [readyEntry("a"), entry("u", { phase: "Unbinding" }), entry("d", { phase: "Deleting" })],
      bmis: [bmiFor("a"), bmiFor("u"), bmiFor("d", { deleting: true })],
      agents: [boundAgent("a", "a", "added-to-existing-cluster"), boundAgent("u", "u", "unbinding-pending-user-action")],
    });
    expect(p.fence).toHaveLength(1);
    expect(p.status.currentWorkers).toBe(2);
  });

  test("C3 backoff step = steps[attemptCount-1] of the failed attempt; the worked example's 30 min for attempt 2 is not followed", () => {
    const config = defaultPlannerConfig();
    expect(backoffFor("AgentRegistrationTimeout", 2, config)).toBe(15 * MIN);
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [entry("w", { phase: "WaitingForAgent", attemptCount: 2, attemptStartedAt: iso(-30 * MIN) })], bmis: [bmiFor("w")] });
    expect(statusOf(p, "w")?.nextRetryTime).toBe(iso(15 * MIN));
  });

  test("C4 cluster deletion declares no worker and no binding: the stack deletes every binding (Agent) and BMI", () => {
    const p = planOf({ deletionTimestamp: iso(0), workers: [readyEntry("a")], bmis: [bmiFor("a")], agents: [boundAgent("a", "a", "added-to-existing-cluster")] });
    expect(p.workers).toEqual([]);
    expect(statusOf(p, "a")?.phase).toBe("Deleting");
  });

  test("C5 retry history is the persisted status; live state only moves phases forward or drops gone entries", () => {
    const failed = entry("f", { phase: "Failed", attemptCount: 3, lastFailureReason: "BMIProvisioningFailed", nextRetryTime: iso(-1) });
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [failed], bmis: [] });
    expect(statusOf(p, "f")?.attemptCount).toBe(4);
    // A labelled BMI no entry knows is not turned into an entry (no history can be rebuilt for it).
    const orphan = bmiFor("zz", { name: `${ORDER}-zz`, id: "id-zz" });
    const q = planOf({ nodeRequests: [bmRequest("compute", 0)], bmis: [orphan] });
    expect(q.status.workers).toEqual([]);
    expect(q.workers).toEqual([]);
  });

  test("C6 the BMI references the DiskImage by id (OSAC-1270 disk_image), not the removed image field", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)] });
    expect(p.workers[0].bmi.diskImage).toBe("di-419");
    expect(Object.keys(p.workers[0].bmi)).not.toContain("image");
  });

  test("C7 singular networkAttachment is read first, plural networkAttachments[0] otherwise", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)], orderPatch: (o) => { o.spec.networkAttachments = [{ subnetRef: "plural" }]; } });
    expect(p.workers[0].bmi.networkAttachment.subnet).toBe("subnet-1");
  });

  test("C8 names use the order name (plus an opaque part), labels and annotations use the order uid", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)] });
    expect(p.workers[0].bmi.name.startsWith(`${ORDER}-`)).toBe(true);
    expect(p.workers[0].bmi.labels).toEqual({ [ORDER_LABEL]: UID });
    expect(p.workers[0].bmi.annotations).toEqual({ "osac.openshift.io/owner-reference": `ClusterOrder/${UID}` });
  });

  test("C9 the InfraEnv lives in the ClusterOrder's namespace (a namespaced ownerReference only works there)", () => {
    expect(planOf().infraEnv?.namespace).toBe(NS);
  });

  test("C10 numberOfNodes 0 is accepted (the proto may scale to 0; the CRD minimum 1 is not enforced here)", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [entry("w", { phase: "WaitingForAgent" })], bmis: [bmiFor("w")] });
    expect(statusOf(p, "w")?.phase).toBe("Deleting");
  });

  test("C11 every incarnation gets a fresh opaque BMI name; a replacement waits until the old BMI is gone", () => {
    const failed = entry("w", { phase: "Failed", nextRetryTime: iso(-1) });
    const waiting = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [failed], bmis: [bmiFor("w", { deleting: true, state: "Deleting" })] });
    expect(waiting.fence).toEqual([]);
    const s = snap({ nodeRequests: [bmRequest("compute", 1)], workers: [failed], bmis: [] });
    const replaced = plan(s);
    expect(statusOf(replaced, "w")?.bareMetalInstance?.name).toBe(`${ORDER}-n1`);
    expect(statusOf(replaced, "w")?.bareMetalInstance?.name).not.toBe(failed.bareMetalInstance?.name);
  });

  test("C12 'BMI gone → drop' does not apply to an attempted Create without an id (an empty list proves nothing)", () => {
    const attempted = entry("w", { bareMetalInstance: { name: `${ORDER}-b-w` }, attemptStartedAt: iso(-2 * 60 * MIN) });
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [attempted], bmis: [] });
    expect(statusOf(p, "w")).toEqual(attempted);
    expect(p.workers.map((w) => w.bmi.name)).toEqual([`${ORDER}-b-w`]);
    expect(p.fence).toEqual([]);
  });

  test("C13 scale-down with Failed not counted: Failed slots are retired first, then unbound slots, then CAPI", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 1)],
      workers: [readyEntry("a"), entry("p", { phase: "WaitingForAgent" }), entry("f", { phase: "Failed", nextRetryTime: iso(-1) })],
      bmis: [bmiFor("a"), bmiFor("p")],
      agents: [boundAgent("a", "a", "added-to-existing-cluster")],
    });
    expect(p.status.workers.map((w) => [w.name, w.phase])).toEqual([["a", "Ready"], ["p", "Deleting"]]);
    expect(p.fence).toEqual([]);
  });
});
