// Bearer-token authentication and tenant visibility as the real service computes them
// (fulfillment-api.md §3.4, §7): exactly one "authorization: Bearer <token>" entry; admins see every
// tenant; anybody else sees their own tenants plus "shared", and never "system".
import type * as grpc from "@grpc/grpc-js";
import type { SeedToken } from "./seed";
import { permissionDenied, unauthenticated } from "./status";

export const SYSTEM = "system";
export const SHARED = "shared";

export interface Subject {
  admin: boolean;
  /** The subject's own tenants (assignable); empty for admins, who may assign any. */
  tenants: string[];
}

export function authenticate(method: string, md: grpc.Metadata, tokens: readonly SeedToken[]): Subject {
  const values = md.get("authorization");
  if (values.length === 0) throw unauthenticated(`method '${method}' requires authentication`);
  if (values.length > 1) throw unauthenticated("more than one authorization header");
  const m = /^bearer\s+(\S+)\s*$/i.exec(String(values[0]));
  if (!m) throw unauthenticated("authorization header is not a bearer token");
  // The token itself never goes into a message.
  const known = tokens.find((t) => t.token === m[1]);
  if (!known) throw unauthenticated("bearer token is not valid");
  return { admin: known.admin === true, tenants: known.admin ? [] : (known.tenants ?? []) };
}

export function canSee(subject: Subject, tenant: string): boolean {
  return subject.admin || tenant === SHARED || (tenant !== SYSTEM && subject.tenants.includes(tenant));
}

/** The tenant a Create lands in; PERMISSION_DENIED when it is not visible and assignable. */
export function createTenant(subject: Subject, requested: string, existing: readonly string[]): string {
  if (!requested) {
    if (subject.admin) return SHARED; // the trap the program must avoid: visible to every tenant
    if (!subject.tenants[0]) throw permissionDenied("subject has no tenant");
    return subject.tenants[0];
  }
  if (!existing.includes(requested)) throw permissionDenied(`tenant '${requested}' doesn't exist`);
  if (!subject.admin && !subject.tenants.includes(requested)) {
    throw permissionDenied(`tenant '${requested}' is not visible or not assignable`);
  }
  return requested;
}
