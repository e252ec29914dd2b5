// A digest of each order's BMIs as the planner sees them, for the whole hub from one paged List or from
// the BMI cache (io/bmiCache.ts): how a steady pass tells that nothing changed on the fulfillment-service
// for a settled order without reading anything per order (controller/settledOrders.ts). A digest only
// ever lets a reconcile be skipped; it never stands in for an observation that plans.
import * as crypto from "node:crypto";
import type { BareMetalInstanceOut, FulfillmentApi } from "../clients/fulfillment";
import { Filter, observedBmi, SYSTEM_TENANT } from "../clients/fulfillment";
import { ORDER_LABEL } from "../planner/names";
import type { ObservedBmi } from "../planner/types";

/** Independent of the order the BMIs came in; equal exactly when the planner would see the same BMIs. */
export function bmiDigest(bmis: readonly ObservedBmi[]): string {
  const sorted = [...bmis].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return crypto.createHash("sha256").update(JSON.stringify(sorted)).digest("hex");
}

/** The uid of the order a BMI belongs to (its order label); undefined for one of no order. */
export function orderUidOf(b: BareMetalInstanceOut): string | undefined {
  return b.metadata?.labels?.[ORDER_LABEL] || undefined;
}

/** Every system-tenant BMI that carries an order label, listed once (paged, all-or-nothing: a listing that does not add up throws). */
export function listOrderBmis(f: Pick<FulfillmentApi, "bareMetalInstances">): Promise<BareMetalInstanceOut[]> {
  return f.bareMetalInstances.listAll(Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.hasLabel(ORDER_LABEL)));
}

/** The BMIs grouped by their order label's uid, digested. An order with no BMI has no entry: its digest is that of the empty list. */
export function orderBmiDigests(items: readonly BareMetalInstanceOut[]): Map<string, string> {
  const byOrder = new Map<string, ObservedBmi[]>();
  for (const b of items) {
    const uid = orderUidOf(b);
    if (!uid) continue;
    const list = byOrder.get(uid) ?? [];
    list.push(observedBmi(b));
    byOrder.set(uid, list);
  }
  return new Map([...byOrder].map(([uid, bmis]) => [uid, bmiDigest(bmis)]));
}

/** Each order's BMI digest from one listing of the hub's BMIs. */
export async function listOrderBmiDigests(f: Pick<FulfillmentApi, "bareMetalInstances">): Promise<Map<string, string>> {
  return orderBmiDigests(await listOrderBmis(f));
}
