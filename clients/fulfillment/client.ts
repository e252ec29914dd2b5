// The single fulfillment-service client of the program: one channel, one ResourceClient per private
// service it uses. Build it once per process (or per provider operation) and close() it after use.
import { loadFulfillmentProtos } from "../../protos/fulfillment";
import type { EventsApi, FulfillmentApi } from "./api";
import { Connection, ConnectionOptions } from "./connection";
import { listWithoutUserData, watchWithoutUserData } from "./leanList";
import { ResourceClient } from "./resource";
import type {
  BareMetalInstance, BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItemOut, BareMetalInstanceOut,
  BareMetalInstanceTemplate, BareMetalInstanceTemplateOut, Event, BareMetalInstanceType, BareMetalInstanceTypeOut, Cluster,
  ClusterOut, ClusterVersion, ClusterVersionOut, DiskImage, DiskImageOut, HostType, HostTypeOut,
} from "./types";
import type { EventsWatchResponse__Output as EventsWatchResponse } from "../../protos/gen/osac/private/v1/EventsWatchResponse";

export type FulfillmentClientOptions = ConnectionOptions;

export class FulfillmentClient implements FulfillmentApi {
  readonly bareMetalInstances: ResourceClient<BareMetalInstance, BareMetalInstanceOut>;
  readonly catalogItems: ResourceClient<BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItemOut>;
  readonly instanceTypes: ResourceClient<BareMetalInstanceType, BareMetalInstanceTypeOut>;
  readonly templates: ResourceClient<BareMetalInstanceTemplate, BareMetalInstanceTemplateOut>;
  readonly hostTypes: ResourceClient<HostType, HostTypeOut>;
  readonly diskImages: ResourceClient<DiskImage, DiskImageOut>;
  readonly clusterVersions: ResourceClient<ClusterVersion, ClusterVersionOut>;
  readonly clusters: ResourceClient<Cluster, ClusterOut>;
  readonly events: EventsApi;
  private readonly conn: Connection;

  constructor(options: FulfillmentClientOptions) {
    const protos = loadFulfillmentProtos();
    const v1 = protos.grpc.osac.private.v1;
    this.conn = new Connection(options);
    const bmis = v1.BareMetalInstances.service;
    this.bareMetalInstances = new ResourceClient(this.conn, { ...bmis, List: listWithoutUserData(protos.packageDefinition, bmis.List) });
    this.catalogItems = new ResourceClient(this.conn, v1.BareMetalInstanceCatalogItems.service);
    this.instanceTypes = new ResourceClient(this.conn, v1.BareMetalInstanceTypes.service);
    this.templates = new ResourceClient(this.conn, v1.BareMetalInstanceTemplates.service);
    this.hostTypes = new ResourceClient(this.conn, v1.HostTypes.service);
    this.diskImages = new ResourceClient(this.conn, v1.DiskImages.service);
    this.clusterVersions = new ResourceClient(this.conn, v1.ClusterVersions.service);
    this.clusters = new ResourceClient(this.conn, v1.Clusters.service);
    const watch = watchWithoutUserData(protos.packageDefinition, v1.Events.service.Watch);
    this.events = {
      watch: (filter, handlers) => this.conn.openStream(watch, filter ? { filter: filter.text } : {}, {
        onOpen: handlers.onOpen,
        // A response without an event is passed on empty: the watcher decides what it cannot read.
        onMessage: (res: EventsWatchResponse) => handlers.onEvent(res.event ?? ({} as Event)),
        onEnd: handlers.onEnd,
      }),
    };
  }

  close(): void {
    this.conn.close();
  }
}
