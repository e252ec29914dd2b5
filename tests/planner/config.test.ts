import { defaultPlannerConfig, plannerConfigFromEnv } from "../../planner";

describe("planner config", () => {
  test("defaults are the design's (§4.1, §4.3)", () => {
    expect(defaultPlannerConfig()).toEqual({
      agentRegistrationTimeoutMs: 1_800_000,
      agentUnbindingTimeoutMs: 1_800_000,
      minHealthyDurationMs: 3_600_000,
      transientBackoffMs: [30_000, 60_000, 120_000],
      transientCapMs: 300_000,
      resourceBackoffMs: [300_000, 900_000, 1_800_000],
      resourceCapMs: 1_800_000,
      agentTimeoutBackoffMs: [300_000, 900_000, 1_800_000],
      agentTimeoutCapMs: 1_800_000,
      ignitionPollMs: 30_000,
      unavailableRequeueMs: 300_000,
      unavailableThreshold: 3,
      ignitionWarnBytes: 49_152,
      ignitionMaxBytes: 65_536,
      maxWorkersPerNodeSet: 100,
      approvalRequired: ["other"],
      maxCreatesInFlight: 0,
      maxDeletesInFlight: 0,
      hubMaxCreatesInFlight: 0,
      hubMaxDeletesInFlight: 0,
      hubNamespaces: [],
    });
  });

  test("an empty environment gives the defaults", () => {
    expect(plannerConfigFromEnv({})).toEqual(defaultPlannerConfig());
  });

  test.each([
    ["BMW_AGENT_REGISTRATION_TIMEOUT_MS", "1500", "agentRegistrationTimeoutMs", 1500],
    ["BMW_AGENT_UNBINDING_TIMEOUT_MS", "2500", "agentUnbindingTimeoutMs", 2500],
    ["BMW_MIN_HEALTHY_DURATION_MS", "4000", "minHealthyDurationMs", 4000],
    ["BMW_TRANSIENT_BACKOFF_MS", "10, 20,40", "transientBackoffMs", [10, 20, 40]],
    ["BMW_TRANSIENT_BACKOFF_CAP_MS", "50", "transientCapMs", 50],
    ["BMW_RESOURCE_BACKOFF_MS", "100,200", "resourceBackoffMs", [100, 200]],
    ["BMW_RESOURCE_BACKOFF_CAP_MS", "300", "resourceCapMs", 300],
    ["BMW_AGENT_TIMEOUT_BACKOFF_MS", "7", "agentTimeoutBackoffMs", [7]],
    ["BMW_AGENT_TIMEOUT_BACKOFF_CAP_MS", "9", "agentTimeoutCapMs", 9],
    ["BMW_IGNITION_POLL_MS", "250", "ignitionPollMs", 250],
    ["BMW_UNAVAILABLE_REQUEUE_MS", "600", "unavailableRequeueMs", 600],
    ["BMW_UNAVAILABLE_THRESHOLD", "5", "unavailableThreshold", 5],
    ["BMW_IGNITION_WARN_BYTES", "1024", "ignitionWarnBytes", 1024],
    ["BMW_IGNITION_MAX_BYTES", "60000", "ignitionMaxBytes", 60000],
    ["BMW_MAX_WORKERS_PER_NODE_SET", "12", "maxWorkersPerNodeSet", 12],
    ["BMW_APPROVAL_REQUIRED", "scaleDown, retire,scaleDown", "approvalRequired", ["scaleDown", "retire"]],
    ["BMW_APPROVAL_REQUIRED", "none", "approvalRequired", []],
    ["BMW_MAX_CREATES_IN_FLIGHT", "3", "maxCreatesInFlight", 3],
    ["BMW_MAX_CREATES_IN_FLIGHT", "0", "maxCreatesInFlight", 0],
    ["BMW_MAX_DELETES_IN_FLIGHT", "2", "maxDeletesInFlight", 2],
    ["BMW_HUB_MAX_CREATES_IN_FLIGHT", "20", "hubMaxCreatesInFlight", 20],
    ["BMW_HUB_MAX_DELETES_IN_FLIGHT", "5", "hubMaxDeletesInFlight", 5],
  ])("%s=%s overrides %s", (variable, value, field, expected) => {
    const config = plannerConfigFromEnv({ [variable]: value });
    expect(config[field as keyof typeof config]).toEqual(expected);
    // Everything else keeps its default.
    const rest = { ...config } as Record<string, unknown>;
    const defaults = { ...defaultPlannerConfig() } as Record<string, unknown>;
    delete rest[field];
    delete defaults[field];
    expect(rest).toEqual(defaults);
  });

  test.each([
    ["BMW_AGENT_REGISTRATION_TIMEOUT_MS", "30m"],
    ["BMW_AGENT_REGISTRATION_TIMEOUT_MS", "-5"],
    ["BMW_AGENT_REGISTRATION_TIMEOUT_MS", "0"],
    ["BMW_AGENT_REGISTRATION_TIMEOUT_MS", ""],
    ["BMW_MIN_HEALTHY_DURATION_MS", "1.5"],
    ["BMW_TRANSIENT_BACKOFF_MS", ""],
    ["BMW_TRANSIENT_BACKOFF_MS", "30000,,60000"],
    ["BMW_RESOURCE_BACKOFF_MS", "5min"],
    ["BMW_UNAVAILABLE_THRESHOLD", "three"],
    ["BMW_IGNITION_MAX_BYTES", "70000"],
    ["BMW_APPROVAL_REQUIRED", "scaledown"],
    ["BMW_APPROVAL_REQUIRED", ""],
    ["BMW_MAX_CREATES_IN_FLIGHT", "-1"],
    ["BMW_HUB_MAX_DELETES_IN_FLIGHT", "x"],
    ["BMW_HUB_NAMESPACES", "Team_A"],
  ])("%s=%j is rejected with an error naming the variable", (variable, value) => {
    expect(() => plannerConfigFromEnv({ [variable]: value })).toThrow(variable);
  });

  test("a warning level above the maximum is rejected", () => {
    expect(() => plannerConfigFromEnv({ BMW_IGNITION_WARN_BYTES: "60000", BMW_IGNITION_MAX_BYTES: "50000" }))
      .toThrow(/BMW_IGNITION_WARN_BYTES=60000 must not exceed BMW_IGNITION_MAX_BYTES=50000/);
  });
});
