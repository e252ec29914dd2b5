// Typed errors for fulfillment-service calls, and the one classifier that maps a gRPC failure onto
// them. Messages carry the method and the server's text, never request metadata (the bearer token).
import * as grpc from "@grpc/grpc-js";
import type * as protobuf from "protobufjs";
import { loadFulfillmentRoot } from "../../protos/fulfillment";
import type { BadRequest__Output } from "../../protos/gen/google/rpc/BadRequest";
import type { Status__Output } from "../../protos/gen/google/rpc/Status";

export interface FieldViolation {
  field: string;
  description: string;
}

/** Base class: any failed fulfillment call. `code` is the gRPC status. */
export class FulfillmentError extends Error {
  override name = "FulfillmentError";
  constructor(
    readonly method: string,
    readonly code: grpc.status,
    readonly details: string,
    options?: { cause?: unknown },
  ) {
    super(`${method}: ${grpc.status[code] ?? code}: ${details}`, options);
  }
}

export class NotFoundError extends FulfillmentError {
  override name = "NotFoundError";
}
export class AlreadyExistsError extends FulfillmentError {
  override name = "AlreadyExistsError";
}
export class InvalidArgumentError extends FulfillmentError {
  override name = "InvalidArgumentError";
  /** From the google.rpc.BadRequest detail, when the server sent one. */
  fieldViolations: FieldViolation[] = [];
}
export class FailedPreconditionError extends FulfillmentError {
  override name = "FailedPreconditionError";
}
export class PermissionDeniedError extends FulfillmentError {
  override name = "PermissionDeniedError";
}
export class UnauthenticatedError extends FulfillmentError {
  override name = "UnauthenticatedError";
}
/** The lock = true version check failed: re-read and retry the update. */
export class AbortedError extends FulfillmentError {
  override name = "AbortedError";
}
/**
 * UNAVAILABLE or DEADLINE_EXCEEDED: the service could not be reached or did not answer in time. For a
 * mutating call the outcome is unknown (it may have been committed).
 */
export class UnavailableError extends FulfillmentError {
  override name = "UnavailableError";
}

const CLASSES: Partial<Record<grpc.status, typeof FulfillmentError>> = {
  [grpc.status.NOT_FOUND]: NotFoundError,
  [grpc.status.ALREADY_EXISTS]: AlreadyExistsError,
  [grpc.status.INVALID_ARGUMENT]: InvalidArgumentError,
  [grpc.status.FAILED_PRECONDITION]: FailedPreconditionError,
  [grpc.status.PERMISSION_DENIED]: PermissionDeniedError,
  [grpc.status.UNAUTHENTICATED]: UnauthenticatedError,
  [grpc.status.ABORTED]: AbortedError,
  [grpc.status.UNAVAILABLE]: UnavailableError,
  [grpc.status.DEADLINE_EXCEEDED]: UnavailableError,
};

function isServiceError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as Partial<grpc.ServiceError>).code === "number";
}

/** Same conversion as proto-loader's, so the generated __Output types describe the result. */
const DECODE: protobuf.IConversionOptions = { longs: String, enums: String, bytes: Buffer, defaults: true, arrays: true };

let detailTypes: { status: protobuf.Type; badRequest: protobuf.Type } | undefined;

/** Decodes google.rpc.BadRequest field violations from the grpc-status-details-bin trailer. */
export function fieldViolationsOf(metadata: grpc.Metadata | undefined): FieldViolation[] {
  const raw = metadata?.get("grpc-status-details-bin")[0];
  if (!raw || typeof raw === "string") return [];
  detailTypes ??= (() => {
    const root = loadFulfillmentRoot();
    return { status: root.lookupType("google.rpc.Status"), badRequest: root.lookupType("google.rpc.BadRequest") };
  })();
  try {
    const status = detailTypes.status.toObject(detailTypes.status.decode(raw), DECODE) as Status__Output;
    return status.details
      .filter((d) => d.type_url.endsWith("/google.rpc.BadRequest"))
      .flatMap((d) => {
        const br = detailTypes!.badRequest.toObject(detailTypes!.badRequest.decode(d.value), DECODE) as BadRequest__Output;
        return br.field_violations.map((v) => ({ field: v.field, description: v.description }));
      });
  } catch {
    return []; // a malformed detail must not hide the status itself
  }
}

/** Maps a failure of `method` onto the taxonomy; non-gRPC errors are returned unchanged. */
export function classifyCallError(method: string, err: unknown): unknown {
  if (err instanceof FulfillmentError || !isServiceError(err)) return err;
  const Cls = CLASSES[err.code as grpc.status] ?? FulfillmentError;
  const typed = new Cls(method, err.code, err.details, { cause: err });
  if (typed instanceof InvalidArgumentError) typed.fieldViolations = fieldViolationsOf(err.metadata);
  return typed;
}

/** The only codes worth retrying, and only for idempotent calls. */
export function isTransient(err: unknown): boolean {
  return err instanceof UnavailableError;
}
