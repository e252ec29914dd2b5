// Shared by the stack layer (which refuses to start pulumi) and the controller (which requeues): a leaf.
/** An operation refused because this replica does not lead at the moment it would start: a requeue, not a failure. */
export class NotLeaderError extends Error {
  override name = "NotLeaderError";
}

export function isNotLeaderError(e: unknown): e is NotLeaderError {
  return e instanceof NotLeaderError;
}
