// The hub's creates and deletes in flight as a program or a preview reads them from the world
// (io/hubInFlight.ts): creates from each order's status, deletes from the service's BMIs being deleted,
// within the namespaces this reconciler counts.
import type { BareMetalInstanceOut, FulfillmentApi } from "../../clients/fulfillment";
import { observeHubInFlight, othersInFlight } from "../../io/hubInFlight";
import { ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";
import { entry, makeOrder } from "../planner/builders";

function order(namespace: string, uid: string, phases: string[]): ClusterOrder {
  const o = makeOrder({ workers: phases.map((p, i) => entry(`w${i}`, { phase: p as "Provisioning", bareMetalInstance: { name: `b${i}`, id: `id-${uid}-${i}` } })) });
  o.metadata = { ...o.metadata, namespace, uid };
  return o;
}

const bmi = (uid: string, deleting: boolean): BareMetalInstanceOut =>
  ({ id: `${uid}-${Math.random()}`, metadata: { name: "x", labels: { [ORDER_LABEL]: uid }, ...(deleting ? { deletion_timestamp: "2026-12-05T00:00:00Z" } : {}) } }) as unknown as BareMetalInstanceOut;

describe("the hub's count read from the world", () => {
  const orders = [order("team-a", "a", ["Provisioning", "WaitingForAgent", "Ready"]), order("team-b", "b", ["Provisioning"])];
  const kube = { listClusterOrders: async (ns?: string) => orders.filter((o) => !ns || o.metadata.namespace === ns) };
  const f = { bareMetalInstances: { listAll: async () => [bmi("a", true), bmi("a", false), bmi("b", true), bmi("elsewhere", true)] } } as unknown as Pick<FulfillmentApi, "bareMetalInstances">;

  it("counts every namespace by default, and only the orders it lists", async () => {
    const counts = await observeHubInFlight(kube, f);
    expect(counts.get("a")).toEqual({ creates: 2, deletes: 1 });
    expect(counts.get("b")).toEqual({ creates: 1, deletes: 1 });
    expect(counts.has("elsewhere")).toBe(false);
    expect(othersInFlight(counts, "a")).toEqual({ creates: 1, deletes: 1 });
  });

  it("counts only the namespaces this reconciler is given (BMW_HUB_NAMESPACES)", async () => {
    const counts = await observeHubInFlight(kube, f, ["team-a"]);
    expect([...counts.keys()]).toEqual(["a"]);
    expect(othersInFlight(counts, "a")).toEqual({ creates: 0, deletes: 0 });
  });
});
