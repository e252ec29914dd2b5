// The hub digest (io/hubDigest.ts) as a property: over random hubs of Agents, InfraEnvs and NodePools in
// two namespaces, the digest an observation of an order computes from the objects it read equals the one a
// restarted reconciler computes from one metadata listing of the whole hub; and a new version of an object
// changes an order's digest exactly when that order's observation reads the object.
// Size: BMW_HUB_DIGEST_RUNS hubs (default 60), seeded by BMW_PROPERTY_SEED.
import fc from "fast-check";
import type { HubReader, ObjectMeta } from "../../clients/kube";
import { type HubMeta, listHubDigests } from "../../io/hubDigest";
import { observe } from "../../io/observe";
import { defaultPlannerConfig } from "../../planner/config";
import { INFRAENV_AGENT_LABEL, infraEnvName, ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";
import { fakeFulfillment } from "../fakes/fulfillment";

const SEED = Number(process.env.BMW_PROPERTY_SEED ?? (Date.now() % 2_147_483_647));
const RUNS = Number(process.env.BMW_HUB_DIGEST_RUNS ?? 60);

type Kind = "Agent" | "InfraEnv" | "NodePool";
interface Obj { kind: Kind; meta: ObjectMeta }

const ORDERS = [
  { namespace: "a", name: "o1", uid: "u1" }, { namespace: "a", name: "o2", uid: "u2" }, { namespace: "b", name: "o1", uid: "u3" },
];

/** Agent labels as the hub may carry them: an order's InfraEnv label, its order label, both, or neither. */
const labelsArb = fc.constantFrom<Record<string, string> | undefined>(undefined, ...ORDERS.flatMap((o): Record<string, string>[] => [
  { [INFRAENV_AGENT_LABEL]: infraEnvName(o.name) }, { [ORDER_LABEL]: o.uid },
  { [INFRAENV_AGENT_LABEL]: infraEnvName(o.name), [ORDER_LABEL]: "u-other" },
]));

const objArb: fc.Arbitrary<Obj> = fc.record({
  kind: fc.constantFrom<Kind>("Agent", "InfraEnv", "NodePool"),
  namespace: fc.constantFrom("a", "b", "c"),
  name: fc.constantFrom("x", "y", "z", "w"),
  rv: fc.integer({ min: 1, max: 1_000 }),
  labels: labelsArb,
}).map(({ kind, namespace, name, rv, labels }) => ({
  kind, meta: { name, namespace, resourceVersion: String(rv), ...(kind === "Agent" && labels ? { labels } : {}) },
}));

const key = (o: Obj) => `${o.kind}/${o.meta.namespace}/${o.meta.name}`;

/** A hub over the objects, answering label selectors of the form k=v as the apiserver does; records what it returned. */
function hubOver(objects: Obj[], order: ClusterOrder, read: Set<string>): HubReader {
  const pick = (kind: Kind, ns: string, selector?: string) => {
    const [k, v] = selector ? selector.split("=") : [];
    const out = objects.filter((o) => o.kind === kind && o.meta.namespace === ns && (!k || o.meta.labels?.[k] === v));
    for (const o of out) read.add(key(o));
    return out.map((o) => ({ metadata: { ...o.meta } }));
  };
  return {
    getClusterOrder: async () => order,
    listAgents: async (ns, sel) => pick("Agent", ns, sel),
    listInfraEnvs: async (ns) => pick("InfraEnv", ns),
    listNodePools: async (ns, sel) => pick("NodePool", ns, sel),
    listClusterDeployments: async () => [],
  };
}

const metadataKube = (objects: Obj[]) => ({
  listMetadata: async (kind: Kind): Promise<HubMeta[]> => objects.filter((o) => o.kind === kind).map((o) => ({ ...o.meta })),
});

async function observed(objects: Obj[], o: (typeof ORDERS)[number]): Promise<{ digest: string; read: Set<string> }> {
  const order: ClusterOrder = { metadata: { ...o, resourceVersion: "1" }, spec: { nodeRequests: [] } };
  const read = new Set<string>();
  const fulfillment = await fakeFulfillment();
  const obs = await observe({ kube: hubOver(objects, order, read), fulfillment, config: defaultPlannerConfig() }, o);
  return { digest: obs.hubDigest!, read };
}

describe("hub digests (property)", () => {
  it(`an observation's digest equals the metadata listing's, and moves exactly with what it reads (seed ${SEED}, ${RUNS} runs)`, async () => {
    let moved = 0;
    let kept = 0;
    await fc.assert(fc.asyncProperty(fc.uniqueArray(objArb, { selector: key, maxLength: 24 }), fc.nat(), async (objects, which) => {
      const digestOf = await listHubDigests(metadataKube(objects));
      const before = await Promise.all(ORDERS.map((o) => observed(objects, o)));
      ORDERS.forEach((o, i) => expect(digestOf(o)).toBe(before[i].digest));
      if (objects.length === 0) return;
      // One object gets a new version (any change to it does).
      const bumped = objects.map((o, i) => (i === which % objects.length
        ? { ...o, meta: { ...o.meta, resourceVersion: `${o.meta.resourceVersion}0` } } : o));
      const after = await listHubDigests(metadataKube(bumped));
      ORDERS.forEach((o, i) => {
        const reads = before[i].read.has(key(objects[which % objects.length]));
        expect(after(o) !== before[i].digest).toBe(reads);
        if (reads) moved++;
        else kept++;
      });
    }), { seed: SEED, numRuns: RUNS });
    expect(moved).toBeGreaterThan(RUNS / 10);
    expect(kept).toBeGreaterThan(RUNS / 10);
  });
});
