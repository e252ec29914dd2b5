// Per-slot lifecycle from live state (OSAC-2135 §3.1, §4, §5.2 steps 6–9, §5.6): BMI observation,
// failures and their backoff, stale ignition, MAC correlation, readiness, unbinding and deletion.
// Phases move only along allowed transitions (phases.ts) and only forward.
import {
  backoffFor, classifyFailure, REASON_AGENT_BINDING_FAILED, REASON_AGENT_REGISTRATION_TIMEOUT, REASON_AGENT_UNBINDING_TIMEOUT,
  REASON_BMI_CREATE_REJECTED, REASON_BMI_DELETION_TIMEOUT, REASON_BMI_PROVISIONING_FAILED, type FailureClass,
} from "./backoff";
import type { PlanContext, Work } from "./context";
import { bmiMayExist, cloneEntry, confirmedGone, hasIncarnation } from "./context";
import {
  AGENT_DETACHED_STATE, AGENT_FAILED_STATES, AGENT_INSTALLED_STATE, boundToCluster, correlate, correlationCandidates,
  isOurAgent, labelledAgent, type CorrelationRequest, type CorrelationResult,
} from "./correlation";
import {
  EV_AGENT_CORRELATED, EV_AGENT_REGISTRATION_TIMEOUT, EV_AMBIGUOUS_AGENT_MATCH, EV_STALE_IGNITION, EV_WORKER_FAILED,
  EV_WORKER_READY, slotEvent,
} from "./events";
import { UNBINDING_STATE } from "./names";
import { BOUND_PHASES, moveTo } from "./phases";
import { msOf, toIso } from "./time";
import type { CreateRejection, ObservedAgent, ObservedBmi, WorkerStatus } from "./types";

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
}

function attempt(entry: WorkerStatus): number {
  return entry.attemptCount ?? 0;
}

/** Records a provisioning failure, its backoff deadline and the events. */
export function failWorker(ctx: PlanContext, w: Work, reason: string, message: string, cls?: FailureClass): void {
  const e = w.entry;
  moveTo(e, "Failed");
  const n = Math.max(1, attempt(e));
  const delay = backoffFor(cls ?? classifyFailure(reason), n, ctx.config);
  e.lastFailureReason = reason;
  e.lastFailureMessage = message;
  e.lastFailureTime = ctx.nowIso;
  e.nextRetryTime = toIso(ctx.nowMs + delay);
  delete e.readySince;
  if (reason === REASON_AGENT_REGISTRATION_TIMEOUT) {
    ctx.events.push(slotEvent(EV_AGENT_REGISTRATION_TIMEOUT, e.name, n, `worker ${e.name}: ${message}`));
  }
  ctx.events.push(slotEvent(EV_WORKER_FAILED, e.name, n,
    `worker ${e.name} (node set ${e.nodeSet}) failed attempt ${n}: ${reason}; retrying after ${formatDuration(delay)}`));
  ctx.deadlines.push(ctx.nowMs + delay);
}

function findBmi(entry: WorkerStatus, byId: Map<string, ObservedBmi>, byName: Map<string, ObservedBmi>): ObservedBmi | undefined {
  const id = entry.bareMetalInstance?.id;
  if (id) return byId.get(id);
  const name = entry.bareMetalInstance?.name;
  return name ? byName.get(name) : undefined;
}

function bmiFailureMessage(bmi: ObservedBmi): string {
  const detail = [bmi.failureReason, bmi.failureMessage].filter(Boolean).join(": ");
  return `BareMetalInstance ${bmi.name} failed${detail ? ` (${detail})` : ""}`;
}

/** Start of a phase clock; stamps attemptStartedAt when it is missing so the clock starts now. */
function clockStart(ctx: PlanContext, entry: WorkerStatus): number {
  const start = msOf(entry.attemptStartedAt) ?? msOf(entry.creationTimestamp);
  if (start !== undefined) return start;
  entry.attemptStartedAt = ctx.nowIso;
  return ctx.nowMs;
}

function checkRegistrationTimeout(ctx: PlanContext, w: Work): void {
  const start = clockStart(ctx, w.entry);
  const timeout = ctx.config.agentRegistrationTimeoutMs;
  if (ctx.nowMs - start >= timeout) {
    failWorker(ctx, w, REASON_AGENT_REGISTRATION_TIMEOUT,
      `no Agent registered for BareMetalInstance ${w.entry.bareMetalInstance?.name ?? "?"} within ${formatDuration(timeout)}`);
  } else {
    ctx.deadlines.push(start + timeout);
  }
}

