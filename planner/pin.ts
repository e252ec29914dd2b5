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

/** The stack config `pin` as `rollback` writes it: node set → count. Anything else is refused, not guessed at. */
export function parsePin(raw: string): Record<string, number> {
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch {
    doc = undefined;
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)
    || !Object.values(doc).every((n) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0)) {
    throw new Error(`the stack config 'pin' is not a map of node set to worker count: ${raw.slice(0, 200)}`);
  }
  return { ...(doc as Record<string, number>) };
}
