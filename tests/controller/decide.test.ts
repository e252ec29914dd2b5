// The reconcile's decisions as table tests, no cluster: pause, skip or update; a refresh due; the applied
// record trusted before and written after an update; the status written before `up`.
import { appliedRecord, decide, type DecideInput, type Decision, refreshOffset, settleAfterUpdate } from "../../controller/decide";
import { fingerprint } from "../../planner";
import { APPLIED_ANNOTATION } from "../../planner/names";
import type { Plan } from "../../planner/types";
import { bmiFor, bmRequest, entry, makeOrder, MIN, NS, ORDER, planOf, T0, UID } from "../planner/builders";

const DIGEST = "0123456789abcdef";
const HOUR = 60 * MIN;
const NOW = T0.getTime();

/** Two workers whose BMIs exist: nothing to fence, nothing paused. */
const steady: Plan = planOf({ workers: [entry("w1"), entry("w2")], bmis: [bmiFor("w1"), bmiFor("w2")] });
const fp = fingerprint(steady);
const record = appliedRecord(DIGEST, UID, fp);
/** A scale-up of the same order: one new slot awaits the fence. */
const scaled: Plan = { ...steady, fence: [entry("w3", { bareMetalInstance: { name: `${ORDER}-b-w3` } })] };
const rejectedName = `${ORDER}-b-w2`;
const withFailed: Plan = { ...steady, status: { ...steady.status,
  workers: steady.status.workers.map((w) => (w.name === "w2" ? { ...w, phase: "Failed" as const } : w)) } };

/** One input: the steady plan, remembered as applied and refreshed a minute ago, unless a row says otherwise. */
function input(o: Partial<DecideInput> & { annotations?: Record<string, string> } = {}): DecideInput {
  const { annotations, ...rest } = o;
  return {
    order: makeOrder({ annotations, workers: [entry("w1"), entry("w2")] }),
    plan: steady,
    bmisKnown: true,
    memory: { lastFingerprint: fp, appliedRead: true, lastRefreshAt: NOW - MIN },
    nowMs: NOW,
    settings: { refreshIntervalMs: HOUR, programDigest: DIGEST, ignitionPollMs: 15_000 },
    ...rest,
  };
}

/** After a failed update nothing counts as applied. */
const afterFailure = { lastFingerprint: undefined, appliedRead: true, lastRefreshAt: NOW - MIN };
const fresh = { lastFingerprint: undefined, appliedRead: undefined, lastRefreshAt: NOW - MIN };

