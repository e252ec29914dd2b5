// The order's BMIs as observation sees them: what the List found, and every BMI the order's status
// records that the List left out, confirmed one by one, since absence from a List is not proof of deletion.
import type { FulfillmentApi } from "../clients/fulfillment";
import { Filter, NotFoundError, observedBmi, SYSTEM_TENANT } from "../clients/fulfillment";
import type { BareMetalInstanceOut } from "../clients/fulfillment";
import type { FulfillmentTally } from "./sharedCatalog";
import { SYSTEM_CATALOG_ITEM } from "../planner/names";
import type { ClusterOrder, ObservedBmi } from "../planner/types";

/** BMI ids the order's status records, in order of appearance, once each. */
export function recordedBmiIds(order: ClusterOrder): string[] {
  const ids = (order.status?.workers ?? []).map((w) => w.bareMetalInstance?.id).filter((id): id is string => !!id);
  return [...new Set(ids)];
}

/**
 * Absence from a List is not proof of deletion (I3): every recorded BMI the List left out is read with
 * a Get. Found → the List missed it; NOT_FOUND → confirmed gone; any other failure throws, so the BMI
 * list is unknown this pass.
 */
export async function confirmUnlisted(f: Pick<FulfillmentApi, "bareMetalInstances">, recorded: string[], listedIds: string[]):
  Promise<{ found: BareMetalInstanceOut[]; gone: string[]; calls: number }> {
  const listed = new Set(listedIds);
  const missing = recorded.filter((id) => !listed.has(id));
  const results = await Promise.all(missing.map(async (id) => {
    try {
      return { id, bmi: await f.bareMetalInstances.get(id) };
    } catch (err) {
      if (err instanceof NotFoundError) return { id, bmi: undefined };
      throw err;
    }
  }));
  return {
    found: results.flatMap((r) => (r.bmi ? [r.bmi] : [])),
    gone: results.filter((r) => !r.bmi).map((r) => r.id),
    calls: missing.length,
  };
}

/**
 * The service answers NOT_FOUND for objects the caller cannot see, not only for deleted ones: a token
 * whose subject lost its admin rights would make every recorded BMI look deleted. NOT_FOUND is taken
 * as proof of deletion only when this observation saw a tenant-system object; this is the error when
 * it could not.
 */
export class SystemTenantInvisibleError extends Error {
  override name = "SystemTenantInvisibleError";
  constructor(notFound: number) {
    super(`every recorded BareMetalInstance (${notFound}) answered NOT_FOUND, but this token cannot be shown to see tenant ` +
      `system (the system BareMetalInstanceCatalogItem '${SYSTEM_CATALOG_ITEM}' is not visible to it), so NOT_FOUND may only mean ` +
      "invisible and none is taken as deleted; the token's subject needs admin access to the private API");
  }
}

/** One cheap read that proves the caller sees tenant system: the system catalog item, listed in tenant system. */
export async function seesSystemTenant(f: Pick<FulfillmentApi, "catalogItems">): Promise<boolean> {
  const page = await f.catalogItems.list({
    filter: Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.nameEquals(SYSTEM_CATALOG_ITEM)), limit: 1,
  });
  return page.items.some((i) => i.metadata?.tenant === SYSTEM_TENANT);
}

/**
 * The order's BMIs: those the List found and the recorded ones a Get found; the recorded ones that are
 * confirmed gone. Throws SystemTenantInvisibleError when NOT_FOUND cannot be taken as proof of deletion.
 */
export async function confirmOrderBmis(
  f: Pick<FulfillmentApi, "bareMetalInstances" | "catalogItems">, order: ClusterOrder, listed: BareMetalInstanceOut[], tally: FulfillmentTally,
): Promise<{ bmis: ObservedBmi[]; goneBmiIds: string[] }> {
  const confirmed = await confirmUnlisted(f, recordedBmiIds(order), listed.map((b) => b.id));
  tally.calls += confirmed.calls;
  if (confirmed.gone.length > 0) {
    tally.systemSeen ||= listed.length > 0 || confirmed.found.length > 0;
    if (!tally.systemSeen) {
      tally.systemSeen = await seesSystemTenant(f);
      tally.calls += 1;
    }
    // Unproven means nothing of tenant system was seen at all: every recorded BMI answered NOT_FOUND.
    if (!tally.systemSeen) throw new SystemTenantInvisibleError(confirmed.gone.length);
  }
  return { bmis: [...listed, ...confirmed.found].map(observedBmi), goneBmiIds: confirmed.gone };
}
