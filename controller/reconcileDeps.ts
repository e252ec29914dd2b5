// What one reconcile of a ClusterOrder works with: its dependencies (hub, service, stacks, clock), the
// memory kept per order between reconciles, and its result. The phases (reconcile.ts, decide.ts,
// report.ts, finalize.ts) share these types; nothing here does I/O.
import type { OrderOwnership } from "./ownership";
import type { FulfillmentApi } from "../clients/fulfillment";
import type { HubApi } from "../clients/kube";
import type { Observation, OrderRef } from "../io/observe";
import type { ObserveCache } from "../io/observeCache";
import type { SettledOrders } from "./settledOrders";
import type { HubLedger } from "./hubLedger";
import type { EngineStep } from "../stack/eventLog";
import type { Pin } from "../planner/pin";
import type { SavedPreviewOutcome } from "../planner/savedPreview";
import type { CreateRejection, Plan, PlannerConfig, Snapshot } from "../planner/types";

export interface UpResult {
  changes: { create: number; update: number; delete: number; replace: number; same: number };
  durationMs: number;
  outputs?: Record<string, unknown>;
  /** The engine's steps (stack/eventLog.ts), what a preview of this update is held to. */
  steps?: EngineStep[];
}

export interface UpOptions {
  message: string;
  /** Read the live resources first (`up --refresh`), so drift is part of the diff. */
  refresh?: boolean;
  /**
   * What the reconcile observed and planned from, so the program plans from it instead of observing
   * again. Its snapshot is the one the reconciler's plan came from (rollback pin applied, the order's
   * remembered update outcome, Create rejections and fulfillment error count included), and its order
   * carries the resourceVersion of the reconciler's last write before `up`, so the program's fence is
   * conditional on exactly that version. Absent when the order changed since it was observed: the
   * program then observes for itself.
   */
  observation?: Observation;
  /** Called once the update has its pulumi slot, before it starts (progress reports begin then). */
  onStart?: () => void;
}

/** The stack operations a reconcile needs (stack/stacks.ts implements them on the Automation API). */
export interface StackRunner {
  up(ref: OrderRef, opts: UpOptions): Promise<UpResult>;
  /** `pulumi preview --refresh` of the update `up` with this observation would run: its steps and outputs. */
  preview(ref: OrderRef, opts: Pick<UpOptions, "observation">): Promise<Pick<UpResult, "steps" | "outputs">>;
  destroy(ref: OrderRef): Promise<void>;
  removeStack(ref: OrderRef): Promise<void>;
  /** Extra program input (a rollback pin), undefined when none. */
  pin(ref: OrderRef): Promise<Pin | undefined>;
  /** Whether the state backend holds a stack for the order (creates nothing). */
  stackExists(ref: OrderRef): Promise<boolean>;
  /** Digest of the program, toolchain and program environment an `up` would run (see programDigest.ts). */
  programDigest(): string;
}

/** The design's two duration histograms (controller/metrics.ts ReconcilerMetrics has both). */
export interface WorkerDurations {
  observeProvisioning(tenant: string, seconds: number): void;
  observeAgentCorrelation(tenant: string, seconds: number): void;
}

export interface ReconcileDeps {
  kube: HubApi;
  fulfillment: FulfillmentApi;
  stacks: StackRunner;
  config: PlannerConfig;
  ignitionCaFile?: string;
  /** The long-running loop's observation cache (shared catalog, ignitions); absent for one-off reconciles. */
  observeCache?: ObserveCache;
  /** The hub's creates and deletes in flight, under a hub-wide cap (controller/hubLedger.ts). */
  hub?: HubLedger;
  /** The long-running loop's settled orders: a skip that leaves an order settled is recorded there. */
  settled?: SettledOrders;
  /** The clock of every decision and timestamp a reconcile makes (default: the wall clock). */
  now?: () => Date;
  /** Memory kept between reconciles of the same order (fingerprints, error counts). */
  memory: Map<string, OrderMemory>;
  /**
   * How often a stack is refreshed on its own (default 1 h; 0 = never). Every `up` already refreshes, so
   * drift that changes what we observe is corrected when it is seen; this catches the rest (e.g. a BMI's
   * spec edited outside Pulumi).
   */
  refreshIntervalMs?: number;
  /** While an `up` runs longer than this, the status is observed and written again at this interval (0 = never). */
  progressReportMs?: number;
  /** Receives the provisioning and Agent-correlation durations of workers as their status records them. */
  durations?: WorkerDurations;
  /** The reconciler's log; a message is a warning unless it says otherwise. */
  log?: (msg: string, fields?: Record<string, unknown>, level?: "debug" | "warn") => void;
  /** A sharded replica: only orders of the shards it holds are acted on (controller/ownership.ts). */
  ownership?: OrderOwnership;
}

export interface OrderMemory {
  lastFingerprint?: string;
  /** The APPLIED_ANNOTATION was read once in this process (later, memory is the authority). */
  appliedRead?: boolean;
  consecutiveFulfillmentErrors: number;
  lastRefreshAt?: number;
  /** Outcome of this order's last update in this process (undefined: none yet); every snapshot carries it. */
  lastUpdate?: Snapshot["lastUpdate"];
  /** What this process last learned of the order's saved preview (planner/savedPreview.ts); every snapshot carries it. */
  savedPreview?: SavedPreviewOutcome;
  /** Definitive Create rejections of the last failed update, until an update succeeds. */
  createRejections?: CreateRejection[];
  /** When this process recorded a slot incarnation's WaitingForAgent (the Agent correlation clock). */
  waitingSince?: Map<string, number>;
  /** Finalization: the stack was destroyed by this process (later passes only confirm and sweep). */
  destroyed?: boolean;
  /** Finalization: every BMI id of the order seen so far; each must be confirmed gone by a Get. */
  finalizeIds?: Set<string>;
  /** Finalization: name → id of every BMI of the order seen so far (entries recorded without an id are matched by name). */
  finalizeNames?: Map<string, string>;
  /** Finalization: per BMI name recorded without an id, how many passes in a row a lookup by name found nothing. */
  nameAbsences?: Map<string, number>;
}

export interface ReconcileResult {
  /** "ignored": the order asks for no bare-metal workers and none are ours; nothing was written. */
  action: "up" | "skipped" | "paused" | "deleted" | "gone" | "blocked" | "requeue" | "ignored" | "observed";
  plan?: Plan;
  up?: UpResult;
  requeueAt?: Date;
  message?: string;
}

/** One observation of an order and the plan made from it. `observation.snapshot` is `snapshot`. */
export interface Observed {
  observation: Observation;
  snapshot: Snapshot;
  plan: Plan;
  /** The rollback pin the plan followed (undefined: none). */
  pin?: Pin;
}

export function orderKey(ref: OrderRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** The reconcile's clock: the injected one, else the wall clock (the one place that reads it). */
export function clockOf(deps: Pick<ReconcileDeps, "now">): () => Date {
  return deps.now ?? (() => new Date());
}
