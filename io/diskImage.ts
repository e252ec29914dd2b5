// The disk image of an order's new BMIs: its fulfillment Cluster's ClusterVersion and the DiskImage that
// version links. One resolution, over two ways of reading: an observation's own calls, and a pass's
// shared reads (every Cluster listed once, each ClusterVersion and DiskImage lookup made once), which a
// settled order's resync compares with what its observation resolved (io/unwatched.ts).
import type { ClusterOut, ClusterVersionOut, DiskImageOut, FulfillmentApi, ListOptions, ResourceReader } from "../clients/fulfillment";
import { diskImageRefOf, Filter, resolveDiskImage } from "../clients/fulfillment";
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
        const key = listKey(o);
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

/** One lookup's identity: its filter and page. */
function listKey(o?: ListOptions): string {
  return JSON.stringify([o?.filter?.text ?? "", o?.limit ?? 0, o?.offset ?? 0]);
}

/** Where an observation's lookups are shared with other observations (io/observeCache.ts). */
export interface LookupCache {
  lookup<T>(key: string, load: () => Promise<T>, keep: (value: T) => boolean): Promise<T>;
}

const isObsolete = (image: DiskImageOut) => String(image.spec?.lifecycle ?? "").endsWith("OBSOLETE");

/**
 * An observation's reads with its ClusterVersion and DiskImage lookups shared through `cache`: the same
 * for every order of a version. The order's Cluster is read each time: moving it to another version is
 * how an upgrade reaches the order, and the next reconcile should see it. An answer that stops new BMIs
 * (nothing found, an ambiguous name, a ClusterVersion that links no image, an OBSOLETE image) is not
 * kept, so that its repair is seen by the next reconcile.
 */
export function sharedReads(reads: DiskImageReads, cache: LookupCache): DiskImageReads {
  // Every lookup of the resolution asks for one item; more than one is a name that is ambiguous.
  const shared = <T>(kind: string, reader: Lister<T>, usable: (item: T) => boolean): Lister<T> => ({
    list: (o?: ListOptions) => cache.lookup(`${kind}/${listKey(o)}`,
      () => reader.list(o), (page) => page.items.length === 1 && usable(page.items[0])),
  });
  return {
    clusterById: (id) => reads.clusterById(id),
    clustersNamed: (name) => reads.clustersNamed(name),
    clusterVersions: shared("ClusterVersion", reads.clusterVersions, (cv) => diskImageRefOf(cv) !== undefined),
    diskImages: shared("DiskImage", reads.diskImages, (image) => !isObsolete(image)),
  };
}

async function clusterOf(reads: DiskImageReads, keys: DiskImageKeys): Promise<ClusterOut | undefined> {
  if (keys.clusterId) return reads.clusterById(keys.clusterId);
  const byName = await reads.clustersNamed(keys.name);
  return byName.length === 1 ? byName[0] : undefined;
}

/** The order's disk image, or why there is none (the planner then creates no BMI). */
export async function resolveOrderDiskImage(reads: DiskImageReads, keys: DiskImageKeys): Promise<DiskImageResolution> {
  const cluster = await clusterOf(reads, keys);
  const ref = cluster?.spec?.version;
  let cv: ClusterVersionOut | undefined;
  if (ref?.id || ref?.name) {
    const filter = ref.id ? Filter.idEquals(ref.id) : Filter.nameEquals(ref.name);
    cv = (await reads.clusterVersions.list({ filter, limit: 1 })).items[0];
  }
  if (!cv) {
    return { ok: false, reason: "ClusterVersionNotFound",
      message: cluster ? `the cluster's current ClusterVersion (${ref?.id || ref?.name || "unset"}) was not found`
        : `no fulfillment Cluster found for ClusterOrder ${keys.namespace}/${keys.name}` };
  }
  const cvName = cv.metadata?.name || cv.id;
  const image = await resolveDiskImage(reads.diskImages, cv);
  if (!image) {
    return { ok: false, reason: cv.spec?.disk_image?.id || cv.spec?.disk_image?.name ? "DiskImageNotFound" : "NotLinked",
      message: `ClusterVersion ${cvName} has no resolvable disk_image: link a DiskImage to it` };
  }
  if (isObsolete(image)) {
    return { ok: false, reason: "Obsolete", message: `DiskImage ${image.metadata?.name || image.id} of ClusterVersion ${cvName} is OBSOLETE` };
  }
  return { ok: true, id: image.id, name: image.metadata?.name || image.id };
}
