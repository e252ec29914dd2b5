// Retry now (issue 17): a new value of osac.openshift.io/retry-now retries every Failed worker at once and
// restarts its backoff, once per value; the order shows the earliest next retry.
import { RETRY_NOW_ANNOTATION, RETRY_NOW_APPLIED_ANNOTATION } from "../../planner/retryNow";
import { MANAGEMENT_STATE_ANNOTATION } from "../../planner/names";
import type { WorkerStatus } from "../../planner/types";
import { bmRequest, conditionOf, entry, iso, MIN, ORDER, planOf, SEC, statusOf } from "./builders";

const one = [bmRequest("compute", 1)];
const rejection = { bmiName: `${ORDER}-b-w1`, code: "INVALID_ARGUMENT", message: "interface 'eno9' not found" };
const later = (ms: number) => new Date(Date.parse(iso(ms)));

/** Worker w1 failed its 7th attempt just now: its transient backoff is the 5 min cap. */
function failedSeventh(): WorkerStatus {
  const attempted = entry("w1", { bareMetalInstance: { name: `${ORDER}-b-w1` }, attemptStartedAt: iso(-20 * SEC), attemptCount: 7 });
  const failed = statusOf(planOf({ nodeRequests: one, workers: [attempted], bmis: [], createRejections: [rejection] }), "w1")!;
  expect(failed).toMatchObject({ phase: "Failed", attemptCount: 7, nextRetryTime: iso(5 * MIN) });
  return failed;
}

describe("retry now", () => {
  it("retries a Failed worker at once on a new value, with its backoff restarted, records the value acted on and says so", () => {
    const p = planOf({ now: later(10 * SEC), nodeRequests: one, workers: [failedSeventh()], bmis: [], annotations: { [RETRY_NOW_ANNOTATION]: "2026-12-05T18:00:00Z" } });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Provisioning", attemptCount: 1 });
    expect(p.fence.map((w) => w.name)).toEqual(["w1"]);
    // Recorded only by a report that finds no Failed worker left (the one after the update that retried it).
    expect(p.annotations?.[RETRY_NOW_APPLIED_ANNOTATION]).toBeUndefined();
    expect(p.events).toContainEqual(expect.objectContaining({ reason: "RetryNow", type: "Normal",
      message: expect.stringContaining("failed workers w1 are retried at once") }));
  });

  it("acts once per value: the value already acted on leaves the worker to its backoff", () => {
    const p = planOf({ now: later(10 * SEC), nodeRequests: one, workers: [failedSeventh()], bmis: [],
      annotations: { [RETRY_NOW_ANNOTATION]: "v1", [RETRY_NOW_APPLIED_ANNOTATION]: "v1" } });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Failed", nextRetryTime: iso(5 * MIN) });
    expect(p.fence).toEqual([]);
    expect(p.annotations).toBeUndefined();
    expect(p.events.map((e) => e.reason)).not.toContain("RetryNow");
  });

  it("restarts the backoff: a failure of the retried attempt waits the first step, not the cap", () => {
    const retried = statusOf(planOf({ now: later(10 * SEC), nodeRequests: one, workers: [failedSeventh()], bmis: [],
      annotations: { [RETRY_NOW_ANNOTATION]: "v1" } }), "w1")!;
    const again = planOf({ now: later(30 * SEC), nodeRequests: one, workers: [{ ...retried, attemptStartedAt: iso(10 * SEC) }], bmis: [],
      createRejections: [{ ...rejection, bmiName: retried.bareMetalInstance!.name }], annotations: { [RETRY_NOW_ANNOTATION]: "v1", [RETRY_NOW_APPLIED_ANNOTATION]: "v1" } });
    expect(statusOf(again, "w1")).toMatchObject({ phase: "Failed", attemptCount: 1, nextRetryTime: iso(60 * SEC) });
  });

  it("with no Failed worker left (after the retry), only records the value", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "Ready", readySince: iso(-MIN) })], annotations: { [RETRY_NOW_ANNOTATION]: "v3" } });
    expect(p.annotations?.[RETRY_NOW_APPLIED_ANNOTATION]).toBe("v3");
    expect(p.events.map((e) => e.reason)).not.toContain("RetryNow");
  });

  it("waits while the order is Unmanaged", () => {
    const paused = planOf({ now: later(10 * SEC), nodeRequests: one, workers: [failedSeventh()], bmis: [],
      annotations: { [RETRY_NOW_ANNOTATION]: "v2", [MANAGEMENT_STATE_ANNOTATION]: "Unmanaged" } });
    expect(paused.annotations).toBeUndefined();
    expect(paused.fence).toEqual([]);
  });

  it("the order shows the earliest next retry of its Failed workers", () => {
    const p = planOf({ now: later(10 * SEC), nodeRequests: one, workers: [failedSeventh()], bmis: [] });
    expect(conditionOf(p, "WorkersFailed")?.message).toContain(`earliest next retry ${iso(5 * MIN)}`);
  });
});
