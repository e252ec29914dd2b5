// The standard CRUD shape every private fulfillment service shares (fulfillment-api.md §2.1), typed
// from the generated service definition of one resource.
import type { FieldMask, Metadata } from "./types";
import type { CreateOptions, ListOptions, ResourceApi, UpdateOptions } from "./api";
import type { CallOptions, UnaryCaller, UnaryMethod } from "./connection";
import type { CelFilter } from "./filter";
import { collectPages, ListPage, MAX_PAGE_SIZE, type PageLimit, pageLimit } from "./paging";

/** Every object the program creates through the private API belongs to the built-in system tenant. */
export const SYSTEM_TENANT = "system";

export interface CrudMethods<O, OOut> {
  List: UnaryMethod<{ offset?: number; limit?: number; filter?: string }, { size: number; total: number; items: OOut[] }>;
  Get: UnaryMethod<{ id?: string }, { object: OOut | null }>;
  Create: UnaryMethod<{ object?: O | null }, { object: OOut | null }>;
  Update: UnaryMethod<{ object?: O | null; update_mask?: FieldMask | null; lock?: boolean }, { object: OOut | null }>;
  Delete: UnaryMethod<{ id?: string }, object>;
  Signal: UnaryMethod<{ id?: string }, object>;
}

/** A List answer held an object without an id: a protocol error, not retried. */
export class MissingIdError extends Error {
  override name = "MissingIdError";
}

export class ResourceClient<O extends { metadata?: Metadata | null }, OOut> implements ResourceApi<O, OOut> {
  /** The page size this kind's listings fit the channel with (BMIs carry their ignition). */
  private readonly pageLimit: PageLimit = pageLimit();

  constructor(
    private readonly conn: UnaryCaller,
    private readonly methods: CrudMethods<O, OOut>,
  ) {}

  /** One page. Idempotent: retried on UNAVAILABLE/DEADLINE_EXCEEDED. */
  async list(opts: ListOptions = {}): Promise<ListPage<OOut>> {
    if (opts.limit !== undefined && (opts.limit < 0 || opts.limit > MAX_PAGE_SIZE)) {
      throw new Error(`limit must be within 0..${MAX_PAGE_SIZE}, got ${opts.limit}`);
    }
    const res = await this.conn.unary(this.methods.List,
      { offset: opts.offset, limit: opts.limit, filter: opts.filter?.text }, { idempotent: true });
    return { items: res.items, size: res.size, total: res.total };
  }

  /**
   * Every match, page by page; InconsistentListError when the pages do not add up to one complete list.
   * An item without an id fails the listing at once (MissingIdError): it could be neither told apart
   * from a duplicate nor read, deleted or confirmed gone by id, so no caller could use the list.
   */
  listAll(filter?: CelFilter, pageSize = MAX_PAGE_SIZE): Promise<OOut[]> {
    const method = this.methods.List.path;
    return collectPages((offset, limit) => this.list({ filter, offset, limit }), {
      // A caller's own smaller page size is its choice, not something the kind learned.
      pageSize, learned: pageSize >= MAX_PAGE_SIZE ? this.pageLimit : undefined,
      key: (o) => {
        const id = (o as { id?: string }).id;
        if (!id) throw new MissingIdError(`${method}: the service sent an item without an id; the list cannot be used`);
        return id;
      },
    });
  }

  /** Idempotent. NotFoundError when it does not exist or is invisible. */
  async get(id: string): Promise<OOut> {
    const res = await this.conn.unary(this.methods.Get, { id }, { idempotent: true });
    return this.objectOf(res, this.methods.Get.path);
  }

  /**
   * Never retried: a lost response may hide a committed Create. Use createOrAdopt for a create that
   * can be repeated safely. metadata.tenant is always set to "system" explicitly, because an admin
   * Create without a tenant lands in "shared", which every tenant can see.
   */
  async create(object: O, opts: CreateOptions = {}): Promise<OOut> {
    const tenant = object.metadata?.tenant;
    if (tenant && tenant !== SYSTEM_TENANT) {
      throw new Error(`refusing to create an object in tenant '${tenant}': private creates use '${SYSTEM_TENANT}'`);
    }
    const request = { object: { ...object, metadata: { ...object.metadata, tenant: SYSTEM_TENANT } } };
    const metadata: CallOptions["metadata"] = opts.dryRun ? { "x-dry-run": "true" } : undefined;
    const res = await this.conn.unary(this.methods.Create, request, { idempotent: false, metadata });
    return this.objectOf(res, this.methods.Create.path);
  }

  /** Not retried: with lock = true a repeat of a committed update would fail with ABORTED. */
  async update(object: O, opts: UpdateOptions = {}): Promise<OOut> {
    const request = {
      object,
      update_mask: opts.updateMask ? { paths: opts.updateMask } : null,
      lock: opts.lock ?? false,
    };
    const res = await this.conn.unary(this.methods.Update, request, { idempotent: false });
    return this.objectOf(res, this.methods.Update.path);
  }

  /**
   * Starts an asynchronous delete; the object stays visible with deletion_timestamp until its
   * finalizers are gone. Idempotent. NotFoundError when already gone.
   */
  async delete(id: string): Promise<void> {
    await this.conn.unary(this.methods.Delete, { id }, { idempotent: true });
  }

  /** Asks the service to emit a SIGNALED event for the object. Idempotent. */
  async signal(id: string): Promise<void> {
    await this.conn.unary(this.methods.Signal, { id }, { idempotent: true });
  }

  private objectOf(res: { object: OOut | null }, path: string): OOut {
    if (!res.object) throw new Error(`${path}: response without object`);
    return res.object;
  }
}
