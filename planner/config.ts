// Planner timings and limits: the design's defaults (OSAC-2135 §4.1, §4.3) and their overrides from
// the environment. A bad override is a configuration error and must stop the program at start-up,
// so parsing throws with the variable's name instead of silently falling back to a default.
import type { ChangeKind, PlannerConfig } from "./types";

const MIN = 60_000;

/** The service's hard limit on BMI user_data (bareMetalInstanceUserDataMaxBytes). */
export const USER_DATA_HARD_LIMIT_BYTES = 65_536;

/** The design's defaults. */
export function defaultPlannerConfig(): PlannerConfig {
  return {
    agentRegistrationTimeoutMs: 30 * MIN,
    agentUnbindingTimeoutMs: 30 * MIN,
    minHealthyDurationMs: 60 * MIN,
    transientBackoffMs: [30_000, 60_000, 120_000],
    transientCapMs: 5 * MIN,
    resourceBackoffMs: [5 * MIN, 15 * MIN, 30 * MIN],
    resourceCapMs: 30 * MIN,
    agentTimeoutBackoffMs: [5 * MIN, 15 * MIN, 30 * MIN],
    agentTimeoutCapMs: 30 * MIN,
    ignitionPollMs: 30_000,
    unavailableRequeueMs: 5 * MIN,
    unavailableThreshold: 3,
    ignitionWarnBytes: 48 * 1024,
    ignitionMaxBytes: USER_DATA_HARD_LIMIT_BYTES,
    maxWorkersPerNodeSet: 100,
    // Anything that deletes a BMI outside the known flows waits for a human; every known flow applies.
    approvalRequired: ["other"],
    maxCreatesInFlight: 0,
    maxDeletesInFlight: 0,
    hubMaxCreatesInFlight: 0,
    hubMaxDeletesInFlight: 0,
    hubNamespaces: [],
  };
}

/** Blast-radius caps (0: none), per order and per hub. */
const IN_FLIGHT_CAPS = {
  BMW_MAX_CREATES_IN_FLIGHT: "maxCreatesInFlight",
  BMW_MAX_DELETES_IN_FLIGHT: "maxDeletesInFlight",
  BMW_HUB_MAX_CREATES_IN_FLIGHT: "hubMaxCreatesInFlight",
  BMW_HUB_MAX_DELETES_IN_FLIGHT: "hubMaxDeletesInFlight",
} as const satisfies Record<string, keyof PlannerConfig>;

export const CHANGE_KINDS: readonly ChangeKind[] = ["create", "retry", "retire", "scaleDown", "clusterDeletion", "other"];

/** A comma-separated list of change kinds, or "none". */
export function parseChangeKinds(what: string, raw: string): ChangeKind[] {
  const text = raw.trim();
  if (text === "none") return [];
  const kinds = text.split(",").map((k) => k.trim());
  const unknown = kinds.filter((k) => !(CHANGE_KINDS as readonly string[]).includes(k));
  if (kinds.length === 0 || unknown.length > 0) {
    throw new Error(`${what}=${JSON.stringify(raw)}: ${unknown.length ? `unknown kind ${unknown.map((k) => JSON.stringify(k)).join(", ")}` : "empty"}; ` +
      `expected "none" or a comma-separated list of ${CHANGE_KINDS.join(", ")}`);
  }
  return [...new Set(kinds as ChangeKind[])];
}

type NumberKey = {
  [K in keyof PlannerConfig]: PlannerConfig[K] extends number ? K : never;
}[keyof PlannerConfig];
type ListKey = {
  [K in keyof PlannerConfig]: PlannerConfig[K] extends number[] ? K : never;
}[keyof PlannerConfig];

