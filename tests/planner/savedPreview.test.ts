// Saved previews (issue 17, point 3): once approved, the plan must make exactly the saved changes or it
// is held (PlanDiverged); new names are compared by node set, since the save and the approval move them.
import { APPROVAL_REQUIRED_ANNOTATION, APPROVED_PLAN_ANNOTATION, changeKey } from "../../planner/changeControl";
import {
  describeDivergence, multisetDifference, newNames, normalizedSteps, SAVED_PREVIEW_ANNOTATION, savedPreviewOf, type StepRecord,
  stepsDivergence,
} from "../../planner/savedPreview";
import { incarnationNames } from "../../io/incarnationNames";
import type { Plan } from "../../planner/types";
import { bmRequest, conditionOf, planOf, type SnapOptions, UID } from "./builders";

const STACK = "urn:pulumi:ns--order::baremetal-workers::baremetal-workers:index:ClusterWorkers$baremetal-workers:index:BareMetalWorker";

/** The engine steps an update of `p` makes for its new workers (what the event log would show). */
function stepsOf(p: Plan): StepRecord[] {
  return p.workers.filter((w) => w.requiresFence).flatMap((w) => [
    { op: "create", urn: `${STACK}::${w.slot}` },
    { op: "create", urn: `${STACK}$baremetal-workers:dynamic:BareMetalInstance::${w.bmi.name}` },
  ]).concat([{ op: "same", urn: `${STACK}::infraenv` }]);
}

/** An order at resourceVersion `rv` asking for `n` compute workers, creates waiting for approval unless `auto`. */
function at(rv: string, n: number, annotations: Record<string, string> = {}, extra: SnapOptions = {}): SnapOptions {
  return {
    nodeRequests: [bmRequest("compute", n)], annotations: { [APPROVAL_REQUIRED_ANNOTATION]: "create", ...annotations },
    newName: incarnationNames(`${UID}/${rv}`), orderPatch: (o) => { o.metadata.resourceVersion = rv; }, ...extra,
  };
}

/** `preview --save` of the order at `rv`: the plan as approved (previewApproval), its changes and normalized steps. */
function save(rv: string, n: number, savedAt = "2026-12-05T00:00:00Z") {
  const held = planOf(at(rv, n));
  const shown = planOf({ ...at(rv, n), previewApproval: held.approval!.fingerprint });
  const steps = normalizedSteps(stepsOf(shown), newNames(shown.changes!));
  return savedPreviewOf(UID, shown.changes!.map(changeKey), steps, savedAt);
}

describe("what a saved preview records", () => {
  it("names new workers and BMIs by node set, so a write that moves the resourceVersion does not change it", () => {
    expect(save("100", 2)).toEqual(save("101", 2));
    expect(save("100", 2).steps).toEqual([
      `create ${STACK}$baremetal-workers:dynamic:BareMetalInstance::new:compute:bmi`,
      `create ${STACK}$baremetal-workers:dynamic:BareMetalInstance::new:compute:bmi`,
      `create ${STACK}::new:compute:worker`, `create ${STACK}::new:compute:worker`,
    ]);
    expect(save("100", 2).id).not.toBe(save("100", 3).id);
  });

  it("a preview previews a waiting plan as approved only when asked (the program asks only in a dry run)", () => {
    const held = planOf(at("100", 1));
    expect(held.paused?.reason).toBe("ApprovalRequired");
    expect(planOf({ ...at("100", 1), previewApproval: "another plan" }).paused?.reason).toBe("ApprovalRequired");
    expect(planOf({ ...at("100", 1), previewApproval: held.approval!.fingerprint }).paused).toBeUndefined();
  });

  it("compares steps as multisets and names what differs", () => {
    expect(multisetDifference(["a", "a", "b"], ["a", "b", "c"])).toEqual({ missing: ["a"], extra: ["c"] });
    expect(describeDivergence("done", ["x"], ["x"])).toBeUndefined();
    expect(describeDivergence("done", ["create a"], ["delete b"])).toBe("saved but not done: create a; done but not saved: delete b");
  });
});

