// Per-slot transitions through plan(): observation, correlation, readiness, failures, timeouts,
// backoff and replacement, unbinding and deletion (OSAC-2135 §3.1, §4, §5.2, §5.6).
import {
  AGENT_BAREMETAL_LABEL, INFRAENV_AGENT_LABEL, NODE_SET_LABEL, ORDER_LABEL, WORKER_NAME_LABEL,
} from "../../planner/names";
import {
  agentFor, bmiFor, bmRequest, boundAgent, conditionOf, entry, iso, MIN, NS, ORDER, planOf, reasons, SEC, statusOf, UID,
} from "./builders";

const one = [bmRequest("compute", 1)];

describe("BMI observation", () => {
  test("an attempted Create whose BMI is not listed keeps its entry and is declared again under the same name", () => {
    const w = entry("w1", { bareMetalInstance: { name: `${ORDER}-b-w1` } });
    const p = planOf({ nodeRequests: one, workers: [w], bmis: [] });
    expect(statusOf(p, "w1")).toEqual(w);
    expect(p.workers.map((d) => [d.slot, d.bmi.name, d.bmi.adoptId, d.requiresFence])).toEqual([["w1", `${ORDER}-b-w1`, undefined, undefined]]);
    expect(p.fence).toEqual([]);
  });

  test("an attempted Create found by name records its id and adopts it", () => {
    const w = entry("w1", { bareMetalInstance: { name: `${ORDER}-b-w1` } });
    const p = planOf({ nodeRequests: one, workers: [w], bmis: [bmiFor("w1", { state: "Provisioning", macs: [] })] });
    expect(statusOf(p, "w1")?.bareMetalInstance).toEqual({ name: `${ORDER}-b-w1`, id: "id-w1" });
    expect(p.workers[0].bmi.adoptId).toBe("id-w1");
  });

  test.each(["Provisioning", "WaitingForAgent", "Binding", "Ready"] as const)(
    "a %s entry whose BMI is gone is stale and removed (restart rebuild)", (phase) => {
      const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [entry("w1", { phase })], bmis: [] });
      expect(p.status.workers).toEqual([]);
      expect(p.workers).toEqual([]);
    });

  test("Provisioning → WaitingForAgent when the BMI runs with MACs and no Agent matches", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1")], bmis: [bmiFor("w1")] });
    expect(statusOf(p, "w1")?.phase).toBe("WaitingForAgent");
    expect(p.workers[0].binding).toBeUndefined();
  });

  test("a Running BMI without MACs stays Provisioning (MACs unknown, OSAC-3254)", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1")], bmis: [bmiFor("w1", { macs: [] })], agents: [agentFor("w1")] });
    expect(statusOf(p, "w1")?.phase).toBe("Provisioning");
  });

  test("a provisioning BMI stays Provisioning and has no registration deadline", () => {
    const p = planOf({
      nodeRequests: one, workers: [entry("w1", { attemptStartedAt: iso(-40 * MIN) })], bmis: [bmiFor("w1", { state: "Provisioning", macs: [] })],
    });
    expect(statusOf(p, "w1")?.phase).toBe("Provisioning");
  });
});

