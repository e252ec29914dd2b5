// Create that can be repeated safely. A Create whose response was lost (UNAVAILABLE, DEADLINE_EXCEEDED)
// or that reports ALREADY_EXISTS is resolved by looking the object up by name + owner labels and adopting
// it. Names are unique per (tenant, project) on the server, so a repeat can never make a second object.
// ALREADY_EXISTS is called "another owner's" only after an object of that name with other labels was
// seen: a List can leave out our own object, and a definitive rejection would then orphan it.
import { RetryClock, RetryPolicy, retry } from "../retry";
import { AlreadyExistsError, isTransient, UnavailableError } from "./errors";
import { Filter } from "./filter";
import type { ResourceApi } from "./api";
import { SYSTEM_TENANT } from "./resource";
import type { BareMetalInstance, BareMetalInstanceOut } from "./types";

/** The name is held by an object that is being deleted; it must not be adopted (OSAC-3266). */
export class BeingDeletedError extends Error {
  override name = "BeingDeletedError";
  constructor(readonly existing: BareMetalInstanceOut) {
    super(`BareMetalInstance '${existing.metadata?.name}' (${existing.id}) is being deleted; wait until it is gone ` +
      `or use a fresh name`);
  }
}

/**
 * ALREADY_EXISTS, but no List showed the holder of the name (a List left it out): the outcome is unknown
 * for now, and a later attempt adopts it or sees whose it is. Retried; never a definitive rejection.
 */
export class NameHolderUnseenError extends Error {
  override name = "NameHolderUnseenError";
  constructor(name: string, cause: AlreadyExistsError) {
    super(`the name '${name}' is taken (ALREADY_EXISTS) but no List shows its holder; whether it is ours is not known yet`, { cause });
  }
}

export interface CreateOrAdoptOptions {
  /** Labels that prove ownership; an object with this name but other labels is never adopted. */
  ownerLabels: Record<string, string>;
  retry?: Partial<RetryPolicy>;
  clock?: RetryClock;
}

export interface CreateOrAdoptResult {
  bmi: BareMetalInstanceOut;
  /** true when the object already existed (earlier attempt, lost response, concurrent creator). */
  adopted: boolean;
}

export async function createOrAdopt(
  bmis: Pick<ResourceApi<BareMetalInstance, BareMetalInstanceOut>, "list" | "listAll" | "get" | "create">,
  object: BareMetalInstance,
  opts: CreateOrAdoptOptions,
): Promise<CreateOrAdoptResult> {
  const name = object.metadata?.name;
  if (!name) throw new Error("createOrAdopt needs metadata.name: adoption is by name");
  const labels = object.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(opts.ownerLabels)) {
    if (labels[k] !== v) throw new Error(`owner label ${k} must also be set on the object`);
  }
  const filter = Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.nameEquals(name), Filter.labelsMatch(opts.ownerLabels));
  const find = async () => (await bmis.list({ filter, limit: 1 })).items[0];
  const ours = (bmi: BareMetalInstanceOut) => Object.entries(opts.ownerLabels).every(([k, v]) => bmi.metadata?.labels?.[k] === v);
  /** Every holder of the name in tenant system, whatever its labels. */
  const holders = () => bmis.listAll(Filter.and(Filter.tenantEquals(SYSTEM_TENANT), Filter.nameEquals(name)));
  const adopt = (bmi: BareMetalInstanceOut): CreateOrAdoptResult => {
    if (bmi.metadata?.deletion_timestamp) throw new BeingDeletedError(bmi);
    return { bmi, adopted: true };
  };

  return retry(async () => {
    const existing = await find(); // list-before-create: a replay makes no mutating call
    if (existing) return adopt(existing);
    try {
      const created = await bmis.create(object);
      // The stored object, not the Create response: the response echoes fields the server drops on storage.
      return { bmi: await bmis.get(created.id), adopted: false };
    } catch (err) {
      if (!(err instanceof AlreadyExistsError || err instanceof UnavailableError)) throw err;
      const found = await find();
      if (found) return adopt(found);
      if (err instanceof UnavailableError) throw err; // outcome still unknown (retried)
      const seen = await holders();
      const own = seen.find(ours);
      if (own) return adopt(own);
      if (seen.length > 0) throw err; // held by another owner: definitive
      throw new NameHolderUnseenError(name, err);
    }
  }, { policy: opts.retry, clock: opts.clock, retryable: (err) => isTransient(err) || err instanceof NameHolderUnseenError });
}