describe("decide", () => {
  it("the steady plan has nothing to fence and is not paused (the table's baseline)", () => {
    expect(steady.fence).toEqual([]);
    expect(steady.paused).toBeUndefined();
  });

  const rows: [string, DecideInput, Partial<Decision>][] = [
    ["the fulfillment-service could not be read: pause, memory untouched",
      input({ bmisKnown: false, memory: fresh }),
      { action: "pause", case: "fulfillment-unreadable", memory: fresh }],
    ["the planner paused the order (Unmanaged): pause with its message and requeue",
      input({ plan: { ...steady, paused: { reason: "Unmanaged", message: "managed elsewhere" }, requeueAt: new Date(NOW + MIN).toISOString() } }),
      { action: "pause", case: "paused", message: "managed elsewhere", requeueAtMs: NOW + MIN }],
    ["Agents of retained bindings cannot be identified: pause, look again after the ignition poll",
      input({ plan: { ...steady, workers: steady.workers.map((w) => ({ ...w, retainBinding: true, binding: undefined })) } }),
      { action: "pause", case: "agents-unidentified", requeueAtMs: NOW + 15_000,
        message: "Agents of w1, w2 cannot be identified right now; no update until they can" }],
    ["plan unchanged, refreshed recently: skip",
      input(),
      { action: "skip", case: "applied", withdrawRecord: false, statusFirst: false, recordTrusted: false }],
    ["first decision in this process, the record names this plan under this program: trusted, skip",
      input({ memory: fresh, annotations: { [APPLIED_ANNOTATION]: record } }),
      { action: "skip", case: "applied", recordTrusted: true, memory: { lastFingerprint: fp, appliedRead: true, lastRefreshAt: NOW - MIN } }],
    ["first decision, the record matches but this backend holds no stack (another controller's, a moved state): update",
      input({ memory: fresh, annotations: { [APPLIED_ANNOTATION]: record }, stackExists: false }),
      { action: "update", case: "plan-changed", recordTrusted: false, withdrawRecord: true }],
    ["first decision, the record was made by another program: update, the record withdrawn first",
      input({ memory: fresh, annotations: { [APPLIED_ANNOTATION]: appliedRecord("fedcba9876543210", UID, fp) } }),
      { action: "update", case: "plan-changed", recordTrusted: false, withdrawRecord: true }],
    ["first decision, the record belongs to another object of the same name (a restored copy): update",
      input({ memory: fresh, annotations: { [APPLIED_ANNOTATION]: appliedRecord(DIGEST, "uid-of-the-original", fp) } }),
      { action: "update", case: "plan-changed", recordTrusted: false, withdrawRecord: true }],
    ["first decision, no record: update, nothing to withdraw",
      input({ memory: fresh }),
      { action: "update", case: "plan-changed", recordTrusted: false, withdrawRecord: false }],
    ["the record was read once already: memory is the authority, a matching record is not trusted again",
      input({ memory: { ...fresh, appliedRead: true }, annotations: { [APPLIED_ANNOTATION]: record } }),
      { action: "update", case: "plan-changed", recordTrusted: false, withdrawRecord: true }],
    ["memory knows another applied plan: the record is not consulted",
      input({ memory: { ...fresh, lastFingerprint: "an earlier plan" }, annotations: { [APPLIED_ANNOTATION]: record } }),
      { action: "update", case: "plan-changed", recordTrusted: false, memory: { lastFingerprint: "an earlier plan", appliedRead: true, lastRefreshAt: NOW - MIN } }],
    ["plan unchanged but new slots await the fence: update",
      input({ plan: scaled, memory: { lastFingerprint: fingerprint(scaled), appliedRead: true, lastRefreshAt: NOW - MIN } }),
      { action: "update", case: "fence-pending" }],
    ["plan unchanged, the refresh interval has passed: update (with refresh), counted from now",
      input({ memory: { lastFingerprint: fp, appliedRead: true, lastRefreshAt: NOW - HOUR } }),
      { action: "update", case: "refresh-due", memory: { lastFingerprint: fp, appliedRead: true, lastRefreshAt: NOW } }],
    ["plan unchanged, a millisecond before the refresh is due: skip",
      input({ memory: { lastFingerprint: fp, appliedRead: true, lastRefreshAt: NOW - HOUR + 1 } }),
      { action: "skip", case: "applied", memory: { lastFingerprint: fp, appliedRead: true, lastRefreshAt: NOW - HOUR + 1 } }],
    ["refresh interval 0: never due",
      input({ memory: { lastFingerprint: fp, appliedRead: true, lastRefreshAt: NOW - 30 * 24 * HOUR }, settings: { refreshIntervalMs: 0, programDigest: DIGEST, ignitionPollMs: 15_000 } }),
      { action: "skip", case: "applied" }],
    ["first decision: the refresh clock starts at the order's own offset in the interval (not all stacks at once)",
      input({ memory: { lastFingerprint: fp, appliedRead: true } }),
      { action: "skip", memory: { lastFingerprint: fp, appliedRead: true, lastRefreshAt: NOW - refreshOffset(`${NS}/${ORDER}`, HOUR) } }],
    ["plan changed and the refresh due: the case is the change, the refresh clock still restarts",
      input({ memory: { lastFingerprint: "an earlier plan", appliedRead: true, lastRefreshAt: NOW - 2 * HOUR } }),
      { action: "update", case: "plan-changed", memory: { lastFingerprint: "an earlier plan", appliedRead: true, lastRefreshAt: NOW } }],
    ["a rejected Create's worker is Failed in the plan but not in the status: the status is written before `up`",
      input({ plan: withFailed, memory: { ...afterFailure, createRejections: [{ bmiName: rejectedName, code: "INVALID_ARGUMENT", message: "no" }] } }),
      { action: "update", case: "plan-changed", statusFirst: true }],
    ["the rejected worker is already Failed in the status: no status before `up`",
      input({ plan: withFailed, order: makeOrder({ workers: [entry("w1"), entry("w2", { phase: "Failed" })] }),
        memory: { ...afterFailure, createRejections: [{ bmiName: rejectedName, code: "INVALID_ARGUMENT", message: "no" }] } }),
      { action: "update", statusFirst: false }],
    ["a Failed worker without a remembered rejection: no status before `up`",
      input({ plan: withFailed, memory: afterFailure }),
      { action: "update", statusFirst: false }],
  ];

  it.each(rows)("%s", (_name, given, expected) => {
    expect(decide(given)).toMatchObject(expected);
  });

  it("is pure: the same input gives the same decision, and the input is not changed", () => {
    const given = input({ memory: fresh, annotations: { [APPLIED_ANNOTATION]: record } });
    const copy = JSON.parse(JSON.stringify(given));
    expect(decide(given)).toEqual(decide(given));
    expect(JSON.parse(JSON.stringify(given))).toEqual(copy);
  });
});

