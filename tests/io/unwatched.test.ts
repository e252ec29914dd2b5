// The unwatched inputs (io/unwatched.ts) as a property: over random fulfillment worlds (Clusters, some
// sharing a name, on ClusterVersions that link a DiskImage by id, by name, by annotation, not at all or
// to one that does not exist, available or OBSOLETE) and random ClusterDeployments, the digest one pass's
// shared reads give each order equals the one its own observation made; after a random change of the
// world, an order's digest moves exactly when its observation's unwatched inputs changed. And a pass's
// reads do not grow with the orders: one Cluster listing and one lookup per distinct ClusterVersion and
// DiskImage. Size: BMW_UNWATCHED_RUNS worlds (default 40), seeded by BMW_PROPERTY_SEED.
import fc from "fast-check";
import type { HubReader, ObjectMeta } from "../../clients/kube";
import { observe, type Observation } from "../../io/observe";
import { CLUSTER_ID_LABEL } from "../../io/diskImage";
import { listUnwatchedDigests, unwatchedDigest, unwatchedKeys } from "../../io/unwatched";
import { defaultPlannerConfig } from "../../planner/config";
import type { ClusterOrder } from "../../planner/types";
import { fakeFulfillment, type FakeFulfillment } from "../fakes/fulfillment";
import { testSeed } from "../fulfillment/helpers";

const SEED = Number(process.env.BMW_PROPERTY_SEED ?? (Date.now() % 2_147_483_647));
const RUNS = Number(process.env.BMW_UNWATCHED_RUNS ?? 40);

const IMAGES = ["di-a", "di-b", "di-c"];
const VERSIONS = ["cv-1", "cv-2", "cv-3", "cv-4"];
const CLUSTER_NAMES = ["c-x", "c-y"];

type Link = { by: "id" | "name" | "annotation"; image: string } | { by: "none" };
interface World {
  obsolete: boolean[];
  links: Link[];
  /** Each cluster's name and version (by id or by name; "cv-9" does not exist). */
  clusters: { name: string; version: { id?: string; name?: string } }[];
  /** Each order: its cluster (by label, index into clusters) or by name, its hosted cluster, and where its ClusterDeployment is. */
  orders: { byLabel?: number; name: string; hc?: string; cdIn: "hcp" | "hc" | "none" }[];
}

const link: fc.Arbitrary<Link> = fc.oneof(
  fc.record({ by: fc.constantFrom("id", "name", "annotation") as fc.Arbitrary<"id" | "name" | "annotation">,
    image: fc.constantFrom(...IMAGES, "di-missing") }),
  fc.constant<Link>({ by: "none" }),
);
const version = fc.oneof(fc.constantFrom(...VERSIONS, "cv-9").map((id) => ({ id })), fc.constantFrom(...VERSIONS).map((id) => ({ name: `v-${id}` })));
const worldArb: fc.Arbitrary<World> = fc.record({
  obsolete: fc.array(fc.boolean(), { minLength: IMAGES.length, maxLength: IMAGES.length }),
  links: fc.array(link, { minLength: VERSIONS.length, maxLength: VERSIONS.length }),
  clusters: fc.array(fc.record({ name: fc.constantFrom(...CLUSTER_NAMES), version }), { minLength: 1, maxLength: 4 }),
  orders: fc.array(fc.record({
    byLabel: fc.option(fc.nat(3), { nil: undefined }), name: fc.constantFrom(...CLUSTER_NAMES, "c-z"),
    hc: fc.option(fc.constantFrom("hc1", "hc2"), { nil: undefined }), cdIn: fc.constantFrom("hcp", "hc", "none") as fc.Arbitrary<"hcp" | "hc" | "none">,
  }), { minLength: 1, maxLength: 5 }),
});

type Change = { kind: "cluster"; which: number; version: { id?: string; name?: string } } | { kind: "obsolete"; which: number }
  | { kind: "link"; which: number; link: Link } | { kind: "cd"; which: number; cdIn: "hcp" | "hc" | "none" };
const changeArb: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ kind: fc.constant("cluster" as const), which: fc.nat(3), version }),
  fc.record({ kind: fc.constant("obsolete" as const), which: fc.nat(IMAGES.length - 1) }),
  fc.record({ kind: fc.constant("link" as const), which: fc.nat(VERSIONS.length - 1), link }),
  fc.record({ kind: fc.constant("cd" as const), which: fc.nat(4), cdIn: fc.constantFrom("hcp", "hc", "none") as fc.Arbitrary<"hcp" | "hc" | "none"> }),
);

const lifecycle = (obsolete: boolean) => (obsolete ? "DISK_IMAGE_LIFECYCLE_OBSOLETE" : "DISK_IMAGE_LIFECYCLE_AVAILABLE");

function cvObject(i: number, l: Link) {
  const id = VERSIONS[i];
  const base = { id, metadata: { name: `v-${id}`, annotations: {} as Record<string, string> }, spec: { image: `quay.io/x:${id}`, version: id } };
  if (l.by === "id") return { ...base, spec: { ...base.spec, disk_image: { id: l.image } } };
  if (l.by === "name") return { ...base, spec: { ...base.spec, disk_image: { name: `name-${l.image}` } } };
  if (l.by === "annotation") return { ...base, metadata: { ...base.metadata, annotations: { "osac.openshift.io/disk-image": l.image } } };
  return base;
}

