// Which node sets' Agents a NodePool's agentLabelSelector can select. CAPI's Agent provider installs any
// bound Agent its pool's selector matches; within one order every Agent is bound to the same
// ClusterDeployment, so the selector alone keeps the node sets apart. A pool that also matches another
// node set's Agents takes them over, CAPI unbinds workers to fix the replica counts, and every
// replacement is taken again: hosts churn. Such a mapping is ambiguous and is refused.
//
// A bound Agent of node set T carries the labels our binding sets (agentBareMetal, node-set=T,
// cluster-order=<uid>, worker-name) and its InfraEnv's label. A requirement on any other key is taken as
// satisfiable: an Agent can carry any other label (a hardware class, an instance type), and two node sets
// of one instance type carry the same ones.
import { AGENT_BAREMETAL_LABEL, INFRAENV_AGENT_LABEL, infraEnvName, NODE_SET_LABEL, ORDER_LABEL } from "./names";
import type { ClusterOrder, ObservedNodePool } from "./types";

type Selector = NonNullable<ObservedNodePool["agentSelector"]>;
type Requirement = NonNullable<Selector["matchExpressions"]>[number];

/** The labels of a bound Agent of `nodeSet` that this program decides. */
export function boundAgentLabels(order: ClusterOrder, nodeSet: string): Record<string, string> {
  return {
    [AGENT_BAREMETAL_LABEL]: "true",
    [NODE_SET_LABEL]: nodeSet,
    [ORDER_LABEL]: order.metadata.uid,
    [INFRAENV_AGENT_LABEL]: infraEnvName(order.metadata.name),
  };
}

function requirementMayHold(r: Requirement, known: Record<string, string>): boolean {
  const values = r.values ?? [];
  if (!Object.prototype.hasOwnProperty.call(known, r.key)) {
    // A label we do not set: some Agent may carry any value, or none.
    return r.operator === "In" ? values.length > 0 : ["NotIn", "Exists", "DoesNotExist"].includes(r.operator);
  }
  const value = known[r.key];
  switch (r.operator) {
    case "In": return values.includes(value);
    case "NotIn": return !values.includes(value);
    case "Exists": return true;
    case "DoesNotExist": return false;
    default: return false; // the apiserver rejects other operators; an invalid selector selects nothing
  }
}

/** The selector may match some bound Agent of `nodeSet` of this order. */
export function maySelectNodeSet(selector: Selector, order: ClusterOrder, nodeSet: string): boolean {
  const known = boundAgentLabels(order, nodeSet);
  const asRequirements: Requirement[] = [
    ...Object.entries(selector.matchLabels ?? {}).map(([key, v]) => ({ key, operator: "In", values: [v] })),
    ...(selector.matchExpressions ?? []),
  ];
  return asRequirements.every((r) => requirementMayHold(r, known));
}

export interface PoolConflict {
  pool: string;
  /** The node set the pool serves (its osac.openshift.io/node-set label). */
  servedSet: string;
  /** Other node sets of the order whose Agents the pool's selector may select. */
  otherSets: string[];
}

/**
 * Pools serving one of `nodeSets` (by label) whose selector may select another of them. A pool without
 * a selector, or an order with a single node set, has nothing to tell apart.
 */
export function poolConflicts(nodePools: readonly ObservedNodePool[], order: ClusterOrder, nodeSets: readonly string[]): PoolConflict[] {
  const sets = [...new Set(nodeSets)].sort();
  const out: PoolConflict[] = [];
  for (const pool of [...nodePools].sort((a, b) => a.name.localeCompare(b.name))) {
    const served = pool.nodeSet;
    if (!pool.agentSelector || served === undefined || !sets.includes(served)) continue;
    const selector = pool.agentSelector;
    const otherSets = sets.filter((t) => t !== served && maySelectNodeSet(selector, order, t));
    if (otherSets.length > 0) out.push({ pool: pool.name, servedSet: served, otherSets });
  }
  return out;
}

export function describeConflict(c: PoolConflict): string {
  const others = c.otherSets.join(", ");
  return `NodePool ${c.pool} (node set ${c.servedSet}) may also select the Agents of node set${c.otherSets.length > 1 ? "s" : ""} ${others}: ` +
    `its agentLabelSelector does not require ${NODE_SET_LABEL}=${c.servedSet}`;
}