describe("an approved saved preview", () => {
  const saved = save("100", 2);
  const annotations = (approved: string | undefined) => ({
    [SAVED_PREVIEW_ANNOTATION]: JSON.stringify(saved), ...(approved ? { [APPROVED_PLAN_ANNOTATION]: approved } : {}),
  });

  it("binds nothing until approved: the plan waits for approval as before, and the condition says what is saved", () => {
    const p = planOf(at("102", 2, annotations(undefined)));
    expect(p.paused?.reason).toBe("ApprovalRequired");
    expect(conditionOf(p, "PlanDiverged")).toMatchObject({ status: "False", reason: "SavedPreviewNotApproved" });
  });

  it("is the approval of its changes: the plan runs it, and its update is held to its steps", () => {
    const p = planOf(at("103", 2, annotations(saved.id)));
    expect(p.paused).toBeUndefined();
    expect(p.savedPreview?.id).toBe(saved.id);
    expect(p.workers.filter((w) => w.requiresFence)).toHaveLength(2);
    expect(conditionOf(p, "PlanDiverged")).toMatchObject({ status: "False", reason: "SavedPreviewApproved" });
    expect(conditionOf(p, "ApprovalRequired")).toMatchObject({ status: "False", reason: "Approved" });
    // The update (or the preview before it) did the saved steps under the names of its own pass.
    expect(stepsDivergence(saved, { steps: stepsOf(p), outputs: { newNames: newNames(p.changes!) } }, "done")).toBeUndefined();
  });

  it("fails closed when the plan changed since: held, nothing created, the difference named", () => {
    const p = planOf(at("104", 3, annotations(saved.id)));
    expect(p.paused?.reason).toBe("PlanDiverged");
    expect(p.workers.filter((w) => w.requiresFence)).toEqual([]);
    const c = conditionOf(p, "PlanDiverged");
    expect(c).toMatchObject({ status: "True", reason: "PlanDiverged" });
    expect(c?.message).toContain("planned but not saved: create/create/compute/");
    expect(p.events.find((e) => e.reason === "PlanDiverged")?.type).toBe("Warning");
  });

  it("fails closed when the annotation is not a saved preview of this order", () => {
    const tampered = { ...saved, steps: [] };
    const p = planOf(at("105", 2, { [SAVED_PREVIEW_ANNOTATION]: JSON.stringify(tampered), [APPROVED_PLAN_ANNOTATION]: saved.id }));
    expect(p.paused?.reason).toBe("PlanDiverged");
    expect(conditionOf(p, "PlanDiverged")).toMatchObject({ status: "True", reason: "SavedPreviewInvalid" });
    expect(planOf(at("105", 2, { [SAVED_PREVIEW_ANNOTATION]: "{" })).paused?.reason).toBe("PlanDiverged");
  });

  it("held when the preview before its update showed other steps; once run, its annotations go and the condition says how", () => {
    const refused = planOf(at("106", 2, annotations(saved.id), { savedPreviewOutcome: { id: saved.id, ran: false, diverged: "x" } }));
    expect(refused.paused?.reason).toBe("PlanDiverged");
    expect(conditionOf(refused, "PlanDiverged")?.message).toContain("the preview before the update");
    const ran = planOf(at("107", 2, annotations(saved.id), { savedPreviewOutcome: { id: saved.id, ran: true } }));
    expect(ran.savedPreview).toBeUndefined();
    expect(ran.annotations).toMatchObject({ [SAVED_PREVIEW_ANNOTATION]: null, [APPROVED_PLAN_ANNOTATION]: null });
    expect(conditionOf(ran, "PlanDiverged")).toMatchObject({ status: "False", reason: "Applied" });
    // The world moved between the preview and the update: said, but nothing holds the order any more.
    const after = planOf(at("108", 2, {}, { savedPreviewOutcome: { id: saved.id, ran: true, diverged: "done but not saved: delete b" } }));
    expect(conditionOf(after, "PlanDiverged")).toMatchObject({ status: "False", reason: "DivergedDuringUpdate" });
  });

  it("saving the same changes again is another preview: the first one's outcome neither removes nor holds it", () => {
    const again = save("100", 2, "2026-12-05T01:00:00Z");
    expect(again.id).not.toBe(saved.id);
    const o = { savedPreviewOutcome: { id: saved.id, ran: true } };
    const p = planOf(at("109", 2, { [SAVED_PREVIEW_ANNOTATION]: JSON.stringify(again), [APPROVED_PLAN_ANNOTATION]: again.id }, o));
    expect(p.savedPreview?.id).toBe(again.id);
    expect(p.annotations?.[SAVED_PREVIEW_ANNOTATION]).toBeUndefined();
    const refused = { savedPreviewOutcome: { id: saved.id, ran: false, diverged: "x" } };
    expect(planOf(at("110", 2, { [SAVED_PREVIEW_ANNOTATION]: JSON.stringify(again), [APPROVED_PLAN_ANNOTATION]: again.id }, refused)).paused).toBeUndefined();
  });

  it("PlanDiverged is True only while it holds the order: once the saved preview is gone it turns False", () => {
    const wasHeld = planOf(at("111", 2, {}, { orderPatch: (o) => {
      o.metadata.resourceVersion = "111";
      o.status!.conditions = [{ type: "PlanDiverged", status: "True", reason: "PlanDiverged", message: "held", lastTransitionTime: "2026-12-05T00:00:00Z" }];
    } }));
    expect(conditionOf(wasHeld, "PlanDiverged")).toMatchObject({ status: "False", reason: "NoSavedPreview" });
  });

  it("never holds nor releases a cluster deletion: its own approval kind decides", () => {
    const deleting = { deletionTimestamp: "2026-12-05T00:00:00Z", workers: [], bmis: [] };
    const p = planOf(at("112", 2, { [SAVED_PREVIEW_ANNOTATION]: "{", [APPROVAL_REQUIRED_ANNOTATION]: "clusterDeletion" }, deleting));
    expect(p.paused?.reason).not.toBe("PlanDiverged");
    expect(conditionOf(p, "PlanDiverged")).toBeUndefined();
  });
});
