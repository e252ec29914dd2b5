// Failures visible on the order (issue 15, finding 12, planner side): the outcome of the last stack
// update becomes the UpdateFailed condition (reason, secret-free message, since when), and
// FulfillmentServiceUnavailable names the cause an operator can act on.
import { plan } from "../../planner";
import type { Condition, Snapshot } from "../../planner/types";
import {
  bmiFor, bmRequest, boundAgent, conditionOf, entry, iso, MIN, planOf, SEC, snap, SnapOptions,
} from "./builders";

const readyEntry = (name: string) => entry(name, { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) });
const ready: SnapOptions = {
  nodeRequests: [bmRequest("compute", 1)], workers: [readyEntry("r1")], bmis: [bmiFor("r1")],
  agents: [boundAgent("r1", "r1", "added-to-existing-cluster")],
};
const failed = (reason: string, message: string): Snapshot["lastUpdate"] => ({ ok: false, reason, message });

/** The world `offsetMs` later, the order carrying `conditions` from the previous pass. */
function later(offsetMs: number, conditions: Condition[], o: SnapOptions = {}): SnapOptions {
  return { ...ready, now: new Date(Date.parse(iso(offsetMs))), orderPatch: (order) => { order.status!.conditions = conditions; }, ...o };
}

describe("UpdateFailed (finding 12)", () => {
  test("a failed update sets UpdateFailed=True with its reason and message, since now", () => {
    const p = planOf({ ...ready, lastUpdate: failed("StackCheckpointCorrupt", "the checkpoint of stack tenant-a--co1 cannot be read") });
    expect(conditionOf(p, "UpdateFailed")).toMatchObject({
      status: "True", reason: "StackCheckpointCorrupt", lastTransitionTime: iso(0), observedGeneration: 3,
    });
    expect(conditionOf(p, "UpdateFailed")?.message).toContain("the checkpoint of stack tenant-a--co1 cannot be read");
  });

  test("a repeated failure keeps its since-when while the reason and message follow the latest failure", () => {
    const first = planOf({ ...ready, lastUpdate: failed("StackCheckpointCorrupt", "one") });
    const second = planOf(later(MIN, first.status.conditions, { lastUpdate: failed("BmiNameRefused", "two") }));
    expect(conditionOf(second, "UpdateFailed")).toMatchObject({ status: "True", reason: "BmiNameRefused", lastTransitionTime: iso(0) });
    expect(conditionOf(second, "UpdateFailed")?.message).toContain("two");
  });

  test("the next successful update clears it (False, UpdateSucceeded, new transition time)", () => {
    const broken = planOf({ ...ready, lastUpdate: failed("EngineError", "boom") });
    const fixed = planOf(later(2 * MIN, broken.status.conditions, { lastUpdate: { ok: true } }));
    expect(conditionOf(fixed, "UpdateFailed")).toMatchObject({ status: "False", reason: "UpdateSucceeded", lastTransitionTime: iso(2 * MIN) });
  });

  test("an unknown outcome (a fresh process) keeps the previous condition untouched", () => {
    const broken = planOf({ ...ready, lastUpdate: failed("EngineError", "boom") });
    const previous = conditionOf(broken, "UpdateFailed");
    const restarted = planOf(later(5 * MIN, broken.status.conditions));
    expect(conditionOf(restarted, "UpdateFailed")).toEqual(previous);
    expect(conditionOf(planOf(ready), "UpdateFailed")).toBeUndefined();
  });

  test.each([
    ["Unmanaged", { annotations: { "osac.openshift.io/management-state": "Unmanaged" } }],
    ["BMIs unknown", { bmis: undefined, fulfillmentErrors: 1 }],
    ["deletion", { deletionTimestamp: iso(-SEC) }],
  ])("it is reported in every mode (%s)", (_mode, o) => {
    const p = plan(snap({ ...ready, ...o, lastUpdate: failed("EngineError", "boom") } as SnapOptions));
    expect(conditionOf(p, "UpdateFailed")).toMatchObject({ status: "True", reason: "EngineError" });
  });

  test("a reason the Condition schema would refuse becomes UpdateFailed; credentials never reach the message; length is bounded", () => {
    const p = planOf({
      ...ready,
      lastUpdate: failed("engine error: exit 1", `call failed: Authorization: Bearer s3cr3t-t0ken via https://user:pa55@host/x ` +
        `token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl ${"x".repeat(10_000)}`),
    });
    const c = conditionOf(p, "UpdateFailed")!;
    expect(c.reason).toBe("UpdateFailed");
    for (const secret of ["s3cr3t-t0ken", "pa55", "eyJhbGciOiJIUzI1NiJ9"]) expect(c.message).not.toContain(secret);
    expect(c.message).toContain("Bearer [redacted]");
    expect(c.message.length).toBeLessThanOrEqual(2200);
  });

  test("the message is redacted like every other (key=value secrets, data: URLs, ignition documents)", () => {
    const p = planOf({
      ...ready,
      lastUpdate: failed("EngineError", `create failed: password=hunter-two-secret source data:,pull-secret-body ` +
        `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"passwordHash":"core-user-passphrase-value"}]}} end`),
    });
    const c = conditionOf(p, "UpdateFailed")!;
    for (const secret of ["hunter-two-secret", "pull-secret-body", "core-user-passphrase-value"]) expect(c.message).not.toContain(secret);
    expect(c.message).toContain("create failed");
  });
});

describe("FulfillmentServiceUnavailable names the cause (finding 12)", () => {
  const down = (kind: Snapshot["fulfillmentErrorKind"], errors: number) => planOf({ ...ready, bmis: undefined, fulfillmentErrors: errors, fulfillmentErrorKind: kind });

  test.each([
    ["Unauthenticated", "FulfillmentUnauthenticated", "token"],
    ["PermissionDenied", "FulfillmentPermissionDenied", "role"],
  ] as const)("a refused %s is reported at once (retrying does not fix it), requeue at the unavailable interval", (kind, reason, word) => {
    const p = down(kind, 1);
    const c = conditionOf(p, "FulfillmentServiceUnavailable");
    expect(c).toMatchObject({ status: "True", reason });
    expect(c?.message).toContain(word);
    expect(c?.message).toContain("retrying does not fix this");
    expect(c?.message).not.toContain("network");
    expect(p.requeueAt).toBe(iso(5 * MIN));
  });

  test("an outage is reported only after the threshold, as a network/service problem", () => {
    expect(conditionOf(down("Unavailable", 2), "FulfillmentServiceUnavailable")?.status).toBe("False");
    expect(down("Unavailable", 2).requeueAt).toBe(iso(30 * SEC));
    const c = conditionOf(down("Unavailable", 3), "FulfillmentServiceUnavailable");
    expect(c).toMatchObject({ status: "True", reason: "FulfillmentServiceUnavailable" });
    expect(c?.message).toContain("3 consecutive");
    expect(c?.message).toContain("unavailable");
  });

  test("an unexpected error is told apart from an outage", () => {
    expect(conditionOf(down("Other", 2), "FulfillmentServiceUnavailable")?.status).toBe("False");
    expect(conditionOf(down("Other", 3), "FulfillmentServiceUnavailable")).toMatchObject({ status: "True", reason: "FulfillmentServiceError" });
  });

  test("no error: False whatever kind the last failure was", () => {
    const p = planOf({ ...ready, fulfillmentErrors: 0, fulfillmentErrorKind: "Unauthenticated" });
    expect(conditionOf(p, "FulfillmentServiceUnavailable")).toMatchObject({ status: "False", reason: "FulfillmentServiceAvailable" });
  });
});
