// The reconcile's decisions as pure functions of what was observed and planned, the order's memory, the
// clock and the settings: whether `up` runs or is skipped (plan fingerprint), whether a periodic refresh
// is due, whether the applied record on the order (APPLIED_ANNOTATION) is trusted before and written
// after an update, and what must be persisted before `up`. No I/O and no clock of their own.
import * as crypto from "node:crypto";
import { fingerprint, withCreatesDone } from "../planner";
import { APPLIED_ANNOTATION } from "../planner/names";
import type { ClusterOrder, CreateRejection, Plan } from "../planner/types";
import type { OrderMemory } from "./reconcileDeps";

export interface DecideSettings {
  /** How often a converged stack is refreshed on its own (0 = never). */
  refreshIntervalMs: number;
  /** Digest of the program an `up` would run (part of the applied record). */
  programDigest: string;
  /** How soon to look again when Agents cannot be identified. */
  ignitionPollMs: number;
}

export type DecidedMemory = Pick<OrderMemory, "lastFingerprint" | "appliedRead" | "lastRefreshAt">;

export interface DecideInput {
  /** The order as observed (the snapshot's order). */
  order: ClusterOrder;
  plan: Plan;
  /** Whether the observation listed the order's BMIs (false: the fulfillment-service could not be read). */
  bmisKnown: boolean;
  memory: Readonly<DecidedMemory & Pick<OrderMemory, "createRejections">>;
  nowMs: number;
  settings: DecideSettings;
  /**
   * Whether this process's state backend holds a stack for the order; asked only for a first decision. A
   * record written by another controller, or against another backend (an incumbent taken over, a state
   * moved), names a plan that no stack here holds.
   */
  stackExists?: boolean;
}

/** The case a decision is, by name: three pauses, one skip, three reasons to update. */
export type DecisionCase =
  | "fulfillment-unreadable" | "paused" | "agents-unidentified"
  | "applied"
  | "plan-changed" | "fence-pending" | "refresh-due";

export interface Decision {
  /** pause: no update, the status is reported; skip: the stack holds this plan; update: run `up`. */
  action: "pause" | "skip" | "update";
  case: DecisionCase;
  message?: string;
  requeueAtMs?: number;
  /** The plan's fingerprint: what a skip matched, and what an update's record will name. */
  fingerprint: string;
  /** The order's memory after deciding; kept whatever happens next. */
  memory: DecidedMemory;
  /** The order's applied record was read now and names this plan under this program: taken as applied. */
  recordTrusted: boolean;
  /** An update runs while the order carries an applied record: it is removed before `up` starts. */
  withdrawRecord: boolean;
  /**
   * A rejected Create's worker is Failed in this plan but not in the persisted status: the status is written
   * before `up`, because a program planning for itself knows nothing of the rejection and would send the
   * same Create.
   */
  statusFirst: boolean;
}

/** A stable offset in [0, interval) for an order: where in the interval its periodic refresh falls. */
export function refreshOffset(orderKey: string, intervalMs: number): number {
  if (intervalMs <= 0) return 0;
  return crypto.createHash("sha256").update(orderKey).digest().readUInt32BE(0) % intervalMs;
}

/**
 * The APPLIED_ANNOTATION value: the program digest, then a hash of the order's uid and the plan
 * fingerprint. The uid makes a restored or copied ClusterOrder (a new object) never match.
 */
export function appliedRecord(programDigest: string, orderUid: string, planFingerprint: string): string {
  return `${programDigest}.${crypto.createHash("sha256").update(`${orderUid}\0${planFingerprint}`).digest("hex").slice(0, 32)}`;
}

