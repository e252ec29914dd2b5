// Host states of the assisted-service (models/host.go names) as the stand-in drives an Agent through
// them, and the status each state shows. Late binding without an image service (OSAC-2135 §5.2): an
// installed host that loses its clusterDeploymentName cannot be reclaimed and waits in
// `unbinding-pending-user-action`; a host that was only bound goes back to `known-unbound`.
import type { Agent, AgentCondition, AgentStatus } from "../types";

export const S = {
  knownUnbound: "known-unbound",
  binding: "binding",
  known: "known",
  installing: "installing",
  added: "added-to-existing-cluster",
  unbinding: "unbinding",
  unbindingPending: "unbinding-pending-user-action",
} as const;

export type HostState = (typeof S)[keyof typeof S];

export interface StateTimings {
  bindMs: number;
  installMs: number;
  unbindMs: number;
}

export function stateOf(a: Agent): string {
  return a.status?.debugInfo?.state ?? "";
}

export function isBound(a: Agent): boolean {
  return !!a.spec?.clusterDeploymentName?.name;
}

/** Whether installation ever started on this host (its progress is kept after an unbind). */
function everInstalled(a: Agent): boolean {
  return !!a.status?.progress?.currentStage;
}

/**
 * The assisted-service side of an Agent's lifecycle: the state it moves to now, given how long it has
 * been in its current state, or undefined to stay. Installation itself is started by the CAPI
 * stand-in (hypershift/), which picks bound `known` Agents for a NodePool.
 */
export function nextHostState(a: Agent, elapsedMs: number, t: StateTimings): HostState | undefined {
  const state = stateOf(a);
  const bound = isBound(a);
  switch (state) {
    case S.knownUnbound:
      return bound ? S.binding : undefined;
    case S.binding:
      if (!bound) return S.unbinding;
      return elapsedMs >= t.bindMs ? S.known : undefined;
    case S.known:
      return bound ? undefined : S.unbinding;
    case S.installing:
      if (!bound) return S.unbinding;
      return elapsedMs >= t.installMs ? S.added : undefined;
    case S.added:
      return bound ? undefined : S.unbinding;
    case S.unbinding:
      if (elapsedMs < t.unbindMs) return undefined;
      return everInstalled(a) ? S.unbindingPending : S.knownUnbound;
    default:
      return undefined; // unbinding-pending-user-action waits for a reboot into discovery
  }
}

const INFO: Record<HostState, string> = {
  [S.knownUnbound]: "Host is ready to be bound to a cluster",
  [S.binding]: "Host is waiting to be bound to the cluster",
  [S.known]: "Host is ready to be installed",
  [S.installing]: "Installation is in progress",
  [S.added]: "Host has rebooted and joined the cluster",
  [S.unbinding]: "Host is being unbound from the cluster",
  [S.unbindingPending]: "Host is unbound from the cluster; it must be rebooted into the discovery image before it can be used again",
};

function cond(type: string, status: AgentCondition["status"], reason: string, message: string, now: string): AgentCondition {
  return { type, status, reason, message, lastTransitionTime: now };
}

/** Conditions of an Agent in `state` (types SpecSynced, Connected, RequirementsMet, Validated, Installed, Bound). */
export function conditionsFor(state: HostState, now: string): AgentCondition[] {
  const bound = state === S.known || state === S.installing || state === S.added;
  const installed = state === S.added
    ? cond("Installed", "True", "InstallationCompleted", "The installation has completed: Done", now)
    : state === S.installing
      ? cond("Installed", "False", "InstallationInProgress", "The installation is in progress: Starting installation", now)
      : cond("Installed", "False", "InstallationNotStarted", "The installation has not yet started", now);
  const boundCond = bound ? cond("Bound", "True", "Bound", "The agent is bound to a cluster deployment", now)
    : state === S.binding ? cond("Bound", "False", "Binding", "The agent is being bound to a cluster deployment", now)
      : state === S.unbinding ? cond("Bound", "False", "Unbinding", "The agent is being unbound from a cluster deployment", now)
        : state === S.unbindingPending
          ? cond("Bound", "False", "UnbindingPendingUserAction", "The agent is unbound and pending user action", now)
          : cond("Bound", "False", "Unbound", "The agent is not bound to any cluster deployment", now);
  return [
    cond("SpecSynced", "True", "SyncOK", "The Spec has been successfully applied", now),
    cond("Connected", state === S.unbindingPending ? "False" : "True",
      state === S.unbindingPending ? "AgentIsDisconnected" : "AgentIsConnected",
      state === S.unbindingPending ? "The agent has not contacted the installation service since it was unbound"
        : "The agent's connection to the installation service is unimpaired", now),
    cond("RequirementsMet", "True", bound ? "AgentIsReady" : "HostIsReadyToBeBound",
      bound ? "The agent is ready to begin the installation" : "The agent is ready to be bound to a cluster", now),
    cond("Validated", "True", "ValidationsPassing", "The agent's validations are passing", now),
    installed,
    boundCond,
  ];
}

/** The status patch that puts an Agent into `state`. */
export function statusFor(state: HostState, now: string, previous?: AgentStatus): AgentStatus {
  const status: AgentStatus = {
    debugInfo: { ...previous?.debugInfo, state, stateInfo: INFO[state] },
    conditions: conditionsFor(state, now),
  };
  if (state === S.installing) {
    status.progress = { currentStage: "Starting installation", stageStartTime: now, stageUpdateTime: now, installationPercentage: 10 };
  } else if (state === S.added) {
    status.progress = { currentStage: "Done", stageStartTime: now, stageUpdateTime: now, installationPercentage: 100 };
  }
  return status;
}
