// The OSAC management-state convention (OSAC-23/55): Unmanaged skips steady-state reconcile, never deletion.
import { MANAGEMENT_STATE_ANNOTATION } from "./names";
import type { ClusterOrder } from "./types";

export function isUnmanaged(order: ClusterOrder): boolean {
  const value = order.metadata.annotations?.[MANAGEMENT_STATE_ANNOTATION];
  return value !== undefined && value.trim().toLowerCase() === "unmanaged";
}

export function isDeleting(order: ClusterOrder): boolean {
  return Boolean(order.metadata.deletionTimestamp);
}