async function serviceOf(w: World): Promise<FakeFulfillment> {
  const seed = testSeed();
  return fakeFulfillment({
    BareMetalInstanceCatalogItems: seed.catalogItems, BareMetalInstanceTypes: seed.instanceTypes,
    BareMetalInstanceTemplates: seed.templates, HostTypes: seed.hostTypes,
    DiskImages: IMAGES.map((id, i) => ({ id, metadata: { name: `name-${id}` }, spec: { source_type: "SOURCE_TYPE_REGISTRY",
      source_ref: `quay.io/rhcos:${id}`, architecture: ["ARCHITECTURE_AMD64"], lifecycle: lifecycle(w.obsolete[i]) } })),
    ClusterVersions: w.links.map((l, i) => cvObject(i, l)),
    // Names are unique per tenant: clusters of one name live in different tenants.
    Clusters: w.clusters.map((c, i) => ({ id: `cluster-${i}`, metadata: { name: c.name, tenant: `t${i}` }, spec: { version: c.version } })),
  } as never, { tenants: ["t0", "t1", "t2", "t3"] });
}

function orderOf(w: World, i: number): ClusterOrder {
  const o = w.orders[i];
  const labels = o.byLabel !== undefined ? { [CLUSTER_ID_LABEL]: `cluster-${o.byLabel}` } : undefined;
  return {
    metadata: { namespace: "ns", name: o.name, uid: `uid-${i}`, ...(labels ? { labels } : {}) },
    spec: { nodeRequests: [] },
    ...(o.hc ? { status: { clusterReference: { namespace: "clusters", hostedClusterName: o.hc } } } : {}),
  } as ClusterOrder;
}

/** Every ClusterDeployment of the world: each order's where it says (a hosted cluster can be named by several orders). */
function clusterDeployments(w: World): ObjectMeta[] {
  const out = new Map<string, ObjectMeta>();
  for (const o of w.orders) {
    if (!o.hc || o.cdIn === "none") continue;
    const namespace = o.cdIn === "hcp" ? `clusters-${o.hc}` : "clusters";
    out.set(`${namespace}/${o.hc}`, { name: o.hc, namespace });
  }
  return [...out.values()];
}

function hubOf(w: World, order: ClusterOrder): HubReader {
  const cds = clusterDeployments(w);
  return {
    getClusterOrder: async () => order, listInfraEnvs: async () => [], listAgents: async () => [], listNodePools: async () => [],
    listClusterDeployments: async (ns) => cds.filter((c) => c.namespace === ns).map((metadata) => ({ metadata })) as never,
  };
}

async function observeAll(w: World, f: FakeFulfillment): Promise<Observation[]> {
  return Promise.all(w.orders.map((_, i) => {
    const order = orderOf(w, i);
    return observe({ kube: hubOf(w, order), fulfillment: f, config: defaultPlannerConfig() }, { namespace: "ns", name: order.metadata.name });
  }));
}

async function applyChange(w: World, f: FakeFulfillment, c: Change): Promise<void> {
  if (c.kind === "cluster" && c.which < w.clusters.length) {
    w.clusters[c.which].version = c.version;
    await f.clusters.update({ id: `cluster-${c.which}`, spec: { version: c.version } } as never, { updateMask: ["spec.version"] });
  } else if (c.kind === "obsolete") {
    w.obsolete[c.which] = !w.obsolete[c.which];
    await f.diskImages.update({ id: IMAGES[c.which], spec: { lifecycle: lifecycle(w.obsolete[c.which]) } } as never, { updateMask: ["spec.lifecycle"] });
  } else if (c.kind === "link") {
    w.links[c.which] = c.link;
    await f.clusterVersions.update(cvObject(c.which, c.link) as never, { updateMask: ["spec.disk_image", "metadata.annotations"] });
  } else if (c.kind === "cd" && c.which < w.orders.length) {
    w.orders[c.which].cdIn = c.cdIn;
  }
}

describe("unwatched inputs (property)", () => {
  it(`one pass's shared reads digest each order as its observation did, and move exactly with its inputs (seed ${SEED}, ${RUNS} worlds)`, async () => {
    let moved = 0;
    let kept = 0;
    await fc.assert(fc.asyncProperty(worldArb, changeArb, async (world, change) => {
      const w: World = structuredClone(world);
      const f = await serviceOf(w);
      const before = await observeAll(w, f);
      const pass = async () => {
        const calls = { calls: 0, systemSeen: false };
        const digestOf = await listUnwatchedDigests({ listClusterDeployments: async () => clusterDeployments(w), fulfillment: f }, calls);
        const digests = await Promise.all(w.orders.map((_, i) => digestOf(unwatchedKeys(orderOf(w, i)))));
        // One Cluster listing, the catalog (instance types, item, template, HostType), at most one lookup per
        // distinct ClusterVersion and two per DiskImage (by id, then by name): not per order.
        expect(calls.calls).toBeLessThanOrEqual(1 + 4 + (VERSIONS.length + 1) * 2 + (IMAGES.length + 1) * 2);
        return digests;
      };
      const first = await pass();
      for (const [i, o] of before.entries()) {
        expect(o.unwatchedDigest).toBeDefined();
        expect(first[i]).toBe(o.unwatchedDigest);
        expect(unwatchedDigest(o.snapshot)).toBe(o.unwatchedDigest);
      }
      await applyChange(w, f, change);
      const after = await observeAll(w, f);
      const second = await pass();
      for (const [i, o] of after.entries()) {
        expect(second[i]).toBe(o.unwatchedDigest);
        const same = (s: Observation["snapshot"]) => JSON.stringify([s.clusterDeployment ?? null, s.diskImage, s.catalogItem]);
        const inputsMoved = same(o.snapshot) !== same(before[i].snapshot);
        expect(second[i] !== first[i]).toBe(inputsMoved);
        if (inputsMoved) moved++;
        else kept++;
      }
    }), { seed: SEED, numRuns: RUNS });
    expect(moved).toBeGreaterThan(0);
    expect(kept).toBeGreaterThan(0);
  });
});