/** Environment variable → config field; every duration and limit can be overridden. */
export const PLANNER_ENV_NUMBERS: Readonly<Record<string, NumberKey>> = {
  BMW_AGENT_REGISTRATION_TIMEOUT_MS: "agentRegistrationTimeoutMs",
  BMW_AGENT_UNBINDING_TIMEOUT_MS: "agentUnbindingTimeoutMs",
  BMW_MIN_HEALTHY_DURATION_MS: "minHealthyDurationMs",
  BMW_TRANSIENT_BACKOFF_CAP_MS: "transientCapMs",
  BMW_RESOURCE_BACKOFF_CAP_MS: "resourceCapMs",
  BMW_AGENT_TIMEOUT_BACKOFF_CAP_MS: "agentTimeoutCapMs",
  BMW_IGNITION_POLL_MS: "ignitionPollMs",
  BMW_UNAVAILABLE_REQUEUE_MS: "unavailableRequeueMs",
  BMW_UNAVAILABLE_THRESHOLD: "unavailableThreshold",
  BMW_IGNITION_WARN_BYTES: "ignitionWarnBytes",
  BMW_IGNITION_MAX_BYTES: "ignitionMaxBytes",
  BMW_MAX_WORKERS_PER_NODE_SET: "maxWorkersPerNodeSet",
};

export const PLANNER_ENV_LISTS: Readonly<Record<string, ListKey>> = {
  BMW_TRANSIENT_BACKOFF_MS: "transientBackoffMs",
  BMW_RESOURCE_BACKOFF_MS: "resourceBackoffMs",
  BMW_AGENT_TIMEOUT_BACKOFF_MS: "agentTimeoutBackoffMs",
};

function parseNonNegativeInt(variable: string, raw: string): number {
  const text = raw.trim();
  if (!/^\d+$/.test(text)) {
    throw new Error(`${variable}=${JSON.stringify(raw)} is not a non-negative integer`);
  }
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new Error(`${variable}=${JSON.stringify(raw)} is too large`);
  return value;
}

function parsePositiveInt(variable: string, raw: string): number {
  const value = parseNonNegativeInt(variable, raw);
  if (value === 0) throw new Error(`${variable}=${JSON.stringify(raw)} must be greater than 0`);
  return value;
}

function parseList(variable: string, raw: string): number[] {
  const parts = raw.split(",").map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p === "")) {
    throw new Error(`${variable}=${JSON.stringify(raw)} must be a comma-separated list of milliseconds, e.g. "30000,60000,120000"`);
  }
  return parts.map((p) => parsePositiveInt(variable, p));
}

/** A comma-separated list of namespace names ("" for none: every namespace). */
function parseNamespaces(variable: string, raw: string): string[] {
  const parts = raw.split(",").map((p) => p.trim()).filter(Boolean);
  const bad = parts.find((p) => !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(p));
  if (bad !== undefined) throw new Error(`${variable}=${JSON.stringify(raw)}: ${JSON.stringify(bad)} is not a namespace name`);
  return parts;
}

/** The defaults with every BMW_* override applied; throws a message naming the bad variable. */
export function plannerConfigFromEnv(env: NodeJS.ProcessEnv): PlannerConfig {
  const config = defaultPlannerConfig();
  for (const [variable, field] of Object.entries(PLANNER_ENV_NUMBERS)) {
    const raw = env[variable];
    if (raw !== undefined) config[field] = parsePositiveInt(variable, raw);
  }
  for (const [variable, field] of Object.entries(PLANNER_ENV_LISTS)) {
    const raw = env[variable];
    if (raw !== undefined) config[field] = parseList(variable, raw);
  }
  if (env.BMW_APPROVAL_REQUIRED !== undefined) config.approvalRequired = parseChangeKinds("BMW_APPROVAL_REQUIRED", env.BMW_APPROVAL_REQUIRED);
  for (const [variable, field] of Object.entries(IN_FLIGHT_CAPS)) {
    const raw = env[variable];
    if (raw !== undefined) config[field] = parseNonNegativeInt(variable, raw);
  }
  if (env.BMW_HUB_NAMESPACES !== undefined) config.hubNamespaces = parseNamespaces("BMW_HUB_NAMESPACES", env.BMW_HUB_NAMESPACES);
  if (config.ignitionMaxBytes > USER_DATA_HARD_LIMIT_BYTES) {
    throw new Error(`BMW_IGNITION_MAX_BYTES=${config.ignitionMaxBytes} exceeds the service's user_data limit of ${USER_DATA_HARD_LIMIT_BYTES} bytes`);
  }
  if (config.ignitionWarnBytes > config.ignitionMaxBytes) {
    throw new Error(`BMW_IGNITION_WARN_BYTES=${config.ignitionWarnBytes} must not exceed BMW_IGNITION_MAX_BYTES=${config.ignitionMaxBytes}`);
  }
  return config;
}