/** Enters a teardown phase and restarts the phase clock (there is no dedicated field; see decisions). */
function enterTeardown(ctx: PlanContext, w: Work, to: "Unbinding" | "Deleting"): void {
  moveTo(w.entry, to);
  w.entry.attemptStartedAt = ctx.nowIso;
}

/** Binding/Ready progress once the slot's Agent is known. */
function advanceBound(ctx: PlanContext, w: Work, agent: ObservedAgent): void {
  const e = w.entry;
  w.agent = agent;
  if (e.phase === "Provisioning" || e.phase === "WaitingForAgent") {
    moveTo(e, "Binding");
    ctx.events.push(slotEvent(EV_AGENT_CORRELATED, e.name, attempt(e),
      `worker ${e.name}: Agent ${agent.name} matches BareMetalInstance ${e.bareMetalInstance?.name ?? "?"}`));
  }
  if (e.phase === "Binding") {
    if (agent.state && AGENT_FAILED_STATES.has(agent.state)) {
      failWorker(ctx, w, REASON_AGENT_BINDING_FAILED, `Agent ${agent.name} reports state ${agent.state}`);
      return;
    }
    if (agent.state === UNBINDING_STATE) {
      enterTeardown(ctx, w, "Unbinding");
      return;
    }
    if (agent.state === AGENT_INSTALLED_STATE && boundToCluster(agent, ctx.identity)) {
      moveTo(e, "Ready");
      e.readySince = ctx.nowIso;
      ctx.events.push(slotEvent(EV_WORKER_READY, e.name, attempt(e), `worker ${e.name} joined the cluster as Agent ${agent.name}`));
    }
  }
  if (e.phase === "Ready") readyStep(ctx, w);
}

function readyStep(ctx: PlanContext, w: Work): void {
  const e = w.entry;
  const agent = w.agent;
  if (agent && (agent.state === UNBINDING_STATE || (agent.state === AGENT_DETACHED_STATE && !agent.clusterDeploymentName?.name))) {
    enterTeardown(ctx, w, "Unbinding");
    return;
  }
  if (!e.readySince) e.readySince = ctx.nowIso;
  if (attempt(e) > 0) {
    const healthyAt = (msOf(e.readySince) ?? ctx.nowMs) + ctx.config.minHealthyDurationMs;
    if (healthyAt <= ctx.nowMs) e.attemptCount = 0;
    else ctx.deadlines.push(healthyAt);
  }
}

function teardownStep(ctx: PlanContext, w: Work): void {
  const e = w.entry;
  const timeout = ctx.config.agentUnbindingTimeoutMs;
  if (e.phase === "Unbinding") {
    const agent = labelledAgent(ctx.snapshot.agents, ctx.snapshot.order, e.name, undefined);
    if (!agent) {
      if (bmiMayExist(w)) enterTeardown(ctx, w, "Deleting");
      else w.drop = { deletedEvent: true };
      return;
    }
    w.agent = agent;
  } else if (!bmiMayExist(w)) {
    w.drop = { deletedEvent: true };
    return;
  }
  // Still waiting: teardown problems are recorded, never Failed, never replaced (§3.1).
  const reason = e.phase === "Unbinding" ? REASON_AGENT_UNBINDING_TIMEOUT : REASON_BMI_DELETION_TIMEOUT;
  const start = clockStart(ctx, e);
  if (ctx.nowMs - start >= timeout) {
    if (e.lastFailureReason !== reason) {
      e.lastFailureReason = reason;
      e.lastFailureMessage = e.phase === "Unbinding"
        ? `Agent ${w.agent?.name ?? "?"} is still bound ${formatDuration(ctx.nowMs - start)} after unbinding started; manual intervention may be needed`
        : `BareMetalInstance ${w.bmi?.name ?? "?"} is still present ${formatDuration(ctx.nowMs - start)} after its deletion started`;
      e.lastFailureTime = ctx.nowIso;
    }
    ctx.deadlines.push(ctx.nowMs + ctx.config.transientCapMs);
  } else {
    ctx.deadlines.push(start + timeout);
  }
}

