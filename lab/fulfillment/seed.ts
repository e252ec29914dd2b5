// The simulator's seed file: identities, tenants, the host inventory and the objects that exist before
// the program runs (instance types, catalog items, templates, HostTypes, disk images, cluster versions,
// clusters). Objects
// use the generated request shapes; their metadata.tenant defaults to "shared" (visible to everyone).
import * as fs from "node:fs";
import type {
  BareMetalInstanceCatalogItem, BareMetalInstanceTemplate, BareMetalInstanceType, Cluster, ClusterVersion, DiskImage, HostType,
} from "../../clients/fulfillment/types";

export interface SeedToken {
  token: string;
  /** Admins see every tenant and may call the whole private API. */
  admin?: boolean;
  /** Tenants of a non-admin subject (the token's organization claim). */
  tenants?: string[];
}

export interface SeedHost {
  name: string;
  /** Reported lower-cased, whatever the case here. */
  macs: string[];
  labels: Record<string, string>;
}

export interface SimulatorTimings {
  /** PROVISIONING → RUNNING/FAILED. */
  provisionMs: number;
  /** Delete → gone (NOT_FOUND), for objects with finalizers (BMIs). */
  deleteMs: number;
}

export interface SimulatorSeed {
  tokens: SeedToken[];
  /** Besides the built-in "system" and "shared". */
  tenants?: string[];
  hosts?: SeedHost[];
  instanceTypes?: BareMetalInstanceType[];
  catalogItems?: BareMetalInstanceCatalogItem[];
  /**
   * BareMetalInstanceTemplates catalog items refer to (§4.2); a BMI of an item whose template has a
   * host_type (a HostType id or name) gets its attachment interfaces checked against that HostType (§4.5).
   */
  templates?: BareMetalInstanceTemplate[];
  hostTypes?: HostType[];
  diskImages?: DiskImage[];
  clusterVersions?: ClusterVersion[];
  clusters?: Cluster[];
  timings?: Partial<SimulatorTimings>;
  /**
   * Which proposal fields the simulated service keeps. false = behave like today's real service,
   * which drops them (BMI spec.instance_type = 20, ClusterVersion spec.disk_image = 7). Default true.
   */
  proposals?: { instanceType?: boolean; clusterVersionDiskImage?: boolean };
  /**
   * "deny" (default, like the real OPA policy): non-admin tokens get PERMISSION_DENIED on the private
   * API. "visibility": let them through with their tenant visibility applied, so the DAO tenancy
   * rules (own + shared, never system) can be exercised.
   */
  tenantPrivateAccess?: "deny" | "visibility";
}

export const DEFAULT_TIMINGS: SimulatorTimings = { provisionMs: 2_000, deleteMs: 2_000 };

export function readSeed(file: string): SimulatorSeed {
  const seed = JSON.parse(fs.readFileSync(file, "utf8")) as SimulatorSeed;
  if (!Array.isArray(seed.tokens) || seed.tokens.length === 0) throw new Error(`${file}: seed needs at least one token`);
  return seed;
}
