// FulfillmentServiceUnavailable names the cause an operator can act on. A refused token or role
// (UNAUTHENTICATED, PERMISSION_DENIED) is reported at once: retrying does not fix it, a new token or
// role binding does. An outage or an unexpected error is reported after `unavailableThreshold`
// consecutive failures, since single errors are retried and usually pass.
import { COND_FULFILLMENT_UNAVAILABLE, cond, type ConditionInput } from "./conditions";
import { formatDuration } from "./lifecycle";
import type { Snapshot } from "./types";

/** The last call was refused for its credentials. */
export function credentialsRefused(snapshot: Snapshot): boolean {
  const kind = snapshot.fulfillmentErrorKind;
  return snapshot.fulfillmentErrors > 0 && (kind === "Unauthenticated" || kind === "PermissionDenied");
}

/** FulfillmentServiceUnavailable is True: a refusal, or enough consecutive failures. */
export function fulfillmentReported(snapshot: Snapshot): boolean {
  return credentialsRefused(snapshot) || snapshot.fulfillmentErrors >= snapshot.config.unavailableThreshold;
}

export function fulfillmentCondition(snapshot: Snapshot): ConditionInput {
  const { fulfillmentErrors: n, fulfillmentErrorKind: kind } = snapshot;
  if (!fulfillmentReported(snapshot)) {
    return cond(COND_FULFILLMENT_UNAVAILABLE, "False", "FulfillmentServiceAvailable", "the fulfillment-service answers");
  }
  const retry = `checking again every ${formatDuration(snapshot.config.unavailableRequeueMs)}`;
  switch (kind) {
    case "Unauthenticated":
      return cond(COND_FULFILLMENT_UNAVAILABLE, "True", "FulfillmentUnauthenticated",
        "the fulfillment-service refused the reconciler's token (UNAUTHENTICATED): the token in BMW_FULFILLMENT_TOKEN_FILE " +
        `is missing, expired or not accepted by the service's issuer; retrying does not fix this; ${retry}`);
    case "PermissionDenied":
      return cond(COND_FULFILLMENT_UNAVAILABLE, "True", "FulfillmentPermissionDenied",
        "the fulfillment-service refused the call (PERMISSION_DENIED): the token's identity lacks the role to manage " +
        `tenant-system BareMetalInstances on the private API; retrying does not fix this; ${retry}`);
    case "Other":
      return cond(COND_FULFILLMENT_UNAVAILABLE, "True", "FulfillmentServiceError",
        `${n} consecutive fulfillment-service calls failed with an unexpected error (see the reconciler's log); ${retry}`);
    default:
      return cond(COND_FULFILLMENT_UNAVAILABLE, "True", "FulfillmentServiceUnavailable",
        `${n} consecutive fulfillment-service calls failed (service or network unavailable); ${retry}`);
  }
}