describe("MAC correlation and binding (§2 steps 10–11, §11.8, §11.9)", () => {
  test("WaitingForAgent → Binding on a unique case-insensitive match; the binding carries CD and labels", () => {
    const agent = agentFor("w1");
    expect(agent.macs?.[0]).toMatch(/[A-F]/); // upper-case on the Agent, lower-case on the BMI
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "WaitingForAgent" })], bmis: [bmiFor("w1")], agents: [agent] });
    expect(statusOf(p, "w1")?.phase).toBe("Binding");
    expect(p.workers[0].binding).toEqual({
      agentName: "agent-w1", agentNamespace: NS, agentUid: "auid-w1",
      clusterDeploymentName: { name: ORDER, namespace: NS },
      labels: { [AGENT_BAREMETAL_LABEL]: "true", [WORKER_NAME_LABEL]: "w1", [NODE_SET_LABEL]: "compute", [ORDER_LABEL]: UID },
    });
    expect(p.events.filter((e) => e.reason === "AgentCorrelated")).toEqual([
      expect.objectContaining({ type: "Normal", key: "AgentCorrelated/w1/1" }),
    ]);
  });

  test("Provisioning can move straight to Binding when the Agent is already there", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1")], bmis: [bmiFor("w1")], agents: [agentFor("w1")] });
    expect(statusOf(p, "w1")?.phase).toBe("Binding");
  });

  test("an Agent already labelled for the slot is its Agent (label lookup, MACs unknown)", () => {
    const agent = boundAgent("w1", "w1", "installing", { macs: undefined });
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "Binding" })], bmis: [bmiFor("w1")], agents: [agent] });
    expect(statusOf(p, "w1")?.phase).toBe("Binding");
    expect(p.workers[0].binding?.agentName).toBe("agent-w1");
  });

  test("Binding → Ready when the Agent is installed into our cluster; readySince is set", () => {
    const p = planOf({
      nodeRequests: one, workers: [entry("w1", { phase: "Binding" })], bmis: [bmiFor("w1")],
      agents: [boundAgent("w1", "w1", "added-to-existing-cluster")],
    });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Ready", readySince: iso(0), attemptCount: 1 });
    expect(p.events).toContainEqual(expect.objectContaining({ reason: "WorkerReady", key: "WorkerReady/w1/1" }));
    expect(p.workers[0].binding?.agentName).toBe("agent-w1");
  });

  test("an installed Agent re-bound by CAPI-provider-agent to the hosted control plane's CD counts as ours", () => {
    const agent = boundAgent("w1", "w1", "added-to-existing-cluster", { clusterDeploymentName: { name: "hc-cd", namespace: `${NS}-${ORDER}` } });
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "Binding" })], bmis: [bmiFor("w1")], agents: [agent] });
    expect(statusOf(p, "w1")?.phase).toBe("Ready");
  });

  test("an installed Agent bound to a foreign cluster does not make the worker Ready", () => {
    const agent = boundAgent("w1", "w1", "added-to-existing-cluster", { clusterDeploymentName: { name: "other", namespace: "elsewhere" } });
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "Binding" })], bmis: [bmiFor("w1")], agents: [agent] });
    expect(statusOf(p, "w1")?.phase).toBe("Binding");
  });

  test("two Agents matching one BMI bind nothing: Warning event naming both, condition", () => {
    const a = agentFor("w1", { name: "agent-a", uid: "ua" });
    const b = agentFor("w1", { name: "agent-b", uid: "ub" });
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "WaitingForAgent" })], bmis: [bmiFor("w1")], agents: [b, a] });
    expect(statusOf(p, "w1")?.phase).toBe("WaitingForAgent");
    expect(p.workers[0].binding).toBeUndefined();
    const ev = p.events.find((e) => e.reason === "AmbiguousAgentMatch");
    expect(ev).toMatchObject({ type: "Warning", key: "AmbiguousAgentMatch/w1/1/agent-a,agent-b" });
    expect(ev?.message).toContain("agent-a, agent-b");
    expect(conditionOf(p, "AgentMatchAmbiguous")).toMatchObject({ status: "True", reason: "AmbiguousAgentMatch" });
    expect(conditionOf(p, "AgentMatchAmbiguous")?.message).toContain("agent-a, agent-b");
  });

  test("one Agent matching the BMIs of two slots binds neither", () => {
    const shared = "02:aa:bb:cc:dd:ee";
    const p = planOf({
      nodeRequests: [bmRequest("compute", 2)],
      workers: [entry("w1", { phase: "WaitingForAgent" }), entry("w2", { phase: "WaitingForAgent" })],
      bmis: [bmiFor("w1", { macs: [shared] }), bmiFor("w2", { macs: [shared, "02:00:00:00:00:02"] })],
      agents: [agentFor("x", { macs: [shared.toUpperCase()] })],
    });
    expect(p.status.workers.map((w) => w.phase)).toEqual(["WaitingForAgent", "WaitingForAgent"]);
    expect(p.workers.every((w) => !w.binding)).toBe(true);
    expect(p.events.filter((e) => e.reason === "AmbiguousAgentMatch")).toHaveLength(2);
    expect(conditionOf(p, "AgentMatchAmbiguous")?.message).toContain("workers w1, w2");
  });

  test.each([
    ["in another namespace", agentFor("w1", { namespace: "tenant-b" })],
    ["of another order", agentFor("w1", { labels: { [INFRAENV_AGENT_LABEL]: `${ORDER}-infraenv`, [ORDER_LABEL]: "uid-other" } })],
    ["of another InfraEnv", agentFor("w1", { labels: { [INFRAENV_AGENT_LABEL]: "other-infraenv" } })],
    ["labelled for another worker", agentFor("w1", { labels: { [INFRAENV_AGENT_LABEL]: `${ORDER}-infraenv`, [WORKER_NAME_LABEL]: "w9" } })],
    ["bound to another cluster", agentFor("w1", { clusterDeploymentName: { name: "other", namespace: "other-ns" } })],
    ["with an unreadable inventory", agentFor("w1", { macs: undefined })],
    ["with no matching MAC", agentFor("w1", { macs: ["02:ff:ff:ff:ff:ff"] })],
  ])("an Agent %s is never bound", (_label, agent) => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "WaitingForAgent" })], bmis: [bmiFor("w1")], agents: [agent] });
    expect(statusOf(p, "w1")?.phase).toBe("WaitingForAgent");
    expect(p.workers[0].binding).toBeUndefined();
  });

  test("an Agent labelled for the slot by a previous incarnation (other MACs) is not the new incarnation's Agent", () => {
    const stale = boundAgent("old-host", "w1", "known", { name: "agent-old" });
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "WaitingForAgent", attemptCount: 2 })], bmis: [bmiFor("w1")], agents: [stale] });
    expect(statusOf(p, "w1")?.phase).toBe("WaitingForAgent");
    expect(p.workers[0].binding).toBeUndefined();
  });

  test("a Ready worker whose Agent lost its label is found again by MAC and re-labelled", () => {
    const p = planOf({
      nodeRequests: one, workers: [entry("w1", { phase: "Ready", readySince: iso(-2 * 60 * MIN), attemptCount: 0 })],
      bmis: [bmiFor("w1")], agents: [agentFor("w1", { state: "added-to-existing-cluster", clusterDeploymentName: { name: ORDER, namespace: NS } })],
    });
    expect(statusOf(p, "w1")?.phase).toBe("Ready");
    expect(p.workers[0].binding?.labels[WORKER_NAME_LABEL]).toBe("w1");
  });

  test("a Ready worker whose Agent cannot be identified because inventories are unreadable retains its binding", () => {
    const p = planOf({
      nodeRequests: one, workers: [entry("w1", { phase: "Ready", readySince: iso(-2 * 60 * MIN), attemptCount: 0 })],
      bmis: [bmiFor("w1")], agents: [agentFor("w1", { macs: undefined })],
    });
    expect(p.workers[0]).toMatchObject({ slot: "w1", retainBinding: true });
    expect(p.workers[0].binding).toBeUndefined();
  });
});

