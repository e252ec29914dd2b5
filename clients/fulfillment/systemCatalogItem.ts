// The system-owned pass-through BareMetalInstanceCatalogItem every BMI is created from (OSAC-2135
// §2.6): found by name in tenant "system", created when missing. Its id is what a Create sends: the
// server resolves a reference by id when one is given, so a name sent as an id fails every Create.
import { AlreadyExistsError } from "./errors";
import { Filter } from "./filter";
import type { ResourceApi } from "./api";
import { SYSTEM_TENANT } from "./resource";
import type { BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItemOut } from "./types";

/** The bare-metal host provisioning template the installer's item uses (design §9). */
export const SYSTEM_CATALOG_TEMPLATE = "osac.templates.bm_host_provisioning";

export type SystemCatalogItem =
  /** template: the item's BareMetalInstanceTemplate reference, whose HostType governs attachment interfaces. */
  | { ok: true; id: string; created: boolean; template?: { id: string; name: string } }
  /** Neither found nor created: no BMI can be created until it is. */
  | { ok: false; message: string };

/** The item as the design describes it: published, tenant system, no field definitions (everything unlocked). */
export function systemCatalogItemObject(name: string): BareMetalInstanceCatalogItem {
  return {
    metadata: { name, tenant: SYSTEM_TENANT },
    title: "CaaS bare-metal worker pass-through",
    description: "System-owned; all provisioning parameters unlocked. Created by baremetal-workers.",
    template: { id: SYSTEM_CATALOG_TEMPLATE },
    published: true,
    tenant: SYSTEM_TENANT,
    field_definitions: [],
  };
}

function templateOf(item: BareMetalInstanceCatalogItemOut): { template?: { id: string; name: string } } {
  const t = item.template;
  return t && (t.id || t.name) ? { template: { id: t.id, name: t.name } } : {};
}

type CatalogItems = Pick<ResourceApi<BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItemOut>, "listAll" | "create">;

async function find(items: CatalogItems, name: string)
  : Promise<SystemCatalogItem | undefined> {
  const found = await items.listAll(Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.nameEquals(name), Filter.notDeleted()));
  if (found.length === 0) return undefined;
  if (found.length > 1) {
    return { ok: false, message: `${found.length} BareMetalInstanceCatalogItems named '${name}' exist in tenant system (several projects); remove all but one` };
  }
  if (!found[0].published) return { ok: false, message: `the system BareMetalInstanceCatalogItem '${name}' (${found[0].id}) is not published` };
  return { ok: true, id: found[0].id, created: false, ...templateOf(found[0]) };
}

export interface EnsureOptions {
  /**
   * Create the item when it is missing. Only what applies changes (an update, the reconciler) may:
   * a preview or a read-only command only looks, and reports a missing item as { ok: false }.
   */
  create: boolean;
}

/**
 * Finds or creates the item. A failed List throws (the service is not readable); a refused or lost
 * Create is reported as { ok: false } so that creates are blocked with a condition, never sent with a
 * reference the server cannot resolve.
 */
export async function ensureSystemCatalogItem(
  items: CatalogItems,
  name: string,
  opts: EnsureOptions,
): Promise<SystemCatalogItem> {
  const existing = await find(items, name);
  if (existing) return existing;
  if (!opts.create) {
    return { ok: false, message: `the system BareMetalInstanceCatalogItem '${name}' does not exist yet; the next update creates it` };
  }
  try {
    const created = await items.create(systemCatalogItemObject(name));
    return { ok: true, id: created.id, created: true, ...templateOf(created) };
  } catch (err) {
    // A concurrent creator (another reconcile, the installer) got there first.
    const again = err instanceof AlreadyExistsError ? await find(items, name) : undefined;
    if (again) return again;
    return { ok: false, message: `the system BareMetalInstanceCatalogItem '${name}' does not exist and could not be created: ` +
      `${err instanceof Error ? err.message : String(err)}` };
  }
}
