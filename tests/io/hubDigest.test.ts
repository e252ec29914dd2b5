// The hub digest (io/hubDigest.ts) as a property: over random hubs of Agents, InfraEnvs and NodePools in
// three namespaces, the digest an observation of an order computes from the objects it read equals the one
// a restarted reconciler computes from one metadata listing of the whole hub; and a new version of an
// object changes an order's digest exactly when the order's observation reads the object and a watch event
// of it ends the order's settled state in the running loop (controller/loop.ts, driven through its watches).
// Size: BMW_HUB_DIGEST_RUNS hubs (default 60), seeded by BMW_PROPERTY_SEED.
import fc from "fast-check";
import type { HubReader, Kube, ObjectMeta } from "../../clients/kube";
import { ReconcileLoop } from "../../controller/loop";
import { type HubMeta, listHubDigests } from "../../io/hubDigest";
import { observe } from "../../io/observe";
import { defaultPlannerConfig } from "../../planner/config";
import { INFRAENV_AGENT_LABEL, infraEnvName, NODEPOOL_ORDER_LABEL, ORDER_LABEL } from "../../planner/names";
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
const agentLabels = fc.constantFrom<Record<string, string> | undefined>(undefined, ...ORDERS.flatMap((o): Record<string, string>[] => [
  { [INFRAENV_AGENT_LABEL]: infraEnvName(o.name) }, { [ORDER_LABEL]: o.uid },
  { [INFRAENV_AGENT_LABEL]: infraEnvName(o.name), [ORDER_LABEL]: "u-other" },
]));
/** A NodePool labelled with an order's name, or not at all. */
const poolLabels = fc.constantFrom<Record<string, string> | undefined>(undefined, ...ORDERS.map((o) => ({ [NODEPOOL_ORDER_LABEL]: o.name })));
/** An InfraEnv owned by an order, by something else, or by nothing. */
const owners = fc.constantFrom<ObjectMeta["ownerReferences"]>(undefined,
  ...ORDERS.map((o) => [{ apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", name: o.name, uid: o.uid }]),
  [{ apiVersion: "v1", kind: "ConfigMap", name: "o1", uid: "cm" }]);

const objArb: fc.Arbitrary<Obj> = fc.record({
  kind: fc.constantFrom<Kind>("Agent", "InfraEnv", "NodePool"),
  namespace: fc.constantFrom("a", "b", "c"),
  name: fc.constantFrom("x", "y", "z", "w"),
  rv: fc.integer({ min: 1, max: 1_000 }),
  agent: agentLabels, pool: poolLabels, owner: owners,
}).map(({ kind, namespace, name, rv, agent, pool, owner }) => {
  const labels = kind === "Agent" ? agent : kind === "NodePool" ? pool : undefined;
  const ownerReferences = kind === "InfraEnv" ? owner : undefined;
  return { kind, meta: { name, namespace, resourceVersion: String(rv), ...(labels ? { labels } : {}), ...(ownerReferences ? { ownerReferences } : {}) } };
});

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

const PATHS: Record<Kind, string> = {
  Agent: "/apis/agent-install.openshift.io/v1beta1/agents",
  InfraEnv: "/apis/agent-install.openshift.io/v1beta1/infraenvs",
  NodePool: "/apis/hypershift.openshift.io/v1beta1/nodepools",
};

/** The orders whose settled state a watch event of `obj` ends in a running loop. */
async function invalidatedBy(obj: Obj): Promise<Set<string>> {
  const handlers = new Map<string, (type: string, o: unknown) => void>();
  const kube = {
    listClusterOrders: async () => ORDERS.map((o) => ({ metadata: { ...o, resourceVersion: "1" }, spec: {} })),
    collectionVersion: async () => "100",
    watch: (path: string, _q: unknown, onEvent: (type: string, o: unknown) => void) => {
      handlers.set(path, onEvent);
      return () => handlers.delete(path);
    },
  } as unknown as Kube;
  const hit = new Set<string>();
  let started!: Promise<void>;
  const loop = new ReconcileLoop({
    kube, log: () => undefined, intervalMs: 3_600_000, debounceMs: 3_600_000, isLeader: () => false,
    reconcile: async () => ({ action: "skipped" }),
    settled: {
      beginPass: () => undefined, check: async () => ({ miss: "none" }), forget: () => undefined,
      invalidate: (ref) => void hit.add(`${ref.namespace}/${ref.name}`), watchesStarted: (p) => void (started = p),
    },
  });
  await loop.start();
  await started;
  hit.clear(); // the tick's own enqueues keep settled states; only the event counts
  handlers.get(PATHS[obj.kind])?.("MODIFIED", { metadata: obj.meta });
  loop.stop();
  return hit;
}

describe("hub digests (property)", () => {
  it(`an observation's digest equals the metadata listing's, and moves exactly with what it reads and the watches follow (seed ${SEED}, ${RUNS} runs)`, async () => {
    let moved = 0;
    let kept = 0;
    await fc.assert(fc.asyncProperty(fc.uniqueArray(objArb, { selector: key, maxLength: 24 }), fc.nat(), async (objects, which) => {
      const digestOf = await listHubDigests(metadataKube(objects));
      const before = await Promise.all(ORDERS.map((o) => observed(objects, o)));
      ORDERS.forEach((o, i) => expect(digestOf(o)).toBe(before[i].digest));
      if (objects.length === 0) return;
      // One object gets a new version (any change to it does).
      const target = objects[which % objects.length];
      const bumped = objects.map((o) => (o === target ? { ...o, meta: { ...o.meta, resourceVersion: `${o.meta.resourceVersion}0` } } : o));
      const after = await listHubDigests(metadataKube(bumped));
      const invalidated = await invalidatedBy(target);
      ORDERS.forEach((o, i) => {
        // Exactly the objects the order's observation reads and a watch event of which ends its settled
        // state (the loop also ends it for an Agent labelled with its uid in another namespace, which no
        // observation reads).
        const relevant = invalidated.has(`${o.namespace}/${o.name}`) && before[i].read.has(key(target));
        expect(after(o) !== before[i].digest).toBe(relevant);
        if (relevant) moved++;
        else kept++;
      });
    }), { seed: SEED, numRuns: RUNS });
    expect(moved).toBeGreaterThan(RUNS / 10);
    expect(kept).toBeGreaterThan(RUNS / 10);
  });
});