describe("readiness and retry history (§4.1, §11.14)", () => {
  test("attemptCount resets to 0 once Ready for MinHealthyDuration", () => {
    const p = planOf({
      nodeRequests: one, workers: [entry("w1", { phase: "Ready", attemptCount: 3, readySince: iso(-60 * MIN) })],
      bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "added-to-existing-cluster")],
    });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Ready", attemptCount: 0 });
  });

  test("attemptCount is kept before MinHealthyDuration and the reset is scheduled", () => {
    const p = planOf({
      nodeRequests: one, workers: [entry("w1", { phase: "Ready", attemptCount: 3, readySince: iso(-59 * MIN) })],
      bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "added-to-existing-cluster")],
    });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Ready", attemptCount: 3 });
    expect(p.requeueAt).toBe(iso(1 * MIN));
  });

  test("a Ready worker stays Ready even if its BMI reports Failed (Failed only from Provisioning/WaitingForAgent/Binding)", () => {
    const p = planOf({
      nodeRequests: one, workers: [entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-2 * 60 * MIN) })],
      bmis: [bmiFor("w1", { state: "Failed", failureReason: "HostLost" })], agents: [boundAgent("w1", "w1", "added-to-existing-cluster")],
    });
    expect(statusOf(p, "w1")?.phase).toBe("Ready");
  });
});