function staleIgnition(ctx: PlanContext, w: Work): void {
  const e = w.entry;
  const env = ctx.snapshot.infraEnv;
  ctx.events.push(slotEvent(EV_STALE_IGNITION, e.name, attempt(e),
    `worker ${e.name} booted with the discovery ignition of a deleted InfraEnv (uid ${ctx.snapshot.recordedInfraEnvUid}); ` +
    `it is reprovisioned with the ignition of InfraEnv ${env?.name ?? "?"} (uid ${env?.uid ?? "?"})`));
  failWorker(ctx, w, REASON_AGENT_REGISTRATION_TIMEOUT,
    `BareMetalInstance ${e.bareMetalInstance?.name ?? "?"} booted with a stale discovery ignition (its InfraEnv was recreated)`);
}

function isStale(ctx: PlanContext): boolean {
  const { infraEnv, recordedInfraEnvUid } = ctx.snapshot;
  return Boolean(infraEnv?.uid && recordedInfraEnvUid && infraEnv.uid !== recordedInfraEnvUid);
}

/** The definitive rejection of this entry's Create in the last failed update, if any. */
function createRejection(ctx: PlanContext, e: WorkerStatus): CreateRejection | undefined {
  const name = e.bareMetalInstance?.name;
  return name ? (ctx.snapshot.createRejections ?? []).find((r) => r.bmiName === name) : undefined;
}

/**
 * A BMI that may exist but is not seen: recorded yet left out of the List without a Get confirming it
 * gone, or an attempted Create without an id. Nothing about the slot changes (no failure, no timeout,
 * no replacement); a bound slot keeps its binding, identified by label only.
 */
function unseenStep(ctx: PlanContext, w: Work): void {
  const e = w.entry;
  if (BOUND_PHASES.has(e.phase)) {
    w.agent = labelledAgent(ctx.snapshot.agents, ctx.snapshot.order, e.name, undefined);
    if (!w.agent) w.retainBinding = true;
  }
  ctx.deadlines.push(ctx.nowMs + ctx.config.ignitionPollMs);
}

/** First stage: BMI presence and failure; teardown phases. */
function observeBmi(ctx: PlanContext, w: Work, stale: boolean): void {
  const e = w.entry;
  if (w.bmi && !e.bareMetalInstance?.id) e.bareMetalInstance = { name: e.bareMetalInstance?.name ?? w.bmi.name, id: w.bmi.id };
  if (!w.bmi && e.bareMetalInstance?.id && !confirmedGone(ctx.snapshot, e)) w.unlisted = true;
  switch (e.phase) {
    case "Failed":
      return;
    case "Unbinding":
    case "Deleting":
      teardownStep(ctx, w);
      return;
    default:
      break;
  }
  if (w.unlisted) {
    unseenStep(ctx, w);
    return;
  }
  if (!w.bmi) {
    // Confirmed gone (restart rebuild, force-deleted), or never created: a stale entry. An attempted
    // Create without an id that is not listed proves nothing: it stays and is declared again under the
    // same name, unless the service refused that Create for good.
    if (e.bareMetalInstance?.id || !hasIncarnation(e)) {
      if (e.phase !== "Provisioning" || e.bareMetalInstance?.id) w.drop = { deletedEvent: false };
      return;
    }
    const rejection = e.phase === "Provisioning" ? createRejection(ctx, e) : undefined;
    if (rejection) {
      failWorker(ctx, w, REASON_BMI_CREATE_REJECTED,
        `the fulfillment-service rejected the Create of BareMetalInstance ${e.bareMetalInstance?.name ?? "?"} (${rejection.code}): ${rejection.message}`,
        "transient");
    } else if (stale && (e.phase === "Provisioning" || e.phase === "WaitingForAgent")) {
      staleIgnition(ctx, w);
    } else {
      unseenStep(ctx, w);
    }
    return;
  }
  if (w.bmi.state === "Failed" && e.phase !== "Ready") {
    failWorker(ctx, w, REASON_BMI_PROVISIONING_FAILED, bmiFailureMessage(w.bmi), classifyFailure(w.bmi.failureReason));
    return;
  }
  if (stale && (e.phase === "Provisioning" || e.phase === "WaitingForAgent")) staleIgnition(ctx, w);
}

/**
 * States of a provisioned host (§3.7 of the API notes): Running, and powered off or powering off. A host
 * in one of them is past provisioning, so a slot waiting for its Agent runs the registration clock; a
 * powered-off host cannot register, and is replaced by the timeout unless someone powers it on.
 * Pending (no controller pass yet), Provisioning and Starting are still coming up; Unknown proves nothing.
 */
const PROVISIONED_STATES: ReadonlySet<ObservedBmi["state"]> = new Set(["Running", "Stopping", "Stopped"]);

