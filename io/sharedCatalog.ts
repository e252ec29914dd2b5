// The catalog every order's observation shares: the BareMetalInstanceTypes, the system catalog item and
// its template's HostType, and instance types turned into what the planner needs from them.
import type { FulfillmentApi } from "../clients/fulfillment";
import { catalogHostType, ensureSystemCatalogItem, usableInterfaces } from "../clients/fulfillment";
import type { BareMetalInstanceTypeOut, CatalogHostType, SystemCatalogItem } from "../clients/fulfillment";
import { SYSTEM_CATALOG_ITEM } from "../planner/names";
import type { InstanceTypeInfo } from "../planner/types";

export const NO_HOST_TYPE: CatalogHostType = { kind: "none", note: "not looked up" };

/**
 * An instance type as the planner needs it. Its fabric port is the first one the HostType of the
 * catalog item's template accepts, since the server checks attachments against that HostType; when
 * it accepts none, no port is guessed: the node set's creates are blocked with the reason.
 */
export function instanceTypeInfo(t: BareMetalInstanceTypeOut, hostType: CatalogHostType = NO_HOST_TYPE): InstanceTypeInfo {
  const name = t.metadata?.name ?? t.id;
  const fabric = (t.spec?.hardware?.network_ports ?? []).filter((p) => p.role === "fabric").map((p) => p.name);
  if (hostType.kind === "none") return { name, fabricPort: fabric[0] };
  if (hostType.kind === "unresolved") {
    return { name, interfaceProblem: `${hostType.message}; the fulfillment-service would refuse every network attachment`,
      hostType: { name: "", interfaces: [] } };
  }
  const interfaces = hostType.interfaces.map((i) => ({ ...i }));
  const usable = new Set(usableInterfaces(interfaces).map((i) => i.name));
  const fabricPort = fabric.find((p) => usable.has(p));
  if (fabricPort || fabric.length === 0) return { name, ...(fabricPort ? { fabricPort } : {}), hostType: { name: hostType.hostType, interfaces } };
  return {
    name,
    interfaceProblem: `no fabric port of BareMetalInstanceType ${name} (${fabric.join(", ")}) is a usable interface of HostType ` +
      `${hostType.hostType} (template ${hostType.template}: ${[...usable].join(", ") || "none"}), which the fulfillment-service checks attachments against`,
    hostType: { name: hostType.hostType, interfaces },
  };
}

/**
 * What one observation's fulfillment reads add to as they go, so that a pass which fails half-way still
 * counts its calls: the calls made, and whether one of its reads (not the cache) saw a tenant-system
 * object (orderBmis.ts SystemTenantInvisibleError).
 */
export interface FulfillmentTally {
  calls: number;
  systemSeen: boolean;
}

export type SharedCatalog = readonly [BareMetalInstanceTypeOut[], SystemCatalogItem, CatalogHostType];

/**
 * Loads the shared catalog. The template and HostType are loaded with it, so that a cached catalog adds
 * no calls per order on a steady tick.
 */
export async function loadSharedCatalog(
  f: Pick<FulfillmentApi, "instanceTypes" | "catalogItems" | "templates" | "hostTypes">, create: boolean, tally: FulfillmentTally,
): Promise<SharedCatalog> {
  const [types, item] = await Promise.all([
    f.instanceTypes.listAll(),
    ensureSystemCatalogItem(f.catalogItems, SYSTEM_CATALOG_ITEM, { create }),
  ]);
  tally.calls += 2;
  if (item.ok) tally.systemSeen = true;
  const hostType = item.ok ? await catalogHostType(f, item.template) : { value: NO_HOST_TYPE, calls: 0 };
  tally.calls += hostType.calls;
  return [types, item, hostType.value] as const;
}

/** The shared catalog as a snapshot holds it: "" is "unresolved" (the planner's gate then blocks every create). */
export function catalogInputs([types, item, hostType]: SharedCatalog):
  { instanceTypes: Record<string, InstanceTypeInfo>; catalogItem: string; catalogItemError?: string } {
  const instanceTypes: Record<string, InstanceTypeInfo> = {};
  for (const t of types) instanceTypes[t.metadata?.name ?? t.id] = instanceTypeInfo(t, hostType);
  return item.ok ? { instanceTypes, catalogItem: item.id } : { instanceTypes, catalogItem: "", catalogItemError: item.message };
}
