// The inputs of an order's plan that no watch of the loop follows: the ClusterDeployment its Agents bind
// to (hive), the disk image its Cluster's version links (fulfillment Cluster → ClusterVersion → DiskImage)
// and the shared catalog (instance types, the system catalog item). A settled order's resync compares a
// digest of them, read once per pass for every order due (one ClusterDeployment metadata listing, one
// Cluster listing, one lookup per distinct ClusterVersion and DiskImage, the cached catalog), with the
// digest its observation made (controller/settledOrders.ts). A digest only ever lets a reconcile be
// skipped; it never stands in for an observation that plans.
import type { FulfillmentApi } from "../clients/fulfillment";
import type { ObjectMeta } from "../clients/kube";
import { canonicalJson, sha256 } from "../planner/fingerprint";
import type { ClusterOrder, DiskImageResolution, Snapshot } from "../planner/types";
import { CLUSTER_ID_LABEL, type DiskImageKeys, passReads, resolveOrderDiskImage } from "./diskImage";
import type { ObserveCache } from "./observeCache";
import { catalogInputs, type FulfillmentTally, loadSharedCatalog, type SharedCatalog } from "./sharedCatalog";

/** What of an order its unwatched inputs depend on: all of it is in the order, so its resourceVersion covers it. */
export interface UnwatchedKeys extends DiskImageKeys {
  clusterReference?: { namespace: string; hostedClusterName: string };
}

export function unwatchedKeys(order: ClusterOrder): UnwatchedKeys {
  const id = order.metadata.labels?.[CLUSTER_ID_LABEL];
  const hc = order.status?.clusterReference;
  return {
    namespace: order.metadata.namespace, name: order.metadata.name,
    ...(id ? { clusterId: id } : {}),
    ...(hc ? { clusterReference: { namespace: hc.namespace, hostedClusterName: hc.hostedClusterName } } : {}),
  };
}

/** The inputs, as the planner's snapshot holds them. */
export type UnwatchedInputs = Pick<Snapshot, "clusterDeployment" | "diskImage" | "catalogItem" | "instanceTypes">;

export function unwatchedDigest(inputs: UnwatchedInputs): string {
  return sha256(canonicalJson([inputs.clusterDeployment ?? null, inputs.diskImage, inputs.catalogItem, inputs.instanceTypes]));
}

/**
 * Where the order's ClusterDeployment can be: HyperShift keeps it in the hosted control plane namespace
 * (<namespace>-<hostedcluster>), else beside the HostedCluster. No clusterReference yet: the order's own
 * namespace (read, but nothing is bound before the cluster exists).
 */
export function clusterDeploymentNamespaces(keys: Pick<UnwatchedKeys, "namespace" | "clusterReference">): string[] {
  const hc = keys.clusterReference;
  return hc ? [`${hc.namespace}-${hc.hostedClusterName}`, hc.namespace] : [keys.namespace];
}

/** The order's ClusterDeployment among those listed in clusterDeploymentNamespaces (in that order). */
export function findClusterDeployment(keys: Pick<UnwatchedKeys, "namespace" | "clusterReference">,
  listed: readonly Pick<ObjectMeta, "name" | "namespace">[]): Snapshot["clusterDeployment"] {
  const hc = keys.clusterReference;
  const cd = hc ? listed.find((c) => c.name === hc.hostedClusterName) : undefined;
  return cd?.name ? { name: cd.name, namespace: cd.namespace ?? keys.namespace } : undefined;
}

export interface UnwatchedDeps {
  /** Every ClusterDeployment of the hub, metadata only. */
  listClusterDeployments: () => Promise<Pick<ObjectMeta, "name" | "namespace">[]>;
  fulfillment: Pick<FulfillmentApi, "clusters" | "clusterVersions" | "diskImages" | "instanceTypes" | "catalogItems" | "templates" | "hostTypes">;
  cache?: ObserveCache;
}

/**
 * One pass's reads of every order's unwatched inputs; the function it resolves to digests one order's
 * (one lookup per distinct ClusterVersion and DiskImage, shared by the orders that name it).
 */
export async function listUnwatchedDigests(deps: UnwatchedDeps, tally: FulfillmentTally = { calls: 0, systemSeen: false }):
  Promise<(keys: UnwatchedKeys) => Promise<string>> {
  const f = deps.fulfillment;
  // An observation's cached catalog if there is one; its own load (which creates nothing) is not cached.
  const catalog = deps.cache?.cachedCatalog<SharedCatalog>() ?? loadSharedCatalog(f, false, tally);
  const [cds, reads, shared] = await Promise.all([deps.listClusterDeployments(), passReads(f, tally), catalog]);
  const byNs = new Map<string, Pick<ObjectMeta, "name" | "namespace">[]>();
  for (const cd of cds) byNs.set(cd.namespace ?? "", [...(byNs.get(cd.namespace ?? "") ?? []), cd]);
  const { catalogItem, instanceTypes } = catalogInputs(shared);
  return async (keys) => {
    const diskImage: DiskImageResolution = await resolveOrderDiskImage(reads, keys);
    const clusterDeployment = findClusterDeployment(keys, clusterDeploymentNamespaces(keys).flatMap((ns) => byNs.get(ns) ?? []));
    return unwatchedDigest({ clusterDeployment, diskImage, catalogItem, instanceTypes });
  };
}
