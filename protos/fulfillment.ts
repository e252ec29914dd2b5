// Loads the osac.private.v1 protos at run time with the same options the TypeScript types in
// protos/gen/ were generated with (see the gen:protos npm script), so the decoded objects match them.
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import * as protobuf from "protobufjs";
import type { ProtoGrpcType as CatalogItemsGrpc } from "./gen/baremetal_instance_catalog_items_service";
import type { ProtoGrpcType as TemplatesGrpc } from "./gen/baremetal_instance_templates_service";
import type { ProtoGrpcType as InstanceTypesGrpc } from "./gen/baremetal_instance_types_service";
import type { ProtoGrpcType as BareMetalInstancesGrpc } from "./gen/baremetal_instances_service";
import type { ProtoGrpcType as ClusterVersionsGrpc } from "./gen/cluster_versions_service";
import type { ProtoGrpcType as ClustersGrpc } from "./gen/clusters_service";
import type { ProtoGrpcType as DiskImagesGrpc } from "./gen/disk_images_service";
import type { ProtoGrpcType as EventsGrpc } from "./gen/events_service";
import type { ProtoGrpcType as HostTypesGrpc } from "./gen/host_types_service";

export const PROTO_DIR = __dirname;

/** Must stay in step with the flags of `proto-loader-gen-types` in package.json. */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

export const SERVICE_FILES = [
  "osac/private/v1/baremetal_instances_service.proto",
  "osac/private/v1/baremetal_instance_catalog_items_service.proto",
  "osac/private/v1/baremetal_instance_types_service.proto",
  "osac/private/v1/baremetal_instance_templates_service.proto",
  "osac/private/v1/host_types_service.proto",
  "osac/private/v1/disk_images_service.proto",
  "osac/private/v1/cluster_versions_service.proto",
  "osac/private/v1/clusters_service.proto",
  "osac/private/v1/events_service.proto",
  "google/rpc/status.proto",
  "google/rpc/error_details.proto",
];

/**
 * Every generated per-service view merged: the loaded package holds all of them. (google.rpc has no
 * service; its message types are imported from gen/google/rpc/ directly.)
 */
export type FulfillmentGrpc = BareMetalInstancesGrpc & CatalogItemsGrpc & InstanceTypesGrpc & TemplatesGrpc & HostTypesGrpc &
  DiskImagesGrpc & ClusterVersionsGrpc & ClustersGrpc & EventsGrpc;

export interface FulfillmentProtos {
  packageDefinition: protoLoader.PackageDefinition;
  grpc: FulfillmentGrpc;
}

let cached: FulfillmentProtos | undefined;

/** Parses the protos once per process. */
export function loadFulfillmentProtos(): FulfillmentProtos {
  if (!cached) {
    const packageDefinition = protoLoader.loadSync(SERVICE_FILES, LOADER_OPTIONS);
    // The generated ProtoGrpcType describes exactly what loadPackageDefinition returns for these files.
    const loaded = grpc.loadPackageDefinition(packageDefinition) as unknown as FulfillmentGrpc;
    cached = { packageDefinition, grpc: loaded };
  }
  return cached;
}

/** A protobufjs Root of the same files, for raw wire encoding/decoding (status details, wire tests). */
export function loadFulfillmentRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    if (path.isAbsolute(target) || target.startsWith("google/protobuf/")) return target; // protobufjs bundles the latter
    return path.join(PROTO_DIR, target);
  };
  root.loadSync(SERVICE_FILES.map((f) => path.join(PROTO_DIR, f)), { keepCase: true });
  root.resolveAll();
  return root;
}
