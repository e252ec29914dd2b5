// Errors the simulated service answers with: a gRPC status, its message and, for bad references,
// google.rpc.BadRequest field violations in grpc-status-details-bin, as the real service sends them.
import * as grpc from "@grpc/grpc-js";
import { loadFulfillmentRoot } from "../../protos/fulfillment";
import type { FieldViolation } from "../../clients/fulfillment/errors";

export class SimError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
    readonly fieldViolations: FieldViolation[] = [],
  ) {
    super(message);
  }
}

export const invalid = (msg: string, field?: string) =>
  new SimError(grpc.status.INVALID_ARGUMENT, msg, field ? [{ field, description: msg }] : []);
export const notFound = (msg: string) => new SimError(grpc.status.NOT_FOUND, msg);
export const alreadyExists = (msg: string) => new SimError(grpc.status.ALREADY_EXISTS, msg);
export const permissionDenied = (msg: string) => new SimError(grpc.status.PERMISSION_DENIED, msg);
export const unauthenticated = (msg: string) => new SimError(grpc.status.UNAUTHENTICATED, msg);

/** The ServiceError shape grpc-js sends back to the client. */
export function toServiceError(err: unknown): Partial<grpc.StatusObject> {
  if (!(err instanceof SimError)) {
    return { code: grpc.status.INTERNAL, details: err instanceof Error ? err.message : String(err) };
  }
  const metadata = new grpc.Metadata();
  if (err.fieldViolations.length) {
    const root = loadFulfillmentRoot();
    const badRequest = root.lookupType("google.rpc.BadRequest");
    const status = root.lookupType("google.rpc.Status");
    const detail = badRequest.encode(badRequest.fromObject({ field_violations: err.fieldViolations })).finish();
    const bytes = status.encode(status.fromObject({
      code: err.code, message: err.message,
      details: [{ type_url: "type.googleapis.com/google.rpc.BadRequest", value: detail }],
    })).finish();
    metadata.set("grpc-status-details-bin", Buffer.from(bytes));
  }
  return { code: err.code, details: err.message, metadata };
}
