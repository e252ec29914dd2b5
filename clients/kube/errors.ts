// Typed Kubernetes API errors. client-node throws ApiException with the raw response body; callers
// need the distinctions that drive decisions (gone, stale, forbidden), with messages that name the
// operation and the server's reason but never echo request or response bodies.

/** Base class for a failed Kubernetes API call; `code` is the HTTP status. */
export class KubeError extends Error {
  override name = "KubeError";
  constructor(readonly operation: string, readonly code: number, readonly reason: string, detail: string, options?: { cause?: unknown }) {
    super(`${operation}: ${code} ${reason}${detail ? `: ${detail}` : ""}`, options);
  }
}

/** 404: the object (or its kind) does not exist. */
export class NotFoundError extends KubeError {
  override name = "NotFoundError";
}

/** 409: a resourceVersion/uid precondition failed or the object already exists; re-read and retry. */
export class ConflictError extends KubeError {
  override name = "ConflictError";
}

/** 403: RBAC denies the call; retrying will not help until permissions change. */
export class ForbiddenError extends KubeError {
  override name = "ForbiddenError";
}

interface StatusBody {
  message?: string;
  reason?: string;
}

function statusOf(body: unknown): StatusBody {
  let parsed: unknown = body;
  if (typeof body === "string") {
    try {
      parsed = JSON.parse(body);
    } catch {
      return {};
    }
  }
  if (parsed && typeof parsed === "object") {
    const o = parsed as Record<string, unknown>;
    // Only a metav1.Status carries a safe message; any other body (an object) is never echoed.
    if (o.kind === "Status") {
      return { message: typeof o.message === "string" ? o.message : undefined, reason: typeof o.reason === "string" ? o.reason : undefined };
    }
  }
  return {};
}

function isApiException(err: unknown): err is Error & { code: number; body: unknown } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "number" && "body" in err;
}

/** Maps a client-node failure of `operation` onto the taxonomy; other errors are returned unchanged. */
export function classifyKubeError(operation: string, err: unknown): unknown {
  if (err instanceof KubeError || !isApiException(err)) return err;
  const status = statusOf(err.body);
  const detail = status.message ?? "";
  switch (err.code) {
    case 404:
      return new NotFoundError(operation, 404, status.reason ?? "NotFound", detail, { cause: err });
    case 409:
      return new ConflictError(operation, 409, status.reason ?? "Conflict", detail, { cause: err });
    case 403:
      return new ForbiddenError(operation, 403, status.reason ?? "Forbidden", detail, { cause: err });
    default:
      return new KubeError(operation, err.code, status.reason ?? "Error", detail, { cause: err });
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof NotFoundError || (err instanceof Error && err.name === "NotFoundError" && (err as { code?: unknown }).code === 404);
}

export function isConflict(err: unknown): boolean {
  return err instanceof ConflictError || (err instanceof Error && err.name === "ConflictError" && (err as { code?: unknown }).code === 409);
}