describe("failures and backoff (§3.1, §4.1, §4.2, §11.12, §11.13)", () => {
  test.each([
    ["Provisioning", "HostSelectionFailed", 1, 5 * MIN],
    ["Provisioning", "NoHostAvailable", 2, 15 * MIN],
    ["WaitingForAgent", "ResourceExhausted", 3, 30 * MIN],
    ["Provisioning", "ImageDownloadFailed", 1, 30 * SEC],
    ["Binding", undefined, 2, 60 * SEC],
    ["Provisioning", "BackendError", 4, 5 * MIN],
  ] as const)("a BMI Failed in %s (%s, attempt %i) → Failed, retry after %i ms", (phase, failureReason, attemptCount, delay) => {
    const p = planOf({
      nodeRequests: one, workers: [entry("w1", { phase, attemptCount })],
      bmis: [bmiFor("w1", { state: "Failed", failureReason, failureMessage: "no available hosts" })],
    });
    expect(statusOf(p, "w1")).toMatchObject({
      phase: "Failed", attemptCount, lastFailureReason: "BMIProvisioningFailed", lastFailureTime: iso(0), nextRetryTime: iso(delay),
    });
    expect(statusOf(p, "w1")?.lastFailureMessage).toContain("no available hosts");
    expect(p.events).toContainEqual(expect.objectContaining({ reason: "WorkerFailed", type: "Warning", key: `WorkerFailed/w1/${attemptCount}` }));
  });

  test("registration timeout: WaitingForAgent for 30 min → Failed AgentRegistrationTimeout with both events", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "WaitingForAgent", attemptStartedAt: iso(-30 * MIN) })], bmis: [bmiFor("w1")] });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Failed", lastFailureReason: "AgentRegistrationTimeout", nextRetryTime: iso(5 * MIN) });
    expect(reasons(p)).toEqual(expect.arrayContaining(["AgentRegistrationTimeout", "WorkerFailed"]));
    expect(p.events.find((e) => e.reason === "AgentRegistrationTimeout")?.type).toBe("Warning");
  });

  test("registration timeout also applies to a Provisioning worker whose BMI runs without MACs", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { attemptStartedAt: iso(-31 * MIN) })], bmis: [bmiFor("w1", { macs: [] })] });
    expect(statusOf(p, "w1")?.lastFailureReason).toBe("AgentRegistrationTimeout");
  });

  test("registration timeout for a Binding worker whose Agent disappeared", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "Binding", attemptStartedAt: iso(-31 * MIN) })], bmis: [bmiFor("w1")] });
    expect(statusOf(p, "w1")?.phase).toBe("Failed");
  });

  test("before the timeout the worker waits and the deadline is the requeue", () => {
    const p = planOf({
      nodeRequests: one, configPatch: { ignitionPollMs: 3_600_000 },
      workers: [entry("w1", { phase: "WaitingForAgent", attemptStartedAt: iso(-29 * MIN) })], bmis: [bmiFor("w1")],
    });
    expect(statusOf(p, "w1")?.phase).toBe("WaitingForAgent");
    expect(p.requeueAt).toBe(iso(1 * MIN));
  });

  test("assisted-service reporting a binding failure fails the worker (AgentBindingFailed)", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "Binding" })], bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "error")] });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Failed", lastFailureReason: "AgentBindingFailed", nextRetryTime: iso(30 * SEC) });
  });

  test("the failing pass still declares the BMI; once Failed is persisted it leaves the desired set", () => {
    const failedNow = planOf({ nodeRequests: one, workers: [entry("w1")], bmis: [bmiFor("w1", { state: "Failed" })] });
    expect(statusOf(failedNow, "w1")?.phase).toBe("Failed");
    expect(failedNow.workers.map((w) => w.bmi.name)).toEqual([`${ORDER}-b-w1`]);
    const persisted = statusOf(failedNow, "w1")!;
    const next = planOf({ nodeRequests: one, workers: [persisted], bmis: [bmiFor("w1", { state: "Failed" })] });
    expect(next.workers).toEqual([]);
    expect(next.fence).toEqual([]);
  });

  test("replacement: after nextRetryTime and once the old BMI is gone, a fresh BMI name, attemptCount+1, fenced", () => {
    const failed = entry("w1", {
      phase: "Failed", attemptCount: 2, lastFailureReason: "AgentRegistrationTimeout", lastFailureMessage: "m",
      lastFailureTime: iso(-16 * MIN), nextRetryTime: iso(-1 * MIN),
    });
    const p = planOf({ nodeRequests: one, workers: [failed], bmis: [] });
    const next = statusOf(p, "w1")!;
    expect(next).toMatchObject({
      phase: "Provisioning", attemptCount: 3, bmiCreateState: "Attempted", attemptStartedAt: iso(0),
      creationTimestamp: failed.creationTimestamp, lastFailureReason: "AgentRegistrationTimeout",
    });
    expect(next.nextRetryTime).toBeUndefined();
    expect(next.bareMetalInstance).toEqual({ name: `${ORDER}-n1` });
    expect(next.bareMetalInstance?.name).not.toBe(failed.bareMetalInstance?.name);
    expect(p.fence).toEqual([next]);
    expect(p.workers).toEqual([expect.objectContaining({ slot: "w1", requiresFence: true })]);
    expect(p.events).toContainEqual(expect.objectContaining({ reason: "WorkerCreated", key: "WorkerCreated/w1/3" }));
  });

  test("no replacement before nextRetryTime; its time is the requeue", () => {
    const failed = entry("w1", { phase: "Failed", nextRetryTime: iso(2 * MIN) });
    const p = planOf({ nodeRequests: one, workers: [failed], bmis: [] });
    expect(statusOf(p, "w1")?.phase).toBe("Failed");
    expect(p.fence).toEqual([]);
    expect(p.requeueAt).toBe(iso(2 * MIN));
  });

  test("no replacement while the old BMI is still observed (deleted before replacement)", () => {
    const failed = entry("w1", { phase: "Failed", nextRetryTime: iso(-1 * MIN) });
    const p = planOf({ nodeRequests: one, workers: [failed], bmis: [bmiFor("w1", { state: "Deleting", deleting: true })] });
    expect(statusOf(p, "w1")?.phase).toBe("Failed");
    expect(p.fence).toEqual([]);
    expect(p.workers).toEqual([]);
  });

  test("retries never stop: attempt 50 is replaced at the class cap", () => {
    const failed = entry("w1", { phase: "Failed", attemptCount: 50, nextRetryTime: iso(-1) });
    const p = planOf({ nodeRequests: one, workers: [failed], bmis: [] });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Provisioning", attemptCount: 51 });
    const failedAgain = planOf({ nodeRequests: one, workers: [statusOf(p, "w1")!], bmis: [bmiFor("w1", { name: `${ORDER}-n1`, id: "id-x", state: "Failed" })] });
    expect(statusOf(failedAgain, "w1")?.nextRetryTime).toBe(iso(5 * MIN));
  });
});

