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
}

export const LOOP_DEFAULTS = {
  intervalSeconds: 60,
  concurrency: 4,
  reconcileConcurrency: 16,
  healthPort: 8080,
  healthHost: "127.0.0.1",
  leaseNamespace: "bmw-system",
} as const;

function positiveInteger(flag: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new SettingsError(`--${flag} must be a positive integer, got ${v}`);
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
  };
}
