// The seam between the program and the fulfillment service: the calls the program makes, and nothing
// else. FulfillmentClient implements it over gRPC; tests/fakes/fulfillment.ts in memory. Reads are
// offered on every resource; writes only where the program writes (BMIs, the system catalog item).
import type { OpenStream } from "./connection";
import type { CelFilter } from "./filter";
import type { ListPage } from "./paging";
import type {
  BareMetalInstance, Event, BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItemOut, BareMetalInstanceOut,
  BareMetalInstanceTemplateOut, BareMetalInstanceTypeOut, ClusterOut, ClusterVersionOut, DiskImageOut, HostTypeOut,
} from "./types";

export interface ListOptions {
  filter?: CelFilter;
  offset?: number;
  /** At most 1000; the server defaults to 100. */
  limit?: number;
}

export interface CreateOptions {
  /** Validate and default without persisting (x-dry-run). */
  dryRun?: boolean;
}

export interface UpdateOptions {
  /** Paths to copy; without one the object replaces the stored object entirely. */
  updateMask?: string[];
  /** Fail with AbortedError unless object.metadata.version is the stored version. */
  lock?: boolean;
}

/** The standard CRUD calls of one private service (fulfillment-api.md §2.1), as the program makes them. */
export interface ResourceApi<O, OOut> {
  /** One page. */
  list(opts?: ListOptions): Promise<ListPage<OOut>>;
  /** Every match; InconsistentListError when the pages do not add up to one complete list. */
  listAll(filter?: CelFilter, pageSize?: number): Promise<OOut[]>;
  /** NotFoundError when it does not exist or the caller cannot see it. */
  get(id: string): Promise<OOut>;
  /** Always in tenant "system"; ALREADY_EXISTS when the id or the name is taken. */
  create(object: O, opts?: CreateOptions): Promise<OOut>;
  update(object: O, opts?: UpdateOptions): Promise<OOut>;
  /** Asynchronous: the object may stay visible with deletion_timestamp. NotFoundError when gone. */
  delete(id: string): Promise<void>;
}

/** Only reads. */
export type ResourceReader<OOut> = Pick<ResourceApi<never, OOut>, "list" | "listAll" | "get">;

export interface FulfillmentApi {
  readonly bareMetalInstances: ResourceApi<BareMetalInstance, BareMetalInstanceOut>;
  /** Read, and the one create of the system catalog item. */
  readonly catalogItems: ResourceReader<BareMetalInstanceCatalogItemOut> &
    Pick<ResourceApi<BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItemOut>, "create">;
  readonly instanceTypes: ResourceReader<BareMetalInstanceTypeOut>;
  readonly templates: ResourceReader<BareMetalInstanceTemplateOut>;
  readonly hostTypes: ResourceReader<HostTypeOut>;
  readonly diskImages: ResourceReader<DiskImageOut>;
  readonly clusterVersions: ResourceReader<ClusterVersionOut>;
  readonly clusters: ResourceReader<ClusterOut>;
  close(): void;
}

/** What a watcher of the Events stream is told: each event, that the server has the stream, that it ended. */
export interface EventHandlers {
  /** The server has sent its response headers: every change from now on reaches this stream. */
  onOpen?: () => void;
  onEvent: (event: Event) => void;
  /** Once, when the stream ends for any reason but close(). */
  onEnd: (err: unknown) => void;
}

/** The private Events service: no replay, no delivery or order guarantee (fulfillment-api.md §6). */
export interface EventsApi {
  watch(filter: CelFilter | undefined, handlers: EventHandlers): OpenStream;
}