describe("stale ignition (§4.2, §11.18)", () => {
  test("a recreated InfraEnv fails WaitingForAgent and Provisioning workers; bound ones are untouched; no create in that pass", () => {
    const p = planOf({
      recordedInfraEnvUid: "ie-0",
      nodeRequests: [bmRequest("compute", 4)],
      workers: [
        entry("w1", { phase: "WaitingForAgent" }), entry("w2"), entry("w3", { phase: "Binding" }),
        entry("w4", { bareMetalInstance: { name: `${ORDER}-b-w4` } }),
      ],
      bmis: [bmiFor("w1"), bmiFor("w2", { state: "Provisioning", macs: [] }), bmiFor("w3")],
      agents: [boundAgent("w3", "w3")],
    });
    expect(p.status.workers.map((w) => [w.name, w.phase, w.lastFailureReason])).toEqual([
      ["w1", "Failed", "AgentRegistrationTimeout"], ["w2", "Failed", "AgentRegistrationTimeout"], ["w3", "Binding", undefined],
      ["w4", "Failed", "AgentRegistrationTimeout"],
    ]);
    expect(p.events.filter((e) => e.reason === "StaleIgnition").map((e) => [e.type, e.key])).toEqual([
      ["Warning", "StaleIgnition/w1/1"], ["Warning", "StaleIgnition/w2/1"], ["Warning", "StaleIgnition/w4/1"],
    ]);
    expect(p.fence).toEqual([]);
  });

  test("without a recorded uid nothing is stale", () => {
    const p = planOf({ recordedInfraEnvUid: undefined, nodeRequests: one, workers: [entry("w1", { phase: "WaitingForAgent" })], bmis: [bmiFor("w1")] });
    expect(statusOf(p, "w1")?.phase).toBe("WaitingForAgent");
  });
});

