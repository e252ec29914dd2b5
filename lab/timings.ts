// How long the simulated world takes for each step. Tests use `fast` (hundreds of milliseconds); the
// demo uses `demo`, slow enough to watch a worker move through its phases.

export interface LabTimings {
  /** BMI RUNNING (host booted the discovery image) → the Agent registers. */
  bootMs: number;
  /** Agent bound to a ClusterDeployment → state leaves `binding`. */
  bindMs: number;
  /** `installing` → `added-to-existing-cluster`. */
  installMs: number;
  /** clusterDeploymentName cleared → `unbinding-pending-user-action` (or `known-unbound` if never installed). */
  unbindMs: number;
  /** Simulator: BMI PROVISIONING → RUNNING. */
  provisionMs: number;
  /** Simulator: BMI Delete → gone. */
  deleteMs: number;
}

export type TimingPreset = "fast" | "demo";

export const TIMING_PRESETS: Record<TimingPreset, LabTimings> = {
  fast: { bootMs: 200, bindMs: 200, installMs: 400, unbindMs: 200, provisionMs: 300, deleteMs: 250 },
  // The PoC measured ~6 min for a BMI and a few minutes for a join; the demo compresses that to seconds.
  demo: { bootMs: 8_000, bindMs: 3_000, installMs: 20_000, unbindMs: 5_000, provisionMs: 15_000, deleteMs: 8_000 },
};

export function resolveTimings(preset: TimingPreset | undefined, overrides: Partial<LabTimings> = {}): LabTimings {
  return { ...TIMING_PRESETS[preset ?? "demo"], ...overrides };
}
