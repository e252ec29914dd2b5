// A rollback pin: the requested counts recorded with an earlier update replace the order's requested
// counts for the same node sets until an admin unpins the stack.
import type { ClusterOrder } from "./types";

export type NodeSetCounts = Record<string, number>;

export function withPin(order: ClusterOrder, pin: NodeSetCounts | undefined): ClusterOrder {
  if (!pin) return order;
  return {
    ...order,
    spec: {
      ...order.spec,
      nodeRequests: (order.spec.nodeRequests ?? []).map((r) => (r.nodeSet in pin ? { ...r, numberOfNodes: pin[r.nodeSet] } : r)),
    },
  };
}