describe("unbinding and deletion (§5.2 steps 5–9, §11.16)", () => {
  const ready = entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) });

  test("Ready → Unbinding when the Agent reaches unbinding-pending-user-action; the teardown clock starts", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [ready], bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "unbinding-pending-user-action")] });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Unbinding", attemptStartedAt: iso(0) });
    // Declared for this one pass (the phase is persisted before the Agent and BMI are deleted).
    expect(p.workers.map((w) => w.slot)).toEqual(["w1"]);
  });

  test("a detached Agent (known-unbound, CD cleared) also starts unbinding", () => {
    const agent = boundAgent("w1", "w1", "known-unbound", { clusterDeploymentName: undefined });
    const p = planOf({ nodeRequests: one, workers: [ready], bmis: [bmiFor("w1")], agents: [agent] });
    expect(statusOf(p, "w1")?.phase).toBe("Unbinding");
  });

  test("a persisted Unbinding worker is removed from the declared set (binding, then BMI, are deleted)", () => {
    const unbinding = { ...ready, phase: "Unbinding" as const, attemptStartedAt: iso(-1 * MIN) };
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [unbinding], bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "unbinding-pending-user-action")] });
    expect(statusOf(p, "w1")?.phase).toBe("Unbinding");
    expect(p.workers).toEqual([]);
  });

  test("Unbinding → Deleting once the Agent is gone and the BMI is still there", () => {
    const unbinding = { ...ready, phase: "Unbinding" as const };
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [unbinding], bmis: [bmiFor("w1", { deleting: true, state: "Deleting" })] });
    expect(statusOf(p, "w1")?.phase).toBe("Deleting");
  });

  test.each(["Unbinding", "Deleting"] as const)("%s: BMI gone → entry removed, WorkerDeleted", (phase) => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [{ ...ready, phase }], bmis: [] });
    expect(p.status.workers).toEqual([]);
    expect(p.events).toContainEqual(expect.objectContaining({ reason: "WorkerDeleted", type: "Normal", key: `WorkerDeleted/w1/${ORDER}-b-w1` }));
  });

  test("unbinding stuck for 30 min: AgentUnbindingTimeout recorded, stays Unbinding, no replacement", () => {
    const unbinding = { ...ready, phase: "Unbinding" as const, attemptStartedAt: iso(-31 * MIN) };
    const p = planOf({ nodeRequests: one, workers: [unbinding], bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "unbinding-pending-user-action")] });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Unbinding", lastFailureReason: "AgentUnbindingTimeout", lastFailureTime: iso(0) });
    expect(statusOf(p, "w1")?.nextRetryTime).toBeUndefined();
    // The teardown is not a provisioning failure: no WorkersFailed.
    expect(conditionOf(p, "WorkersFailed")?.status).toBe("False");
    expect(reasons(p)).not.toContain("WorkerFailed");
    // The node set needs capacity again (desired 1, current 0): a new slot is created, the stuck one is not replaced.
    expect(p.fence.map((f) => f.name)).not.toContain("w1");
  });

  test("BMI deletion stuck for 30 min: BMIDeletionTimeout recorded, stays Deleting", () => {
    const deleting = { ...ready, phase: "Deleting" as const, attemptStartedAt: iso(-31 * MIN) };
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [deleting], bmis: [bmiFor("w1", { deleting: true })] });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Deleting", lastFailureReason: "BMIDeletionTimeout" });
  });

  test("a Binding worker whose Agent is being unbound goes to Unbinding (CAPI may pick an installing Agent)", () => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "Binding" })], bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "unbinding-pending-user-action")] });
    expect(statusOf(p, "w1")?.phase).toBe("Unbinding");
  });
});

describe("restart rebuild (§5.6, §11.19)", () => {
  test("phases move forward from live state: Provisioning with an installed labelled Agent → Ready; history kept", () => {
    const w = entry("w1", { attemptCount: 4, lastFailureReason: "AgentRegistrationTimeout", lastFailureTime: iso(-60 * MIN) });
    const p = planOf({ nodeRequests: one, workers: [w], bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "added-to-existing-cluster")] });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Ready", attemptCount: 4, lastFailureReason: "AgentRegistrationTimeout" });
  });

  test("a Ready worker never moves back even when its Agent looks unbound-but-waiting", () => {
    const w = entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-2 * 60 * MIN) });
    const p = planOf({ nodeRequests: one, workers: [w], bmis: [bmiFor("w1")], agents: [boundAgent("w1", "w1", "installing")] });
    expect(statusOf(p, "w1")?.phase).toBe("Ready");
  });

  test("a Failed entry keeps attemptCount and failure fields while waiting", () => {
    const w = entry("w1", { phase: "Failed", attemptCount: 3, lastFailureReason: "BMIProvisioningFailed", lastFailureMessage: "x", nextRetryTime: iso(60 * SEC) });
    const p = planOf({ nodeRequests: one, workers: [w], bmis: [] });
    expect(statusOf(p, "w1")).toEqual(w);
  });
});

describe("bound workers whose Agent cannot be identified", () => {
  test("a Ready worker whose BMI reports no MACs and whose Agent lost its label retains its binding", () => {
    const p = planOf({
      nodeRequests: [bmRequest("compute", 1)], workers: [entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-2 * 60 * MIN) })],
      bmis: [bmiFor("w1", { state: "Unknown", macs: [] })], agents: [agentFor("w1", { state: "added-to-existing-cluster" })],
    });
    expect(p.workers[0]).toMatchObject({ slot: "w1", retainBinding: true });
  });

  test("a Binding worker whose Agent is really gone (MACs known, every inventory readable) declares no binding", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [entry("w1", { phase: "Binding" })], bmis: [bmiFor("w1")] });
    expect(p.workers[0].binding).toBeUndefined();
    expect(p.workers[0].retainBinding).toBeUndefined();
  });
});

