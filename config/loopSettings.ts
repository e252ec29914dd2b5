// The `run` command's flags as the loop uses them: defaults (also shown by --help) and validation in
// one place, so a bad flag stops the command with its name instead of running with NaN.
import { SettingsError } from "./envValues";

export interface LoopFlags {
  namespace?: string[];
  /** Seconds between timer ticks. */
  interval?: number;
  concurrency?: number;
  reconcileConcurrency?: number;
  healthPort?: number;
  healthHost?: string;
  leaseNamespace?: string;
  identity?: string;
  mode?: string;
  shards?: number;
  /** Seconds. */
  leaseDuration?: number;
}

export interface LoopSettings {
  /** Only ClusterOrders of these namespaces; empty: all. */
  namespaces: string[];
  intervalMs: number;
  /** Stacks updated at once (pulumi runs). */
  concurrency: number;
  /** Orders reconciled at once (observation, planning, status); never fewer than `concurrency`. */
  reconcileConcurrency: number;
  healthPort: number;
  healthHost: string;
  leaseNamespace: string;
  /** This replica's identity in the Lease; default POD_NAME, else hostname_pid (controller/leader.ts). */
  identity?: string;
  /** `act` (default): reconcile. `observe`: plan and report only, beside another controller (controller/observeOnly.ts). */
  mode: "act" | "observe";
  /** Shard the orders between replicas by shard Leases (controller/election.ts); unset: one Lease, one acting replica. */
  shards?: number;
  /** How long a Lease holds without renewal, in seconds; a replica stops acting after 2/3 of it without a renewal. */
  leaseDurationSeconds: number;
}

export const LOOP_DEFAULTS = {
  intervalSeconds: 60,
  concurrency: 4,
  reconcileConcurrency: 16,
  healthPort: 8080,
  healthHost: "127.0.0.1",
  leaseNamespace: "bmw-system",
  leaseDurationSeconds: 15,
} as const;

function positiveInteger(flag: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new SettingsError(`--${flag} must be a positive integer, got ${v}`);
  return v;
}

/** The Lease is renewed every 2 s and given up 2/3 of its duration after the last renewal: 4 s at least. */
function leaseDuration(v: number): number {
  if (positiveInteger("lease-duration", v) < 4) throw new SettingsError(`--lease-duration must be at least 4 seconds (renewals are 2 s apart), got ${v}`);
  return v;
}

export function loopSettings(flags: LoopFlags): LoopSettings {
  const interval = flags.interval ?? LOOP_DEFAULTS.intervalSeconds;
  if (!Number.isFinite(interval) || interval <= 0) throw new SettingsError(`--interval must be a positive number of seconds, got ${interval}`);
  const concurrency = positiveInteger("concurrency", flags.concurrency ?? LOOP_DEFAULTS.concurrency);
  const reconcileConcurrency = positiveInteger("reconcile-concurrency", flags.reconcileConcurrency ?? LOOP_DEFAULTS.reconcileConcurrency);
  const healthPort = flags.healthPort ?? LOOP_DEFAULTS.healthPort;
  if (!Number.isInteger(healthPort) || healthPort < 0 || healthPort > 65_535) {
    throw new SettingsError(`--health-port must be a port number (0-65535), got ${healthPort}`);
  }
  const mode = flags.mode ?? "act";
  const shards = flags.shards === undefined ? undefined : positiveInteger("shards", flags.shards);
  if (shards !== undefined && mode === "observe") throw new SettingsError("--shards applies to --mode act only (observing replicas elect one leader)");
  if (mode !== "act" && mode !== "observe") throw new SettingsError(`--mode must be act or observe, got ${mode}`);
  return {
    mode,
    namespaces: flags.namespace ?? [],
    intervalMs: interval * 1000,
    concurrency,
    reconcileConcurrency: Math.max(reconcileConcurrency, concurrency),
    healthPort,
    healthHost: flags.healthHost ?? LOOP_DEFAULTS.healthHost,
    leaseNamespace: flags.leaseNamespace ?? LOOP_DEFAULTS.leaseNamespace,
    identity: flags.identity,
    ...(shards !== undefined ? { shards } : {}),
    leaseDurationSeconds: leaseDuration(flags.leaseDuration ?? LOOP_DEFAULTS.leaseDurationSeconds),
  };
}
