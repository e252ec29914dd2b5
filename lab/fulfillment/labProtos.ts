// Loads the lab-only control proto (bmwlab.v1) with the options its types were generated with.
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { LOADER_OPTIONS } from "../../protos/fulfillment";
import type { ProtoGrpcType } from "./protos/gen/fulfillment_lab";

export type { BootEvent__Output as BootEvent } from "./protos/gen/bmwlab/v1/BootEvent";
export type { MethodFault__Output as MethodFault } from "./protos/gen/bmwlab/v1/MethodFault";
export type { LifecycleFault__Output as LifecycleFault } from "./protos/gen/bmwlab/v1/LifecycleFault";
export type { ListFault__Output as ListFault } from "./protos/gen/bmwlab/v1/ListFault";
export type { FulfillmentLabClient } from "./protos/gen/bmwlab/v1/FulfillmentLab";
export type { StatsResponse__Output as LabStats } from "./protos/gen/bmwlab/v1/StatsResponse";

let cached: ProtoGrpcType | undefined;

export function loadLabProtos(): ProtoGrpcType {
  cached ??= grpc.loadPackageDefinition(protoLoader.loadSync("bmwlab/v1/fulfillment_lab.proto", {
    ...LOADER_OPTIONS, includeDirs: [path.join(__dirname, "protos")],
  })) as unknown as ProtoGrpcType;
  return cached;
}