function runningMacs(bmi: ObservedBmi | undefined): string[] | undefined {
  return bmi && bmi.state === "Running" && bmi.macs.length > 0 ? bmi.macs : undefined;
}

/** Second stage: the slot's Agent by label, else a correlation request. */
function agentByLabel(ctx: PlanContext, w: Work, requests: CorrelationRequest[]): void {
  const e = w.entry;
  const { agents, order } = ctx.snapshot;
  if (w.drop || !w.bmi) return;
  if (e.phase === "Provisioning" || e.phase === "WaitingForAgent") {
    const macs = runningMacs(w.bmi);
    if (!macs) return;
    w.agent = labelledAgent(agents, order, e.name, macs);
    if (!w.agent) requests.push({ slot: e.name, macs });
  } else if (e.phase === "Binding" || e.phase === "Ready") {
    w.agent = labelledAgent(agents, order, e.name, w.bmi.macs.length > 0 ? w.bmi.macs : undefined);
    if (!w.agent && w.bmi.macs.length > 0) requests.push({ slot: e.name, macs: w.bmi.macs });
  }
}

function noteAmbiguity(ctx: PlanContext, w: Work, result: Extract<CorrelationResult, { kind: "ambiguous" }>): void {
  const e = w.entry;
  ctx.ambiguities.push(result.message);
  ctx.events.push(slotEvent(EV_AMBIGUOUS_AGENT_MATCH, e.name, attempt(e), `${result.message}; nothing is bound`, result.agents.join(",")));
}

/**
 * A bound worker's Agent could not be identified, but might exist: the BMI's MACs are unknown or some
 * of our Agents have unreadable inventories. Its binding is then retained, never deleted on a guess.
 */
function unidentifiable(ctx: PlanContext, bmi: ObservedBmi): boolean {
  return bmi.macs.length === 0 || ctx.snapshot.agents.some((a) => isOurAgent(a, ctx.snapshot.order) && a.macs === undefined);
}

/** Third stage: apply label lookups and correlation results. */
function progress(ctx: PlanContext, w: Work, result: CorrelationResult | undefined): void {
  const e = w.entry;
  if (w.drop || !w.bmi) return;
  const matched = w.agent ?? (result?.kind === "match" ? result.agent : undefined);
  if (result?.kind === "ambiguous") noteAmbiguity(ctx, w, result);
  switch (e.phase) {
    case "Provisioning":
    case "WaitingForAgent":
      if (matched) {
        advanceBound(ctx, w, matched);
        return;
      }
      if (runningMacs(w.bmi) && e.phase === "Provisioning") moveTo(e, "WaitingForAgent");
      if (e.phase === "WaitingForAgent" || PROVISIONED_STATES.has(w.bmi.state)) checkRegistrationTimeout(ctx, w);
      return;
    case "Binding":
      if (matched) {
        advanceBound(ctx, w, matched);
        return;
      }
      w.retainBinding = unidentifiable(ctx, w.bmi);
      checkRegistrationTimeout(ctx, w);
      return;
    case "Ready":
      if (matched) w.agent = matched;
      else w.retainBinding = unidentifiable(ctx, w.bmi);
      readyStep(ctx, w);
      return;
    default:
      return;
  }
}

/** Runs every status entry through observation, correlation and timeouts. */
export function observeEntries(ctx: PlanContext, entries: readonly WorkerStatus[]): Work[] {
  const bmis = ctx.snapshot.bmis ?? [];
  const byId = new Map(bmis.map((b) => [b.id, b]));
  const claimedIds = new Set(entries.map((e) => e.bareMetalInstance?.id).filter((id): id is string => Boolean(id)));
  // A name lookup must not grab a BMI that another entry already owns by id.
  const byName = new Map(bmis.filter((b) => !claimedIds.has(b.id)).map((b) => [b.name, b]));
  const stale = isStale(ctx);
  const works: Work[] = entries.map((prev) => ({ prev, entry: cloneEntry(prev), bmi: findBmi(prev, byId, byName) }));
  for (const w of works) observeBmi(ctx, w, stale);
  const requests: CorrelationRequest[] = [];
  for (const w of works) agentByLabel(ctx, w, requests);
  const results = correlate(requests, correlationCandidates(ctx.snapshot.agents, ctx.snapshot.order, ctx.identity));
  for (const w of works) progress(ctx, w, results.get(w.entry.name));
  return works;
}
