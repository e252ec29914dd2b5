// What the stack manager's operations take and return.
import type { OpMap, UpdateResult } from "@pulumi/pulumi/automation";
import type { Observation } from "../io/observe";
import type { ChangeCounts, EngineStep } from "./eventLog";
import type { LockSweep, PendingOperation } from "./locks";

export interface OperationResult {
  summary: UpdateResult;
  changes: ChangeCounts;
  durationMs: number;
}

/** Options of one stack operation (up, refresh, destroy). */
export interface OperationOptions {
  /** One-line summary of the change, stored as the update message (history shows it). */
  message?: string;
  onOutput?: (chunk: string) => void;
  /** Aborting sends SIGINT: the engine finishes in-flight steps, writes state and unlocks. */
  signal?: AbortSignal;
  /** `up` only: read every resource first (`--refresh`), so drift made outside Pulumi is part of the diff. */
  refresh?: boolean;
  /** `up` and `preview`: the reconciler's observation, handed to the program (io/handoff.ts) so that it does not observe again. */
  observation?: Observation;
}

export interface PreviewResult {
  changeSummary: OpMap;
  /** Human-readable diff (`pulumi preview --diff`, no colour). */
  stdout: string;
  /** Every step the preview shows, refresh steps included: what the next `up` does when nothing changes before it. */
  steps: EngineStep[];
  /** The stack outputs the program declared (its plan's `fingerprint` among them). */
  outputs: Record<string, unknown>;
}

export interface StackState {
  version: number;
  deployment: unknown;
}

export interface RecoveryReport {
  /** Undefined when the backend is not a file backend (locks cannot be inspected). */
  locks?: LockSweep;
  pendingCleared: PendingOperation[];
  /** Unreadable attribute sidecars of the stack's blobs that were removed (stack/blobAttrs.ts). */
  attrsRemoved?: string[];
}
