// NodePool replicas (OSAC-2135 §5.2 conflict): one source of truth, replicas = the node set's requested
// numberOfNodes. A NodePool serves a node set when it is labelled osac.openshift.io/node-set=<set>; an
// unlabelled NodePool serves the node set only when it is the single NodePool and there is a single
// bare-metal node set. Anything else is reported and left unchanged. A pool whose agentLabelSelector may
// select another node set's Agents is reported too (its node sets are frozen by the gates).
import { COND_NODEPOOL_UNMAPPED, cond, type ConditionInput } from "./conditions";
import type { NodeSetSpec } from "./gates";
import type { ObservedNodePool } from "./types";

export interface NodePoolMapping {
  replicas: Record<string, number>;
  /** One message per node set whose NodePool is missing or ambiguous. */
  problems: string[];
}

export function mapNodePools(
  nodePools: readonly ObservedNodePool[], nodeSets: ReadonlyMap<string, NodeSetSpec>, orphanNodeSets: readonly string[],
): NodePoolMapping {
  const replicas: Record<string, number> = {};
  const problems: string[] = [];
  const single = nodePools.length === 1 && nodeSets.size === 1 ? nodePools[0] : undefined;
  for (const spec of [...nodeSets.values()].sort((a, b) => a.nodeSet.localeCompare(b.nodeSet))) {
    if (spec.frozen) continue;
    const labelled = nodePools.filter((p) => p.nodeSet === spec.nodeSet);
    if (labelled.length === 1) {
      replicas[labelled[0].name] = spec.desired;
    } else if (labelled.length > 1) {
      problems.push(`NodePools ${labelled.map((p) => p.name).sort().join(", ")} are all labelled for node set ${spec.nodeSet}; their replicas are left unchanged`);
    } else if (single && single.nodeSet === undefined) {
      replicas[single.name] = spec.desired;
    } else {
      problems.push(`no NodePool serves node set ${spec.nodeSet} (label one with osac.openshift.io/node-set=${spec.nodeSet}); its replicas are not set`);
    }
  }
  // A node set removed from the spec scales its labelled NodePool to zero.
  for (const nodeSet of orphanNodeSets) {
    const labelled = nodePools.filter((p) => p.nodeSet === nodeSet);
    if (labelled.length === 1) replicas[labelled[0].name] = 0;
  }
  return { replicas, problems };
}

/** NodePoolUnmapped: True for an ambiguous selector (reason AmbiguousAgentSelector) or an unmapped node set. */
export function nodePoolCondition(mapping: NodePoolMapping, selectorConflicts: readonly string[]): ConditionInput {
  if (selectorConflicts.length > 0) {
    return cond(COND_NODEPOOL_UNMAPPED, "True", "AmbiguousAgentSelector", [...selectorConflicts, ...mapping.problems].join("; "));
  }
  return mapping.problems.length > 0
    ? cond(COND_NODEPOOL_UNMAPPED, "True", "NodePoolUnmapped", mapping.problems.join("; "))
    : cond(COND_NODEPOOL_UNMAPPED, "False", "NodePoolsMapped", "every bare-metal node set has its NodePool");
}
