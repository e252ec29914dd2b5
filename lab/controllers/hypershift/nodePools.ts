// The HyperShift/CAPI stand-in's decision for one NodePool of platform Agent: which bound, approved,
// ready Agents that match its agentLabelSelector to start installing (up to spec.replicas), and, on
// scale-down, which installed Agents to give up. The MachineSet picks the Machine to delete at
// random (OSAC-2135 §5.2 step 4); CAPI's Agent provider then clears the Agent's
// clusterDeploymentName.
import { matchesSelector } from "../../kube";
import { S, stateOf } from "../assisted/agentStates";
import type { Agent, NodePool } from "../types";

export interface NodePoolPlan {
  install: Agent[];
  release: Agent[];
  /** Agents that are nodes of this pool after the plan (added-to-existing-cluster, not released). */
  readyReplicas: number;
  /** Agents this pool holds (installing or installed), released ones excluded. */
  members: Agent[];
}

export interface CdRef {
  name: string;
  namespace: string;
}

function boundTo(a: Agent, cds: CdRef[]): boolean {
  const ref = a.spec?.clusterDeploymentName;
  return !!ref?.name && cds.some((cd) => cd.name === ref.name && cd.namespace === (ref.namespace || a.metadata.namespace));
}

const byAge = (a: Agent, b: Agent) =>
  (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "") || a.metadata.name.localeCompare(b.metadata.name);

/**
 * @param agents Agents in the HostedCluster's agentNamespace not already held by another NodePool.
 * @param cds The ClusterDeployments of this HostedCluster that a binding may name.
 */
export function planNodePool(np: NodePool, agents: Agent[], cds: CdRef[], random: () => number = Math.random): NodePoolPlan {
  const selector = np.spec?.platform.agent?.agentLabelSelector;
  const mine = agents.filter((a) => !a.metadata.deletionTimestamp && matchesSelector(selector, a.metadata.labels) && boundTo(a, cds));
  const held = mine.filter((a) => stateOf(a) === S.installing || stateOf(a) === S.added);
  const want = Math.max(0, np.spec?.replicas ?? 0);
  const install: Agent[] = [];
  const release: Agent[] = [];
  if (held.length < want) {
    const ready = mine.filter((a) => a.spec?.approved === true && stateOf(a) === S.known).sort(byAge);
    install.push(...ready.slice(0, want - held.length));
  } else if (held.length > want) {
    const pool = [...held];
    while (pool.length > want) release.push(...pool.splice(Math.floor(random() * pool.length), 1));
  }
  const members = [...held.filter((a) => !release.includes(a)), ...install];
  return { install, release, members, readyReplicas: members.filter((a) => stateOf(a) === S.added).length };
}
