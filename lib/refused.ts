/** A refusal is the operator's error (exit code 2), not a failure: the request names something that is not so. */
export class RefusedError extends Error {
  override name = "RefusedError";
}
