// Names for the generated message types the program uses. "X" is what a request accepts
// (everything optional); "XOut" is what a response holds (defaults filled in, enums as strings,
// int64 as strings). Never hand-write these shapes: they come from protos/ via gen:protos.
export type { Metadata, Metadata__Output as MetadataOut } from "../../protos/gen/osac/private/v1/Metadata";
export type {
  BareMetalInstance, BareMetalInstance__Output as BareMetalInstanceOut,
} from "../../protos/gen/osac/private/v1/BareMetalInstance";
export type {
  BareMetalInstanceSpec, BareMetalInstanceSpec__Output as BareMetalInstanceSpecOut,
} from "../../protos/gen/osac/private/v1/BareMetalInstanceSpec";
export type {
  BareMetalInstanceStatus, BareMetalInstanceStatus__Output as BareMetalInstanceStatusOut,
} from "../../protos/gen/osac/private/v1/BareMetalInstanceStatus";
export type {
  BareMetalInstanceState, BareMetalInstanceState__Output as BareMetalInstanceStateOut,
} from "../../protos/gen/osac/private/v1/BareMetalInstanceState";
export type { BareMetalInstanceImage } from "../../protos/gen/osac/private/v1/BareMetalInstanceImage";
export type { BareMetalNetworkAttachment } from "../../protos/gen/osac/private/v1/BareMetalNetworkAttachment";
export type {
  BareMetalInstanceCatalogItem, BareMetalInstanceCatalogItem__Output as BareMetalInstanceCatalogItemOut,
} from "../../protos/gen/osac/private/v1/BareMetalInstanceCatalogItem";
export type {
  BareMetalInstanceType, BareMetalInstanceType__Output as BareMetalInstanceTypeOut,
} from "../../protos/gen/osac/private/v1/BareMetalInstanceType";
export type {
  BareMetalInstanceTemplate, BareMetalInstanceTemplate__Output as BareMetalInstanceTemplateOut,
} from "../../protos/gen/osac/private/v1/BareMetalInstanceTemplate";
export type { HostType, HostType__Output as HostTypeOut } from "../../protos/gen/osac/private/v1/HostType";
export type { DiskImage, DiskImage__Output as DiskImageOut } from "../../protos/gen/osac/private/v1/DiskImage";
export type {
  DiskImageReference, DiskImageReference__Output as DiskImageReferenceOut,
} from "../../protos/gen/osac/private/v1/DiskImageReference";
export type {
  ClusterVersion, ClusterVersion__Output as ClusterVersionOut,
} from "../../protos/gen/osac/private/v1/ClusterVersion";
export type { Cluster, Cluster__Output as ClusterOut } from "../../protos/gen/osac/private/v1/Cluster";
export type { FieldMask } from "../../protos/gen/google/protobuf/FieldMask";
export type { Event__Output as Event } from "../../protos/gen/osac/private/v1/Event";