describe("absence from a List is not proof of deletion (I3, issue 15 finding 2)", () => {
  test.each(["Provisioning", "WaitingForAgent", "Binding", "Ready"] as const)(
    "a %s entry whose recorded BMI is not listed and not confirmed gone keeps its entry, phase and declaration", (phase) => {
      const w = entry("w1", { phase, attemptStartedAt: iso(-40 * MIN), ...(phase === "Ready" ? { attemptCount: 0, readySince: iso(-2 * 60 * MIN) } : {}) });
      const agents = phase === "Binding" || phase === "Ready" ? [boundAgent("w1", "w1", "added-to-existing-cluster")] : [];
      const p = planOf({ nodeRequests: one, workers: [w], bmis: [], goneBmiIds: [], agents });
      // No failure, no timeout from absence, no replacement.
      expect(statusOf(p, "w1")).toEqual(w);
      expect(p.fence).toEqual([]);
      expect(reasons(p)).not.toContain("WorkerFailed");
      expect(p.workers.map((d) => [d.slot, d.bmi.name, d.bmi.adoptId])).toEqual([["w1", `${ORDER}-b-w1`, "id-w1"]]);
      if (agents.length > 0) expect(p.workers[0].binding?.agentName).toBe("agent-w1");
    });

  test("only a Get's NOT_FOUND (goneBmiIds) drops the entry", () => {
    const w = entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-2 * 60 * MIN) });
    const p = planOf({ nodeRequests: one, workers: [w], bmis: [], goneBmiIds: ["id-w1"] });
    expect(statusOf(p, "w1")).toBeUndefined();
  });

  test("a Ready worker whose BMI is unlisted and whose Agent cannot be found by label retains its binding", () => {
    const w = entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-2 * 60 * MIN) });
    const p = planOf({ nodeRequests: one, workers: [w], bmis: [], goneBmiIds: [] });
    expect(p.workers[0]).toMatchObject({ slot: "w1", retainBinding: true });
  });

  test("Deleting with an unlisted, unconfirmed BMI stays Deleting (no WorkerDeleted)", () => {
    const w = entry("w1", { phase: "Deleting", attemptStartedAt: iso(-1 * MIN) });
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [w], bmis: [], goneBmiIds: [] });
    expect(statusOf(p, "w1")?.phase).toBe("Deleting");
    expect(reasons(p)).not.toContain("WorkerDeleted");
  });

  test("Unbinding whose Agent is gone and whose BMI is unlisted, unconfirmed, goes Deleting instead of being dropped", () => {
    const w = entry("w1", { phase: "Unbinding", attemptStartedAt: iso(-1 * MIN) });
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)], workers: [w], bmis: [], goneBmiIds: [] });
    expect(statusOf(p, "w1")?.phase).toBe("Deleting");
  });

  test("a Failed slot whose old BMI is unlisted but not confirmed gone is not replaced yet", () => {
    const failed = entry("w1", { phase: "Failed", nextRetryTime: iso(-1 * MIN) });
    const p = planOf({ nodeRequests: one, workers: [failed], bmis: [], goneBmiIds: [] });
    expect(statusOf(p, "w1")?.phase).toBe("Failed");
    expect(p.fence).toEqual([]);
  });

  test("cluster deletion keeps an entry whose recorded BMI is unlisted until a Get confirms it gone", () => {
    const w = entry("w1", { phase: "Ready" });
    const kept = planOf({ deletionTimestamp: iso(-MIN), workers: [w], bmis: [], goneBmiIds: [] });
    expect(statusOf(kept, "w1")?.phase).toBe("Deleting");
    expect(reasons(kept)).not.toContain("WorkerDeleted");
    const gone = planOf({ deletionTimestamp: iso(-MIN), workers: [w], bmis: [], goneBmiIds: ["id-w1"] });
    expect(gone.status.workers).toEqual([]);
  });
});

