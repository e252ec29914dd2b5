// An in-memory fulfillment service behind the program's FulfillmentApi, for tests that need no
// simulator process. The client half is the product's own ResourceClient (tenant "system" on every
// create, limit checks, paging with listAll), so only the network is replaced: every request and
// response goes through the generated protobuf codec, as on the wire, and failures come back as the
// same typed errors (NotFoundError, AlreadyExistsError, ...). tests/fulfillment/apiContract.test.ts
// holds it to the same cases as the simulator and a real endpoint.
import * as grpc from "@grpc/grpc-js";
import type { MethodDefinition } from "@grpc/proto-loader";
import type { FulfillmentApi } from "../../clients/fulfillment/api";
import type { CallOptions, UnaryCaller, UnaryMethod } from "../../clients/fulfillment/connection";
import { classifyCallError, InvalidArgumentError } from "../../clients/fulfillment/errors";
import { ResourceClient } from "../../clients/fulfillment/resource";
import type {
  BareMetalInstance, BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItemOut, BareMetalInstanceOut,
  BareMetalInstanceTemplate, BareMetalInstanceTemplateOut, BareMetalInstanceType, BareMetalInstanceTypeOut, Cluster,
  ClusterOut, ClusterVersion, ClusterVersionOut, DiskImage, DiskImageOut, HostType, HostTypeOut,
} from "../../clients/fulfillment/types";
import { loadFulfillmentProtos } from "../../protos/fulfillment";
import { Caller, FakeFulfillmentService, FakeServiceOptions, FakeStatus, Kind } from "./fulfillmentService";

export { UnsupportedFilterError } from "./fulfillmentFilter";
export { CONTROLLER_FINALIZER, FakeFulfillmentService, type Caller, type FakeServiceOptions } from "./fulfillmentService";

type AnyMethod = MethodDefinition<object, object>;

/** The generated definition behind a method path: both halves of the codec. */
function definitionOf(path: string): AnyMethod {
  const m = /^\/(.+)\/([^/]+)$/.exec(path);
  const def = m ? (loadFulfillmentProtos().packageDefinition[m[1]] as Record<string, AnyMethod> | undefined)?.[m[2]] : undefined;
  if (!def) throw new Error(`no generated method ${path}`);
  return def;
}

/** The service reached in memory as `caller`, through the wire encoding. */
class InMemoryCall implements UnaryCaller {
  constructor(private readonly service: FakeFulfillmentService, private readonly caller: Caller) {}

  async unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, opts: CallOptions): Promise<Res> {
    const def = definitionOf(method.path);
    const decoded = def.requestDeserialize(method.requestSerialize(request)) as Record<string, unknown>;
    let response: object;
    try {
      response = this.service.handle(method.path, this.caller, decoded, opts.metadata?.["x-dry-run"] === "true");
    } catch (err) {
      if (!(err instanceof FakeStatus)) throw err;
      const wire = Object.assign(new Error(err.details), { code: err.code, details: err.details, metadata: new grpc.Metadata() });
      const typed = classifyCallError(method.path, wire);
      if (typed instanceof InvalidArgumentError) typed.fieldViolations = err.fieldViolations;
      throw typed;
    }
    return method.responseDeserialize(def.responseSerialize(response));
  }
}

/** FulfillmentApi over a FakeFulfillmentService, as one caller (an admin unless told otherwise). */
export class FakeFulfillment implements FulfillmentApi {
  readonly bareMetalInstances: ResourceClient<BareMetalInstance, BareMetalInstanceOut>;
  readonly catalogItems: ResourceClient<BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItemOut>;
  readonly instanceTypes: ResourceClient<BareMetalInstanceType, BareMetalInstanceTypeOut>;
  readonly templates: ResourceClient<BareMetalInstanceTemplate, BareMetalInstanceTemplateOut>;
  readonly hostTypes: ResourceClient<HostType, HostTypeOut>;
  readonly diskImages: ResourceClient<DiskImage, DiskImageOut>;
  readonly clusterVersions: ResourceClient<ClusterVersion, ClusterVersionOut>;
  readonly clusters: ResourceClient<Cluster, ClusterOut>;

  constructor(readonly service: FakeFulfillmentService, caller: Caller = { admin: true }) {
    const v1 = loadFulfillmentProtos().grpc.osac.private.v1;
    const conn = new InMemoryCall(service, caller);
    this.bareMetalInstances = new ResourceClient(conn, v1.BareMetalInstances.service);
    this.catalogItems = new ResourceClient(conn, v1.BareMetalInstanceCatalogItems.service);
    this.instanceTypes = new ResourceClient(conn, v1.BareMetalInstanceTypes.service);
    this.templates = new ResourceClient(conn, v1.BareMetalInstanceTemplates.service);
    this.hostTypes = new ResourceClient(conn, v1.HostTypes.service);
    this.diskImages = new ResourceClient(conn, v1.DiskImages.service);
    this.clusterVersions = new ResourceClient(conn, v1.ClusterVersions.service);
    this.clusters = new ResourceClient(conn, v1.Clusters.service);
  }

  close(): void {}
}

/** Objects to put in a fresh fake, each created as an admin in its metadata.tenant ("shared" when unset). */
export type FakeSeed = Partial<Record<Kind, { metadata?: { tenant?: string } | null }[]>>;

/** A fresh service with `seed` in it, and an admin client of it. */
export async function fakeFulfillment(seed: FakeSeed = {}, opts: FakeServiceOptions = {}): Promise<FakeFulfillment> {
  const service = new FakeFulfillmentService(opts);
  const admin = new FakeFulfillment(service);
  const v1 = loadFulfillmentProtos().grpc.osac.private.v1;
  const conn = new InMemoryCall(service, { admin: true });
  for (const [kind, objects] of Object.entries(seed) as [Kind, NonNullable<FakeSeed[Kind]>][]) {
    // Seeds go through Create, not the product client's create: they may live in any tenant.
    const create = v1[kind].service.Create as UnaryMethod<{ object: object }, object>;
    for (const o of objects) {
      await conn.unary(create, { object: { ...o, metadata: { ...o.metadata, tenant: o.metadata?.tenant || "shared" } } }, { idempotent: false });
    }
  }
  return admin;
}