describe("settleAfterUpdate", () => {
  const moved: Plan = { ...steady, nodePoolReplicas: { "np-compute": 3 } };
  // A scale-up to three whose fence is written: the update creates w3's BMI, after which it is adopted.
  const w3 = entry("w3", { bareMetalInstance: { name: `${ORDER}-b-w3` }, creationTimestamp: undefined });
  const three = { nodeRequests: [bmRequest("compute", 3)], workers: [entry("w1"), entry("w2"), w3] };
  const creating = planOf({ ...three, bmis: [bmiFor("w1"), bmiFor("w2")] });
  const created = planOf({ ...three, bmis: [bmiFor("w1"), bmiFor("w2"), bmiFor("w3")] });
  const createdFp = fingerprint(created);
  /** w3's BMI made under another name than the plan's (not this update's create). */
  const createdElsewhere = planOf({ ...three, workers: [entry("w1"), entry("w2"), { ...w3, bareMetalInstance: { name: "other" } }],
    bmis: [bmiFor("w1"), bmiFor("w2"), bmiFor("w3", { name: "other" })] });
  const rows: [string, { before?: Plan; after: Plan; declared?: string }, { lastFingerprint?: string; record?: string }][] = [
    ["the world did not move during `up`: remembered and recorded",
      { after: steady }, { lastFingerprint: fp, record }],
    ["the plan moved, but it is the one the program declared: remembered and recorded",
      { after: moved, declared: fingerprint(moved) }, { lastFingerprint: fingerprint(moved), record: appliedRecord(DIGEST, UID, fingerprint(moved)) }],
    ["the plan moved and the program declared another: nothing remembered, no record",
      { after: moved, declared: "another" }, {}],
    ["new slots await the fence after `up`: nothing remembered, no record",
      { after: scaled, declared: fingerprint(scaled) }, {}],
    ["the update created a BMI, now adopted, and nothing else moved: remembered and recorded (no `up` just to adopt it)",
      { before: creating, after: created }, { lastFingerprint: createdFp, record: appliedRecord(DIGEST, UID, createdFp) }],
    ["the update created a BMI and the world moved too: nothing remembered, no record",
      { before: creating, after: { ...created, nodePoolReplicas: { "np-compute": 4 } } }, {}],
    ["the slot's BMI exists under another name than the one created: nothing remembered, no record",
      { before: creating, after: createdElsewhere }, {}],
  ];

  it.each(rows)("%s", (_name, given, expected) => {
    expect(settleAfterUpdate({ before: steady, programDigest: DIGEST, orderUid: UID, ...given })).toEqual(expected);
  });

  it("a created BMI counts as applied only through the adoption: the plan before the create does not hash as the one after", () => {
    expect(fingerprint(creating)).not.toBe(createdFp);
  });

  it("the record is the program digest, then a hash of the uid and the fingerprint", () => {
    expect(record).toMatch(new RegExp(`^${DIGEST}\\.[0-9a-f]{32}$`));
    expect(appliedRecord(DIGEST, "another-uid", fp)).not.toBe(record);
  });
});