describe("a definitive Create rejection (issue 15 finding 3, §4.2)", () => {
  const attempted = (o = {}) => entry("w1", { bareMetalInstance: { name: `${ORDER}-b-w1` }, attemptStartedAt: iso(-20 * SEC), ...o });
  const rejection = { bmiName: `${ORDER}-b-w1`, code: "INVALID_ARGUMENT", message: "network_attachments[0]: interface 'eno9' not found in host type 'h1'" };

  test("fails the worker (BMICreateRejected, transient backoff), keeps attemptCount, declares no BMI", () => {
    const p = planOf({ nodeRequests: one, workers: [attempted()], bmis: [], createRejections: [rejection] });
    expect(statusOf(p, "w1")).toMatchObject({
      phase: "Failed", attemptCount: 1, lastFailureReason: "BMICreateRejected", lastFailureTime: iso(0), nextRetryTime: iso(30 * SEC),
    });
    expect(statusOf(p, "w1")?.lastFailureMessage).toContain("INVALID_ARGUMENT");
    expect(statusOf(p, "w1")?.lastFailureMessage).toContain("interface 'eno9' not found");
    expect(p.workers).toEqual([]);
    expect(p.events).toContainEqual(expect.objectContaining({ reason: "WorkerFailed", type: "Warning", key: "WorkerFailed/w1/1" }));
  });

  test("after the backoff a new incarnation is tried: fresh name, attemptCount + 1, fenced", () => {
    const failed = statusOf(planOf({ nodeRequests: one, workers: [attempted()], bmis: [], createRejections: [rejection] }), "w1")!;
    const p = planOf({ now: new Date(Date.parse(iso(31 * SEC))), nodeRequests: one, workers: [failed], bmis: [], createRejections: [rejection] });
    expect(statusOf(p, "w1")).toMatchObject({ phase: "Provisioning", attemptCount: 2, bareMetalInstance: { name: `${ORDER}-n1` } });
    expect(p.fence.map((f) => f.name)).toEqual(["w1"]);
  });

  test("the wait follows the transient steps and is capped at 5 min", () => {
    const p = planOf({ nodeRequests: one, workers: [attempted({ attemptCount: 7 })], bmis: [], createRejections: [rejection] });
    expect(statusOf(p, "w1")?.nextRetryTime).toBe(iso(5 * MIN));
  });

  test("a rejection of a name that is listed (ours after all) is ignored", () => {
    const p = planOf({
      nodeRequests: one, workers: [attempted()], bmis: [bmiFor("w1", { state: "Provisioning", macs: [] })], createRejections: [rejection],
    });
    expect(statusOf(p, "w1")?.phase).toBe("Provisioning");
  });
});

describe("BMI states (issue 15 finding 9c)", () => {
  test.each([
    ["Pending", "Provisioning"], ["Provisioning", "Provisioning"], ["Starting", "Provisioning"], ["Unknown", "Provisioning"],
    ["Stopping", "Failed"], ["Stopped", "Failed"],
  ] as const)("a Provisioning slot 40 min in, BMI %s → %s (a provisioned but powered-off host runs the registration clock)", (state, phase) => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { attemptStartedAt: iso(-40 * MIN) })], bmis: [bmiFor("w1", { state })] });
    expect(statusOf(p, "w1")?.phase).toBe(phase);
    if (phase === "Failed") expect(statusOf(p, "w1")?.lastFailureReason).toBe("AgentRegistrationTimeout");
  });

  test.each(["Pending", "Starting", "Stopping", "Stopped", "Unknown"] as const)(
    "a WaitingForAgent slot whose BMI is %s keeps its registration clock", (state) => {
      const waiting = entry("w1", { phase: "WaitingForAgent", attemptStartedAt: iso(-10 * MIN) });
      const p = planOf({ nodeRequests: one, configPatch: { ignitionPollMs: 3_600_000 }, workers: [waiting], bmis: [bmiFor("w1", { state })] });
      expect(statusOf(p, "w1")?.phase).toBe("WaitingForAgent");
      expect(p.requeueAt).toBe(iso(20 * MIN));
      const late = planOf({ nodeRequests: one, workers: [{ ...waiting, attemptStartedAt: iso(-31 * MIN) }], bmis: [bmiFor("w1", { state })] });
      expect(statusOf(late, "w1")?.lastFailureReason).toBe("AgentRegistrationTimeout");
    });

  test.each(["Pending", "Starting", "Stopping", "Stopped", "Unknown"] as const)(
    "a powered-off or restarting Ready worker (BMI %s) is not a failure: it stays Ready, BMI and binding declared", (state) => {
      const ready = entry("w1", { phase: "Ready", attemptCount: 0, readySince: iso(-2 * 60 * MIN) });
      const p = planOf({ nodeRequests: one, workers: [ready], bmis: [bmiFor("w1", { state })], agents: [boundAgent("w1", "w1", "added-to-existing-cluster")] });
      expect(statusOf(p, "w1")).toEqual(ready);
      expect(p.workers[0]).toMatchObject({ slot: "w1", binding: expect.objectContaining({ agentName: "agent-w1" }) });
      expect(conditionOf(p, "WorkersFailed")?.status).toBe("False");
    });

  test.each(["Stopping", "Stopped", "Starting"] as const)("a Binding worker whose BMI is %s stays Binding while its Agent installs", (state) => {
    const p = planOf({ nodeRequests: one, workers: [entry("w1", { phase: "Binding" })], bmis: [bmiFor("w1", { state })], agents: [boundAgent("w1", "w1", "installing")] });
    expect(statusOf(p, "w1")?.phase).toBe("Binding");
  });
});
