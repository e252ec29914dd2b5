// The HostType a BMI's network attachment is checked against: the one named by the template of the
// catalog item the BMI is created from (fulfillment-api.md §3.5 step 6, §4.2, §4.5). The server
// refuses an interface that HostType does not list, or lists with role "lifecycle", whatever the
// BareMetalInstanceType's network_ports say.
import { NotFoundError } from "./errors";
import { Filter } from "./filter";
import type { ResourceApi, ResourceReader } from "./api";
import type { BareMetalInstanceTemplateOut, HostTypeOut } from "./types";

export interface HostTypeInterface {
  name: string;
  role: string;
}

export type CatalogHostType =
  /** No interface check is known: the item has no template, its template no host_type, or the template is not found. */
  | { kind: "none"; note: string }
  | { kind: "found"; template: string; hostType: string; interfaces: HostTypeInterface[] }
  /** The template or its HostType cannot be told (missing HostType, ambiguous name): no interface can be trusted. */
  | { kind: "unresolved"; message: string };

export interface TemplateRef {
  id?: string;
  name?: string;
}

export interface HostTypeReaders {
  templates: ResourceReader<BareMetalInstanceTemplateOut>;
  hostTypes: ResourceReader<HostTypeOut>;
}

/** Interfaces of a HostType a tenant attachment may use (the server refuses role "lifecycle"). */
export function usableInterfaces(interfaces: readonly HostTypeInterface[]): HostTypeInterface[] {
  return interfaces.filter((i) => i.role !== "lifecycle");
}

async function getOrUndefined<T>(get: () => Promise<T>): Promise<T | undefined> {
  try {
    return await get();
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
}

/**
 * By id, else by name (the server resolves a reference by id when one is given). Several live objects
 * of one name → "ambiguous": the server's answer cannot be predicted, so nothing is guessed.
 */
async function byIdOrName<T>(
  client: Pick<ResourceApi<never, T>, "get" | "listAll">, ref: TemplateRef, counter: { calls: number },
): Promise<T | "ambiguous" | undefined> {
  if (ref.id) {
    counter.calls++;
    const found = await getOrUndefined(() => client.get(ref.id!));
    if (found || !ref.name) return found;
  }
  if (!ref.name) return undefined;
  counter.calls++;
  const named = await client.listAll(Filter.and(Filter.nameEquals(ref.name), Filter.notDeleted()));
  if (named.length > 1) return "ambiguous";
  return named[0];
}

/**
 * Follows catalog item template → host_type → HostType. Transport and permission failures throw (the
 * catalog is then unknown for this observation); a missing object is an answer.
 */
export async function catalogHostType(readers: HostTypeReaders, template: TemplateRef | null | undefined)
  : Promise<{ value: CatalogHostType; calls: number }> {
  const counter = { calls: 0 };
  const done = (value: CatalogHostType) => ({ value, calls: counter.calls });
  if (!template || (!template.id && !template.name)) return done({ kind: "none", note: "the catalog item has no template" });
  const shown = template.id || template.name!;
  const tpl = await byIdOrName(readers.templates, template, counter);
  if (tpl === "ambiguous") {
    return done({ kind: "unresolved", message: `several BareMetalInstanceTemplates are named '${template.name}'` });
  }
  if (!tpl) return done({ kind: "none", note: `the BareMetalInstanceTemplate '${shown}' was not found` });
  const wanted = tpl.host_type;
  if (!wanted) return done({ kind: "none", note: `the BareMetalInstanceTemplate '${tpl.id}' has no host_type` });
  // host_type is a plain string holding an id or a name.
  const ht = await byIdOrName(readers.hostTypes, { id: wanted, name: wanted }, counter);
  if (ht === "ambiguous") {
    return done({ kind: "unresolved",
      message: `the HostType '${wanted}' of BareMetalInstanceTemplate '${tpl.id}' is ambiguous (several HostTypes have that name)` });
  }
  if (!ht) {
    return done({ kind: "unresolved", message: `the HostType '${wanted}' of BareMetalInstanceTemplate '${tpl.id}' does not exist` });
  }
  return done({
    kind: "found", template: tpl.id, hostType: ht.metadata?.name || ht.id,
    interfaces: ht.interfaces.map((i) => ({ name: i.name, role: i.role })),
  });
}
