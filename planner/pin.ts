// A rollback pin: the requested counts recorded with an earlier update replace the order's requested
// counts for the same node sets until an admin unpins the stack. The pin is honest about itself: the
// order's `desiredWorkers` keeps reporting the request, and the Pinned condition says which update the
// workers follow and which requests are ignored meanwhile.
import { cond, COND_PINNED, type ConditionInput } from "./conditions";
import type { ClusterOrder } from "./types";

export type NodeSetCounts = Record<string, number>;

export interface Pin {
  counts: NodeSetCounts;
  /** The stack update whose recorded counts these are (absent in a pin written before it was recorded). */
  update?: number;
}

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

const isCount = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;

function countsOf(doc: unknown): NodeSetCounts | undefined {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc) || !Object.values(doc).every(isCount)) return undefined;
  return { ...(doc as NodeSetCounts) };
}

/**
 * The stack config `pin` as `rollback` writes it: `{"update": N, "counts": {node set: count}}`, or the bare
 * counts map of earlier releases. Anything else is refused, not guessed at.
 */
export function parsePin(raw: string): Pin {
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch {
    doc = undefined;
  }
  const record = typeof doc === "object" && doc !== null && !Array.isArray(doc) ? (doc as Record<string, unknown>) : undefined;
  if (record && "counts" in record) {
    const counts = countsOf(record.counts);
    const update = record.update;
    const extra = Object.keys(record).filter((k) => k !== "counts" && k !== "update");
    if (counts && extra.length === 0 && (update === undefined || (isCount(update) && (update as number) > 0))) {
      return update === undefined ? { counts } : { counts, update: update as number };
    }
  } else {
    const counts = countsOf(doc);
    if (counts) return { counts };
  }
  throw new Error(`the stack config 'pin' is not a map of node set to worker count: ${raw.slice(0, 200)}`);
}

export function formatPin(pin: Pin): string {
  return JSON.stringify(pin.update === undefined ? { counts: pin.counts } : { update: pin.update, counts: pin.counts });
}

const countsText = (counts: NodeSetCounts) => Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(", ");

/** The Pinned condition: which update the workers follow, and which of the order's requests wait for `unpin`. */
export function pinnedCondition(order: ClusterOrder, pin: Pin | undefined): ConditionInput {
  if (!pin) return cond(COND_PINNED, "False", "FollowsRequest", "the workers follow the ClusterOrder's requested counts");
  const requested = Object.fromEntries((order.spec.nodeRequests ?? []).filter((r) => r.nodeSet in pin.counts)
    .map((r) => [r.nodeSet, r.numberOfNodes]));
  const ignored = Object.fromEntries(Object.entries(requested).filter(([k, n]) => pin.counts[k] !== n));
  const source = pin.update === undefined ? "an earlier update" : `update ${pin.update}`;
  return cond(COND_PINNED, "True", "RolledBack",
    `rolled back: the workers follow the counts of ${source} (${countsText(pin.counts)}) until \`baremetal-workers unpin\`; ` +
    (Object.keys(ignored).length > 0 ? `the requested ${countsText(ignored)} is ignored meanwhile` : "the requested counts are the same"));
}