export function decide(input: DecideInput): Decision {
  const { order, plan, memory, nowMs, settings } = input;
  const fp = fingerprint(plan);
  const requeueAtMs = plan.requeueAt ? Date.parse(plan.requeueAt) : undefined;
  const unchanged = { fingerprint: fp, recordTrusted: false, withdrawRecord: false, statusFirst: false,
    memory: { lastFingerprint: memory.lastFingerprint, appliedRead: memory.appliedRead, lastRefreshAt: memory.lastRefreshAt } };
  if (!input.bmisKnown) return { ...unchanged, action: "pause", case: "fulfillment-unreadable", requeueAtMs, message: plan.paused?.message };
  if (plan.paused) return { ...unchanged, action: "pause", case: "paused", requeueAtMs, message: plan.paused.message };
  const unidentified = plan.workers.filter((w) => w.retainBinding && !w.binding).map((w) => w.slot);
  if (unidentified.length > 0) {
    return { ...unchanged, action: "pause", case: "agents-unidentified", requeueAtMs: nowMs + settings.ignitionPollMs,
      message: `Agents of ${unidentified.join(", ")} cannot be identified right now; no update until they can` };
  }

  const every = settings.refreshIntervalMs;
  // Spread the stacks' refreshes over the interval (a stable offset per order) instead of refreshing every
  // stack at once after a restart: hundreds of orders would mean hundreds of pulumi runs in one tick.
  const lastRefreshAt = memory.lastRefreshAt ?? nowMs - refreshOffset(`${order.metadata.namespace}/${order.metadata.name}`, every);
  // A due refresh is an `up --refresh` even when nothing changed: one pulumi run that reads every resource
  // and corrects what drifted, instead of a refresh followed by an update.
  const refreshDue = every > 0 && nowMs - lastRefreshAt >= every;
  const recorded = order.metadata.annotations?.[APPLIED_ANNOTATION];
  // First decision for this order in this process: an update recorded by an earlier process with the same
  // program counts as applied, so a restart does not mean one `up` per order. Later, memory is the authority.
  const recordTrusted = !memory.appliedRead && memory.lastFingerprint === undefined && input.stackExists !== false &&
    recorded === appliedRecord(settings.programDigest, order.metadata.uid, fp);
  const lastFingerprint = recordTrusted ? fp : memory.lastFingerprint;
  const decided = { fingerprint: fp, recordTrusted, requeueAtMs,
    memory: { lastFingerprint, appliedRead: true, lastRefreshAt: refreshDue ? nowMs : lastRefreshAt } };
  const updateCase: DecisionCase | undefined =
    fp !== lastFingerprint ? "plan-changed" : plan.fence.length > 0 ? "fence-pending" : refreshDue ? "refresh-due" : undefined;
  if (!updateCase) return { ...decided, action: "skip", case: "applied", withdrawRecord: false, statusFirst: false };
  return {
    ...decided, action: "update", case: updateCase,
    // Withdrawn before the update: if this process dies during it, the next one must not take a
    // half-applied stack for an applied plan.
    withdrawRecord: recorded !== undefined,
    statusFirst: (memory.createRejections?.length ?? 0) > 0 && rejectionsUnpersisted(order, plan, memory.createRejections ?? []),
  };
}

/** Whether a rejected Create's worker is Failed in this plan but not yet in the persisted status. */
export function rejectionsUnpersisted(order: ClusterOrder, plan: Plan, rejections: readonly CreateRejection[]): boolean {
  const names = new Set(rejections.map((r) => r.bmiName));
  const persisted = new Map((order.status?.workers ?? []).map((w) => [w.name, w]));
  return plan.status.workers.some((w) => w.phase === "Failed" && names.has(w.bareMetalInstance?.name ?? "") &&
    persisted.get(w.name)?.phase !== "Failed");
}

/** What a successful update leaves: the fingerprint taken as applied (if any) and the record naming it. */
export interface Settled {
  lastFingerprint?: string;
  /** The APPLIED_ANNOTATION value to write; undefined: none (the plan moved during the update). */
  record?: string;
}

/**
 * After a successful update, from the plan observed right after it: a fingerprint is remembered (and
 * recorded on the order) only when the world did not move during `up`, since a plan that changed since
 * (an Agent registered meanwhile) must not be taken as applied. The BMIs the update created count as
 * not moving: they are now adopted, which the next `up` would only restate (`withCreatesDone`). The
 * program declared from its own, slightly later observation and exports that plan's fingerprint: a
 * match with it counts too.
 */
export function settleAfterUpdate(input: { before: Plan; after: Plan; declared?: string; programDigest: string; orderUid: string }): Settled {
  const afterFp = fingerprint(input.after);
  if (input.after.fence.length > 0) return {};
  const applied = [fingerprint(input.before), fingerprint(withCreatesDone(input.before, input.after)), input.declared];
  if (!applied.includes(afterFp)) return {};
  return { lastFingerprint: afterFp, record: appliedRecord(input.programDigest, input.orderUid, afterFp) };
}
