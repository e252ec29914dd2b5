// The hub-wide blast-radius caps need every order's creates and deletes in flight (planner/context.ts
// says what counts): creates from each ClusterOrder's status, deletes from the service's BMIs of each order
// that are being deleted. The reconciler keeps these in a ledger (controller/hubLedger.ts); a program that
// observes for itself (an admin's preview) reads them from the world here, as the ledger does at each pass.
import type { FulfillmentApi } from "../clients/fulfillment";
import { Filter, observedBmi, SYSTEM_TENANT } from "../clients/fulfillment";
import type { HubApi } from "../clients/kube";
import { createsInFlight } from "../planner/context";
import { ORDER_LABEL } from "../planner/names";
import type { InFlight } from "../planner/types";

/**
 * In flight per order uid, for every order of the hub in `namespaces` (empty: every namespace; orders with
 * nothing in flight may be absent). BMIs count only for the orders listed: another reconciler's orders
 * (other namespaces) are not this hub's count.
 */
export async function observeHubInFlight(kube: Pick<HubApi, "listClusterOrders">, f: Pick<FulfillmentApi, "bareMetalInstances">,
  namespaces: readonly string[] = []): Promise<Map<string, InFlight>> {
  const [lists, bmis] = await Promise.all([
    Promise.all(namespaces.length ? namespaces.map((ns) => kube.listClusterOrders(ns)) : [kube.listClusterOrders()]),
    f.bareMetalInstances.listAll(Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.hasLabel(ORDER_LABEL))),
  ]);
  const out = new Map<string, InFlight>();
  for (const o of lists.flat()) out.set(o.metadata.uid, { creates: createsInFlight(o.status?.workers ?? []), deletes: 0 });
  for (const b of bmis) {
    const counted = out.get(b.metadata?.labels?.[ORDER_LABEL] ?? "");
    if (counted && observedBmi(b).state === "Deleting") counted.deletes++;
  }
  return out;
}

/** The sum over every order but `uid`. */
export function othersInFlight(counts: ReadonlyMap<string, InFlight>, uid: string): InFlight {
  const sum = { creates: 0, deletes: 0 };
  for (const [other, n] of counts) {
    if (other === uid) continue;
    sum.creates += n.creates;
    sum.deletes += n.deletes;
  }
  return sum;
}

/** Whether a hub-wide cap is set (only then is the hub's count read). */
export function hubCapped(config: { hubMaxCreatesInFlight: number; hubMaxDeletesInFlight: number }): boolean {
  return config.hubMaxCreatesInFlight > 0 || config.hubMaxDeletesInFlight > 0;
}
