// The disk image of an order's new BMIs: its fulfillment Cluster's ClusterVersion and the DiskImage that
// version links. One resolution, over two ways of reading: an observation's own calls, and a pass's
// shared reads (every Cluster listed once, each ClusterVersion and DiskImage lookup made once), which a
// settled order's resync compares with what its observation resolved (io/unwatched.ts).
import type { ClusterOut, ClusterVersionOut, DiskImageOut, FulfillmentApi, ListOptions, ResourceReader } from "../clients/fulfillment";
import { Filter, resolveDiskImage } from "../clients/fulfillment";
import type { FulfillmentTally } from "./sharedCatalog";
import type { DiskImageResolution } from "../planner/types";

/** The fulfillment Cluster behind a ClusterOrder: its id is the order's clusterorder-uuid label. */
export const CLUSTER_ID_LABEL = "osac.openshift.io/clusterorder-uuid";

/** What of an order its disk image depends on. */
export interface DiskImageKeys {
  namespace: string;
  name: string;
  /** The order's CLUSTER_ID_LABEL. */
  clusterId?: string;
}

type Lister<T> = Pick<ResourceReader<T>, "list">;

export interface DiskImageReads {
  clusterById(id: string): Promise<ClusterOut | undefined>;
  clustersNamed(name: string): Promise<ClusterOut[]>;
  clusterVersions: Lister<ClusterVersionOut>;
  diskImages: Lister<DiskImageOut>;
}

/** The reads of one observation, each a call of its own, counted in `tally`. */
export function observationReads(f: Pick<FulfillmentApi, "clusters" | "clusterVersions" | "diskImages">, tally: FulfillmentTally): DiskImageReads {
  const counted = <T>(reader: Lister<T>): Lister<T> => ({ list: (o?: ListOptions) => (tally.calls++, reader.list(o)) });
  return {
    clusterById: async (id) => (await counted(f.clusters).list({ filter: Filter.idEquals(id), limit: 1 })).items[0],
    clustersNamed: (name) => (tally.calls++, f.clusters.listAll(Filter.nameEquals(name))),
    clusterVersions: counted(f.clusterVersions),
    diskImages: counted(f.diskImages),
  };
}

/**
 * The reads of one pass, shared by every order it resolves: every Cluster in one paged listing, and each
 * distinct ClusterVersion or DiskImage lookup made once (the same filters as an observation's).
 */
export async function passReads(f: Pick<FulfillmentApi, "clusters" | "clusterVersions" | "diskImages">, tally: FulfillmentTally): Promise<DiskImageReads> {
  const clusters = await f.clusters.listAll();
  tally.calls++;
  const byId = new Map(clusters.map((c) => [c.id, c]));
  const memo = <T>(reader: Lister<T>): Lister<T> => {
    const seen = new Map<string, ReturnType<Lister<T>["list"]>>();
    return {
      list: (o?: ListOptions) => {
        const key = JSON.stringify([o?.filter?.text ?? "", o?.limit ?? 0, o?.offset ?? 0]);
        let page = seen.get(key);
        if (!page) {
          tally.calls++;
          page = reader.list(o);
          seen.set(key, page);
        }
        return page;
      },
    };
  };
  return {
    clusterById: (id) => Promise.resolve(byId.get(id)),
    clustersNamed: (name) => Promise.resolve(clusters.filter((c) => c.metadata?.name === name)),
    clusterVersions: memo(f.clusterVersions),
    diskImages: memo(f.diskImages),
  };
}

/** Where an observation's lookups are shared with other observations (io/observeCache.ts). */
export interface LookupCache {
  lookup<T>(key: string, load: () => Promise<T>, keep: (value: T) => boolean): Promise<T>;
}

async function clusterOf(reads: DiskImageReads, keys: DiskImageKeys): Promise<ClusterOut | undefined> {
  if (keys.clusterId) return reads.clusterById(keys.clusterId);
  const byName = await reads.clustersNamed(keys.name);
  return byName.length === 1 ? byName[0] : undefined;
}

/**
 * The order's disk image, or why there is none (the planner then creates no BMI). With `cache`, a version's
 * image is shared by the observations of every order of that version. The order's Cluster is read each time:
 * moving it to another version is how an upgrade reaches the order. A resolution that stops new BMIs is not
 * kept, so that its repair (an image linked, created or made AVAILABLE again) is seen by the next reconcile.
 */
export async function resolveOrderDiskImage(reads: DiskImageReads, keys: DiskImageKeys, cache?: LookupCache): Promise<DiskImageResolution> {
  const cluster = await clusterOf(reads, keys);
  if (!cluster) {
    return { ok: false, reason: "ClusterVersionNotFound", message: `no fulfillment Cluster found for ClusterOrder ${keys.namespace}/${keys.name}` };
  }
  const ref = cluster.spec?.version;
  const resolve = () => versionDiskImage(reads, ref);
  if (!cache || !(ref?.id || ref?.name)) return resolve();
  return cache.lookup(`DiskImageOf/${JSON.stringify([ref.id ?? "", ref.name ?? ""])}`, resolve, (r) => r.ok);
}

/** A Cluster's reference to its ClusterVersion (by id or name). */
type VersionRef = NonNullable<ClusterOut["spec"]>["version"];

async function versionDiskImage(reads: DiskImageReads, ref: VersionRef | undefined): Promise<DiskImageResolution> {
  let cv: ClusterVersionOut | undefined;
  if (ref?.id || ref?.name) {
    const filter = ref.id ? Filter.idEquals(ref.id) : Filter.nameEquals(ref.name);
    cv = (await reads.clusterVersions.list({ filter, limit: 1 })).items[0];
  }
  if (!cv) {
    return { ok: false, reason: "ClusterVersionNotFound", message: `the cluster's current ClusterVersion (${ref?.id || ref?.name || "unset"}) was not found` };
  }
  const cvName = cv.metadata?.name || cv.id;
  const image = await resolveDiskImage(reads.diskImages, cv);
  if (!image) {
    return { ok: false, reason: cv.spec?.disk_image?.id || cv.spec?.disk_image?.name ? "DiskImageNotFound" : "NotLinked",
      message: `ClusterVersion ${cvName} has no resolvable disk_image: link a DiskImage to it` };
  }
  if (String(image.spec?.lifecycle ?? "").endsWith("OBSOLETE")) {
    return { ok: false, reason: "Obsolete", message: `DiskImage ${image.metadata?.name || image.id} of ClusterVersion ${cvName} is OBSOLETE` };
  }
  return { ok: true, id: image.id, name: image.metadata?.name || image.id };
}
