// MAC correlation of BMIs to Agents (OSAC-2135 §2 step 10, §11.8/9; OSAC-3254). An Agent is a
// candidate only if it is in the order's namespace, carries this order's InfraEnv or order label, and
// is not claimed by another order, another worker or another cluster. An Agent already labelled with
// a slot's name is that slot's Agent (no MAC redo), provided its MACs do not contradict the slot's
// current BMI (a replacement incarnation must not inherit the Agent of the failed host).
import { INFRAENV_AGENT_LABEL, infraEnvName, ORDER_LABEL, WORKER_NAME_LABEL } from "./names";
import type { ClusterOrder, ObservedAgent } from "./types";

export const AGENT_INSTALLED_STATE = "added-to-existing-cluster";
/** Agent states in which assisted-service reports that binding/installation failed. */
export const AGENT_FAILED_STATES: ReadonlySet<string> = new Set(["error", "cancelled"]);
/** A detached Agent (CD cleared by CAPA) also ends a bound worker (the Go implementation's rule). */
export const AGENT_DETACHED_STATE = "known-unbound";

export function normalizeMac(mac: string): string {
  return mac.trim().toLowerCase();
}

export function isOurAgent(agent: ObservedAgent, order: ClusterOrder): boolean {
  if (agent.namespace !== order.metadata.namespace) return false;
  const orderLabel = agent.labels[ORDER_LABEL];
  if (orderLabel !== undefined && orderLabel !== order.metadata.uid) return false;
  return agent.labels[INFRAENV_AGENT_LABEL] === infraEnvName(order.metadata.name) || orderLabel === order.metadata.uid;
}

export interface ClusterIdentity {
  clusterDeployment?: { name: string; namespace: string };
  /** CAPI-provider-agent re-binds Agents to the hosted control plane's ClusterDeployment in `<ns>-<hc>`. */
  hostedControlPlaneNamespace?: string;
}

export function clusterIdentity(order: ClusterOrder, cd: { name: string; namespace: string } | undefined): ClusterIdentity {
  const ref = order.status?.clusterReference;
  return { clusterDeployment: cd, hostedControlPlaneNamespace: ref ? `${ref.namespace}-${ref.hostedClusterName}` : undefined };
}

export function boundToCluster(agent: ObservedAgent, id: ClusterIdentity): boolean {
  const bound = agent.clusterDeploymentName;
  if (!bound?.name) return false;
  const cd = id.clusterDeployment;
  if (cd && bound.name === cd.name && (bound.namespace === undefined || bound.namespace === cd.namespace)) return true;
  return id.hostedControlPlaneNamespace !== undefined && bound.namespace === id.hostedControlPlaneNamespace;
}

/** True when the MACs do not contradict each other (unknown or empty on either side never contradicts). */
export function macsConsistent(agentMacs: readonly string[] | undefined, bmiMacs: readonly string[] | undefined): boolean {
  if (!agentMacs || !bmiMacs || agentMacs.length === 0 || bmiMacs.length === 0) return true;
  return macsIntersect(agentMacs, bmiMacs);
}

export function macsIntersect(a: readonly string[], b: readonly string[]): boolean {
  const set = new Set(a.map(normalizeMac));
  return b.some((m) => set.has(normalizeMac(m)));
}

/** The Agent labelled for `slot` whose MACs are consistent with the slot's BMI (`bmiMacs` undefined: no check). */
export function labelledAgent(
  agents: readonly ObservedAgent[], order: ClusterOrder, slot: string, bmiMacs: readonly string[] | undefined,
): ObservedAgent | undefined {
  const labelled = agents
    .filter((a) => isOurAgent(a, order) && a.labels[WORKER_NAME_LABEL] === slot && macsConsistent(a.macs, bmiMacs))
    .sort((x, y) => x.name.localeCompare(y.name));
  // Prefer a positive MAC match over an Agent whose inventory is unknown.
  return labelled.find((a) => a.macs && bmiMacs && macsIntersect(a.macs, bmiMacs)) ?? labelled[0];
}

/** Agents free to be correlated: ours, not labelled for any worker, not bound to another cluster. */
export function correlationCandidates(agents: readonly ObservedAgent[], order: ClusterOrder, id: ClusterIdentity): ObservedAgent[] {
  return agents.filter((a) =>
    isOurAgent(a, order) &&
    a.labels[WORKER_NAME_LABEL] === undefined &&
    (!a.clusterDeploymentName?.name || boundToCluster(a, id)));
}

export interface CorrelationRequest {
  slot: string;
  /** The BMI's NIC MACs (non-empty). */
  macs: readonly string[];
}

export type CorrelationResult =
  | { kind: "match"; agent: ObservedAgent }
  | { kind: "none" }
  | { kind: "ambiguous"; agents: string[]; message: string };

/**
 * Unique matching: a slot binds an Agent only if that Agent is its only MAC match and the slot is the
 * Agent's only match. Agents with unknown inventory match nothing (unknown is not "no MAC").
 */
export function correlate(requests: readonly CorrelationRequest[], candidates: readonly ObservedAgent[]): Map<string, CorrelationResult> {
  const known = candidates.filter((a) => a.macs !== undefined && a.macs.length > 0);
  const matchesOfSlot = new Map<string, ObservedAgent[]>();
  const slotsOfAgent = new Map<string, string[]>();
  for (const r of requests) {
    const matches = known.filter((a) => macsIntersect(a.macs ?? [], r.macs)).sort((x, y) => x.name.localeCompare(y.name));
    matchesOfSlot.set(r.slot, matches);
    for (const a of matches) slotsOfAgent.set(a.name, [...(slotsOfAgent.get(a.name) ?? []), r.slot]);
  }
  const out = new Map<string, CorrelationResult>();
  for (const r of requests) {
    const matches = matchesOfSlot.get(r.slot) ?? [];
    if (matches.length === 0) {
      out.set(r.slot, { kind: "none" });
    } else if (matches.length > 1) {
      const names = matches.map((a) => a.name);
      out.set(r.slot, { kind: "ambiguous", agents: names, message: `Agents ${names.join(", ")} all match the MACs of worker ${r.slot}'s BareMetalInstance` });
    } else {
      const agent = matches[0];
      const slots = slotsOfAgent.get(agent.name) ?? [];
      out.set(r.slot, slots.length === 1
        ? { kind: "match", agent }
        : { kind: "ambiguous", agents: [agent.name], message: `Agent ${agent.name} matches the MACs of the BareMetalInstances of workers ${[...slots].sort().join(", ")}` });
    }
  }
  return out;
}
