// Bad input (issue 7): every case ends in the expected condition, event or message, and touches
// nothing else — no BMI created or deleted beyond what the case allows, no foreign Agent changed, no
// NodePool or stack made where none should be. One lab is shared; each case is its own ClusterOrder
// in its own namespace, and the cases run side by side (reconciles go through a small pool, since
// each `up` starts a pulumi engine on a 2-core machine). Reconciles run in-process through
// App.reconcile; where the user-facing message matters the CLI runs as a child process.
import * as fs from "node:fs";
import * as path from "node:path";
import * as crypto from "node:crypto";
import { App } from "../../controller/app";
import type { OrderRef } from "../../io/observe";
import type { ReconcileResult } from "../../controller/reconcile";
import type { FulfillmentClient } from "../../clients/fulfillment";
import type { SampleNodeRequest, SampleOrder } from "../../lab";
import { CLUSTER_VERSION_ID, CLUSTER_VERSION_WITHOUT_IMAGE_ID, labHosts, RELEASE_IMAGE } from "../../lab/world";
import {
  FINALIZER, INFRAENV_AGENT_LABEL, infraEnvName, MANAGEMENT_STATE_ANNOTATION, ORDER_LABEL, stackName, WORKER_NAME_LABEL,
} from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";
import { eventually } from "../support/eventually";
import { startTestLab, type TestLab } from "../support/labEnv";
import { cli } from "../support/reconciler";
import { condition, Hub, type KubeObject, orderBmis, Pool, startIgnitionServer, type IgnitionServer } from "./support";
import { PROGRAM_PROCESS_IN_JEST } from "../support/env";

jest.setTimeout(360_000);

const suffix = crypto.randomBytes(3).toString("hex");
/** Every MAC of the lab's compute hosts: an Agent listing them all matches any compute BMI. */
const COMPUTE_MACS = labHosts(16).filter((h) => h.name.startsWith("compute")).flatMap((h) => h.macs);
const MARKER = `ignition-marker-${suffix}`;

interface Case {
  ref: OrderRef;
  uid: string;
  sample: SampleOrder;
}

let t: TestLab;
let app: App;
let hub: Hub;
let f: FulfillmentClient;
let ign: IgnitionServer;
const pool = new Pool(3);
/** Scenario promises, started together in beforeAll and awaited by their tests. */
const running = new Map<string, Promise<unknown>>();
/** BMIs each order may have at the end of the suite (the global "nothing else" check). */
const allowedBmis = new Map<string, number>();

/** BMW_BADINPUT_ONLY=a,b runs only those scenarios (to debug one; their tests alone are meaningful then). */
const only = process.env.BMW_BADINPUT_ONLY?.split(",");

function start<T>(key: string, scenario: () => Promise<T>): void {
  if (only && !only.includes(key)) return;
  const p = scenario();
  p.catch(() => undefined); // awaited (and reported) by the test that owns it
  running.set(key, p);
}

function result<T>(key: string): Promise<T> {
  const p = running.get(key);
  if (!p) throw new Error(`scenario ${key} was not started`);
  return p as Promise<T>;
}

async function newCase(key: string, nodeRequests: SampleNodeRequest[], clusterVersionId?: string): Promise<Case> {
  const namespace = await t.lab.createNamespace(`bi-${key}-${suffix}`);
  const sample = await t.lab.createSampleOrder({ namespace, name: key, nodeRequests, clusterVersionId });
  return { ref: { namespace, name: key }, uid: sample.uid, sample };
}

const reconcile = (ref: OrderRef): Promise<ReconcileResult> => pool.run(async () => {
  const r = await app.reconcile(ref);
  if (process.env.BMW_BADINPUT_DEBUG) process.stdout.write(`[debug] ${new Date().toISOString().slice(11, 19)} ${ref.name}: ${r.action} ${JSON.stringify(r.up?.changes)} ${JSON.stringify(r.plan?.workers.map((w) => [w.slot, w.binding?.agentName, w.retainBinding]))} ${JSON.stringify(r.plan?.status.workers.map((w) => w.phase))}\n`);
  return r;
});

async function order(c: Case): Promise<ClusterOrder> {
  const o = await hub.order(c.ref.namespace, c.ref.name);
  if (!o) throw new Error(`ClusterOrder ${c.ref.namespace}/${c.ref.name} is gone`);
  return o;
}

/** The lab's assisted-service stand-in publishes the InfraEnv's ignition URL. */
async function ignitionPublished(c: Case): Promise<void> {
  await eventually(async () => {
    const ie = (await hub.infraEnvs(c.ref.namespace)).find((i) => i.metadata?.name === infraEnvName(c.ref.name));
    const url = (ie?.status as { bootArtifacts?: { discoveryIgnitionURL?: string } } | undefined)?.bootArtifacts?.discoveryIgnitionURL;
    return url ? url : undefined;
  }, 30_000, 200);
}

/** First reconcile (creates the InfraEnv), the ignition URL appears, second reconcile (creates what the gates allow). */
async function bringUp(c: Case): Promise<ReconcileResult> {
  await reconcile(c.ref);
  await ignitionPublished(c);
  return reconcile(c.ref);
}

/** Reconciles until `done` holds for the order (the lab moves hosts and Agents in between). */
async function reconcileUntil(c: Case, done: (o: ClusterOrder) => Promise<boolean> | boolean, timeoutMs = 90_000): Promise<ClusterOrder> {
  let last: ClusterOrder | undefined;
  let action = "";
  try {
    last = await order(c);
    if (await done(last)) return last;
    return await eventually(async () => {
      action = (await reconcile(c.ref)).action;
      last = await order(c);
      return (await done(last)) ? last : undefined;
    }, timeoutMs, 500);
  } catch (e) {
    // The whole picture in the failure: phases, reasons, true conditions, Agents.
    const agents = (await hub.agents(c.ref.namespace)).map((a) => `${a.metadata?.name}:${JSON.stringify(a.metadata?.labels)}:${bound(a)}`);
    const picture = { action, workers: last?.status?.workers?.map((w) => `${w.name}:${w.phase}:${w.lastFailureReason ?? ""}`),
      conditions: last?.status?.conditions?.filter((x) => x.status === "True").map((x) => `${x.type}:${x.message}`), agents };
    throw new Error(`${c.ref.namespace}/${c.ref.name}: ${String(e)}: ${JSON.stringify(picture)}`);
  }
}

function agentSnapshot(a: KubeObject | undefined) {
  return { resourceVersion: a?.metadata?.resourceVersion, labels: a?.metadata?.labels, spec: a?.spec };
}

const bound = (a: KubeObject) => Boolean((a.spec?.clusterDeploymentName as { name?: string } | undefined)?.name);

beforeAll(async () => {
  const t0 = Date.now();
  t = await startTestLab("badinput");
  // A slow shared machine must not turn the Agent cases into registration timeouts (which replace BMIs).
  app = new App({ env: { ...t.env, ...PROGRAM_PROCESS_IN_JEST, BMW_AGENT_REGISTRATION_TIMEOUT_MS: "600000" }, stateDir: t.stateDir });
  hub = new Hub(t.lab.kubeConfig());
  f = t.lab.fulfillmentClient();
  ign = await startIgnitionServer(t.lab.dir, MARKER);

  // The world's bad objects, made through the fulfillment API as an admin would.
  const noFabricType = `nofabric-${suffix}`;
  await f.instanceTypes.create({ metadata: { name: noFabricType }, spec: {
    hardware: { cpu: { cores: 8, architecture: "x86_64" }, memory: { total_gb: 32 },
      network_ports: [{ name: "eno1", role: "lifecycle", type: "ethernet", speed: "1G" }] },
    host_label_selector: { match_labels: { "osac.openshift.io/host-class": "compute" } },
  } });
  const obsoleteImage = await f.diskImages.create({ metadata: { name: `rhcos-obsolete-${suffix}` }, spec: {
    source_type: "SOURCE_TYPE_REGISTRY", source_ref: "quay.io/openshift-release-dev/rhcos:4.16-x86_64",
    architecture: ["ARCHITECTURE_AMD64"], lifecycle: "DISK_IMAGE_LIFECYCLE_OBSOLETE",
  } });
  const cvObsolete = await f.clusterVersions.create({ metadata: { name: `4-16-9-${suffix}` },
    spec: { image: RELEASE_IMAGE, version: "4.16.9", enabled: true, disk_image: { id: obsoleteImage.id } } });
  const cvMissing = await f.clusterVersions.create({ metadata: { name: `4-16-8-${suffix}` },
    spec: { image: RELEASE_IMAGE, version: "4.16.8", enabled: true, disk_image: { id: `di-gone-${suffix}` } } });

  const compute1: SampleNodeRequest[] = [{ nodeSet: "compute", numberOfNodes: 1, instanceType: "compute" }];

  // Node requests: three bad node sets beside one good one. Only the good one gets a worker.
  start("requests", async () => {
    const c = await newCase("requests", [...compute1,
      { nodeSet: "huge", numberOfNodes: 1, instanceType: "compute" },
      { nodeSet: "unknown", numberOfNodes: 1, instanceType: "compute" },
      { nodeSet: "nofabric", numberOfNodes: 1, instanceType: "compute" },
      { nodeSet: "nopool", numberOfNodes: 1, instanceType: "compute" }]);
    await hub.deleteNodePool(c.ref.namespace, c.sample.nodePools.nopool);
    await hub.patchOrder(c.ref.namespace, c.ref.name, [
      { op: "replace", path: "/spec/nodeRequests/1/numberOfNodes", value: app.config.maxWorkersPerNodeSet * 1000 },
      { op: "replace", path: "/spec/nodeRequests/2/bareMetal/instanceType", value: `no-such-type-${suffix}` },
      { op: "replace", path: "/spec/nodeRequests/3/bareMetal/instanceType", value: noFabricType },
    ]);
    allowedBmis.set(c.uid, 2);
    await bringUp(c);
    const o = await reconcileUntil(c, async () => (await orderBmis(f, c.uid)).length >= 2);
    return { c, o };
  });

  // Disk images: one order whose fulfillment Cluster is moved from one bad ClusterVersion to the next
  // (no `up` runs while creates are blocked), then to the good one: the control, one BMI.
  start("disk", async () => {
    const c = await newCase("disk", compute1, cvMissing.id);
    allowedBmis.set(c.uid, 1);
    const outcomes: Record<string, { o: ClusterOrder; bmis: number; action: string }> = {};
    for (const [key, cv] of [["missing", cvMissing.id], ["obsolete", cvObsolete.id], ["unlinked", CLUSTER_VERSION_WITHOUT_IMAGE_ID], ["good", CLUSTER_VERSION_ID]]) {
      await f.clusters.update({ id: c.sample.clusterId, spec: { version: { id: cv } } }, { updateMask: ["spec.version"] });
      const r = key === "missing" ? await bringUp(c) : await reconcile(c.ref);
      outcomes[key] = { o: await order(c), bmis: (await orderBmis(f, c.uid)).length, action: r.action };
    }
    return { c, outcomes };
  });

  start("no-cd", async () => {
    const c = await newCase("no-cd", compute1);
    allowedBmis.set(c.uid, 0);
    await hub.deleteClusterDeployment(c.sample.clusterDeployment.namespace, c.sample.clusterDeployment.name);
    await bringUp(c);
    return { c, o: await order(c) };
  });

  // Ignition: the namespace leaves the lab's scope, so the test (not the assisted stand-in) sets the URL.
  start("ignition", async () => {
    const c = await newCase("ignition", compute1);
    allowedBmis.set(c.uid, 1);
    await hub.leaveLabScope(c.ref.namespace, t.lab.namespaceLabels);
    // The first update creates the InfraEnv and waits for its ignition to create the BMIs (F18): none is
    // published here, so the update fails before the fence, with nothing but the InfraEnv (and NodePool patches) made.
    const first = await reconcile(c.ref).then(() => undefined, (err: unknown) => String(err));
    expect(first).toMatch(/InfraEnv \S+ has no discovery ignition URL .* within \d+s; no BareMetalInstance was created/);
    expect(await orderBmis(f, c.uid)).toEqual([]);
    expect((await order(c)).status?.workers ?? []).toEqual([]);
    const ieName = infraEnvName(c.ref.name);
    expect((await hub.infraEnvs(c.ref.namespace)).map((i) => i.metadata?.name)).toEqual([ieName]);
    const outcomes: Record<string, { o: ClusterOrder; bmis: number; ms: number }> = {};
    for (const [kind, url] of [["http", ign.http("/ok.ign")], ["redirect", ign.https("/redirect")], ["big", ign.https("/big.ign")],
      ["garbage", ign.https("/garbage")], ["slow", ign.https("/slow")], ["ok", ign.https("/ok.ign")]] as const) {
      await hub.setIgnitionUrl(c.ref.namespace, ieName, url);
      const t1 = Date.now();
      await reconcile(c.ref);
      outcomes[kind] = { o: await order(c), bmis: (await orderBmis(f, c.uid)).length, ms: Date.now() - t1 };
    }
    return { c, outcomes };
  });

  // Two extra Agents of the order's InfraEnv that list every compute MAC: the BMI's MACs match both.
  start("ambiguous", async () => {
    const c = await newCase("ambiguous", compute1);
    allowedBmis.set(c.uid, 1);
    const labels = { [INFRAENV_AGENT_LABEL]: infraEnvName(c.ref.name) };
    await hub.createAgent(c.ref.namespace, "dup-a", labels, COMPUTE_MACS);
    await hub.createAgent(c.ref.namespace, "dup-b", labels, COMPUTE_MACS.map((m) => m.toLowerCase()));
    await bringUp(c);
    const bmi = await eventually(async () => (await orderBmis(f, c.uid)).find((b) => (b.status?.hardware?.nics ?? []).length > 0), 60_000, 200);
    // The host's own Agent registers too (three candidates then).
    await eventually(async () => ((await hub.agents(c.ref.namespace)).length >= 3 ? true : undefined), 60_000, 200);
    await reconcileUntil(c, (x) => condition(x, "AgentMatchAmbiguous")?.status === "True", 60_000);
    await reconcile(c.ref); // and again: still nothing bound
    return { c, o: await order(c), bmiId: bmi.id, agents: await hub.agents(c.ref.namespace), events: await hub.events(c.ref.namespace) };
  });

  // Agents with matching MACs that are not this order's: another namespace (even with our labels),
  // another order's label, another InfraEnv. The order's own host still binds.
  start("foreign", async () => {
    const c = await newCase("foreign", compute1);
    allowedBmis.set(c.uid, 1);
    const other = await t.lab.createNamespace(`bi-foreign-other-${suffix}`);
    const ours = infraEnvName(c.ref.name);
    const foreign = [
      await hub.createAgent(other, "other-namespace", { [INFRAENV_AGENT_LABEL]: ours, [ORDER_LABEL]: c.uid }, COMPUTE_MACS),
      await hub.createAgent(c.ref.namespace, "other-order", { [INFRAENV_AGENT_LABEL]: ours, [ORDER_LABEL]: crypto.randomUUID() }, COMPUTE_MACS),
      await hub.createAgent(c.ref.namespace, "other-infraenv", { [INFRAENV_AGENT_LABEL]: "someone-else-infraenv" }, COMPUTE_MACS),
    ];
    const before = foreign.map(agentSnapshot);
    await bringUp(c);
    const o = await reconcileUntil(c, async () => (await hub.agents(c.ref.namespace)).some((a) => bound(a) && a.metadata?.labels?.[ORDER_LABEL] === c.uid));
    const after = await Promise.all(foreign.map((a) => hub.agent(a.metadata!.namespace!, a.metadata!.name!)));
    return { c, o, before, after: after.map(agentSnapshot), agents: await hub.agents(c.ref.namespace) };
  });

  // Deleted while the `up` that creates its BMIs runs: the finalizer removes everything, then the order goes.
  start("deleted", async () => {
    // The first update makes the InfraEnv and one worker (decisions F18); the scale-up to 3 is the update raced.
    const c = await newCase("deleted", compute1);
    allowedBmis.set(c.uid, 0);
    await reconcile(c.ref);
    await ignitionPublished(c);
    await hub.patchOrder(c.ref.namespace, c.ref.name, [{ op: "replace", path: "/spec/nodeRequests/0/numberOfNodes", value: 3 }]);
    const creating = reconcile(c.ref);
    creating.catch(() => undefined);
    // The fence (Attempted entries) is written just before the BMIs are created: delete then.
    await eventually(async () => ((await order(c)).status?.workers?.length === 3 ? true : undefined), 240_000, 50);
    await hub.deleteOrder(c.ref.namespace, c.ref.name);
    const during = await creating.then((r) => r.action, (e: unknown) => `error: ${String(e)}`);
    const actions: string[] = [];
    await eventually(async () => {
      const r = await reconcile(c.ref);
      actions.push(r.action);
      return r.action === "deleted" || r.action === "gone" ? true : undefined;
    }, 120_000, 500);
    return { c, during, actions, stackExists: await app.stacks.stackExists(c.ref) };
  });

  // A corrupted checkpoint: the reconcile fails with a clear error and changes no BMI.
  start("corrupt", async () => {
    const c = await newCase("corrupt", compute1);
    allowedBmis.set(c.uid, 1);
    await bringUp(c);
    const before = await orderBmis(f, c.uid);
    const file = findStackFile(t.stateDir, stackName(c.ref.namespace, c.ref.name));
    fs.writeFileSync(file, "{\"version\": 3, \"checkpoint\": {\"latest\": {\"resources\": [ this is not json");
    await hub.patchOrder(c.ref.namespace, c.ref.name, [{ op: "replace", path: "/spec/nodeRequests/0/numberOfNodes", value: 2 }]);
    const run = await pool.run(() => cli(t.env, ["reconcile", `${c.ref.namespace}/${c.ref.name}`], 180_000));
    // Another order, reconciled by a fresh process (a restarted reconciler), is not affected by this file.
    const peer = (await result<{ c: Case }>("no-cd")).c;
    const peerRun = await pool.run(() => cli(t.env, ["reconcile", `${peer.ref.namespace}/${peer.ref.name}`], 180_000));
    return { c, before, run, peerRun, after: await orderBmis(f, c.uid), o: await order(c) };
  });

  start("unmanaged", async () => {
    const c = await newCase("unmanaged", compute1);
    allowedBmis.set(c.uid, 0);
    await hub.annotateOrder(c.ref.namespace, c.ref.name, { [MANAGEMENT_STATE_ANNOTATION]: "Unmanaged" });
    const run = await pool.run(() => cli(t.env, ["reconcile", `${c.ref.namespace}/${c.ref.name}`], 180_000));
    // Observing an order selects its stack (the rollback pin is stack config), so an empty stack may
    // exist; what matters is that no update ever ran on it.
    const updates = (await app.stacks.stackExists(c.ref)) ? (await app.stacks.history(c.ref)).length : 0;
    return { c, run, o: await order(c), updates };
  });
  process.stdout.write(`[badinput] lab and world ready in ${Date.now() - t0} ms\n`);
});

afterAll(async () => {
  await Promise.allSettled([...running.values()]);
  await ign?.close();
  f?.close();
  app?.close();
  await t?.stop();
});

/** The DIY backend's checkpoint of one stack (.pulumi/stacks/<project>/<stack>.json). */
function findStackFile(stateDir: string, stack: string): string {
  const root = path.join(stateDir, ".pulumi", "stacks");
  const found = fs.readdirSync(root, { recursive: true, encoding: "utf8" }).filter((p) => path.basename(p) === `${stack}.json`);
  if (found.length !== 1) throw new Error(`expected one checkpoint of ${stack} under ${root}, found ${JSON.stringify(found)}`);
  return path.join(root, found[0]);
}

type Requests = { c: Case; o: ClusterOrder };

describe("node requests", () => {
  it("freezes a node set whose count exceeds BMW_MAX_WORKERS_PER_NODE_SET: no BMI, NodePool untouched", async () => {
    const { c, o } = await result<Requests>("requests");
    const max = app.config.maxWorkersPerNodeSet;
    const invalid = condition(o, "InvalidNodeRequest");
    expect(invalid).toMatchObject({ status: "True", reason: "InvalidNodeRequest" });
    expect(invalid?.message).toContain(`node set huge: numberOfNodes ${max * 1000} is outside 0..${max}; its workers are left as they are`);
    expect(o.status?.workers?.filter((w) => w.nodeSet === "huge")).toEqual([]);
    const pools = await hub.nodePools(c.ref.namespace);
    const huge = pools.find((p) => p.metadata?.name === c.sample.nodePools.huge);
    expect(huge?.spec?.replicas).toBe(0);
  });

  it("creates nothing for an unknown BareMetalInstanceType", async () => {
    const { o } = await result<Requests>("requests");
    expect(condition(o, "InvalidNodeRequest")?.message).toContain(`node set unknown: BareMetalInstanceType no-such-type-${suffix} does not exist`);
    expect(o.status?.workers?.filter((w) => w.nodeSet === "unknown")).toEqual([]);
  });

  it("creates nothing for an instance type without a fabric port when the request names none", async () => {
    const { o } = await result<Requests>("requests");
    expect(condition(o, "InvalidNodeRequest")?.message).toContain(
      `node set nofabric: BareMetalInstanceType nofabric-${suffix} has no network port with role fabric and the node request sets no fabricInterface`);
    expect(o.status?.workers?.filter((w) => w.nodeSet === "nofabric")).toEqual([]);
  });

  it("still serves the valid node sets beside them: one BMI each for compute and nopool, none else", async () => {
    const { c, o } = await result<Requests>("requests");
    const bmis = await orderBmis(f, c.uid);
    expect(bmis).toHaveLength(2);
    const workers = (o.status?.workers ?? []).map((w) => [w.nodeSet, w.bareMetalInstance?.name]).sort();
    expect(workers.map((w) => w[0])).toEqual(["compute", "nopool"]);
    expect(new Set(workers.map((w) => w[1]))).toEqual(new Set(bmis.map((b) => b.metadata?.name)));
  });

  it("is refused by the CRD below 1 (0, negative, not an integer): the order is unchanged", async () => {
    const { c } = await result<Requests>("requests");
    const before = await order(c);
    for (const value of [0, -3, "two", 1.5]) {
      const err = await hub.patchOrder(c.ref.namespace, c.ref.name, [{ op: "replace", path: "/spec/nodeRequests/0/numberOfNodes", value }])
        .then(() => undefined, (e: unknown) => e as { code?: number; body?: string });
      expect(err?.code).toBe(422);
      expect(String(err?.body)).toMatch(/numberOfNodes/);
    }
    const after = await order(c);
    expect(after.metadata.generation).toBe(before.metadata.generation);
    expect(after.spec.nodeRequests?.[0].numberOfNodes).toBe(1);
  });
});

type DiskOutcomes = { c: Case; outcomes: Record<string, { o: ClusterOrder; bmis: number; action: string }> };

describe("disk images", () => {
  const expectBlocked = async (key: string, reason: string, message: RegExp) => {
    const { outcomes } = await result<DiskOutcomes>("disk");
    const { o, bmis } = outcomes[key];
    const rhcos = condition(o, "RHCOSImageNotFound");
    expect(rhcos).toMatchObject({ status: "True", reason });
    expect(rhcos?.message).toMatch(message);
    expect(rhcos?.message).toContain("no bare-metal workers are created");
    // Blocked by the image alone: the ignition was there.
    expect(condition(o, "InfraEnvReady")?.status).toBe("True");
    expect(bmis).toBe(0);
    expect(o.status?.workers ?? []).toEqual([]);
  };

  it("a ClusterVersion whose DiskImage does not exist blocks every create", async () => {
    await expectBlocked("missing", "DiskImageNotFound", /ClusterVersion 4-16-8-\w+ has no resolvable disk_image/);
  });

  it("an OBSOLETE DiskImage blocks every create", async () => {
    await expectBlocked("obsolete", "Obsolete", /DiskImage rhcos-obsolete-\w+ of ClusterVersion 4-16-9-\w+ is OBSOLETE/);
  });

  it("a ClusterVersion without any disk image blocks every create", async () => {
    await expectBlocked("unlinked", "NotLinked", /ClusterVersion 4-18-0 has no resolvable disk_image: link a DiskImage to it/);
  });

  it("creates the worker once the cluster's ClusterVersion links a usable DiskImage (the control)", async () => {
    const { outcomes } = await result<DiskOutcomes>("disk");
    expect(condition(outcomes.good.o, "RHCOSImageNotFound")).toMatchObject({ status: "False", reason: "DiskImageResolved" });
    expect(outcomes.good.bmis).toBe(1);
  });
});

describe("missing hub objects", () => {
  it("without the ClusterDeployment nothing is created (ClusterNotReady)", async () => {
    const { c, o } = await result<{ c: Case; o: ClusterOrder }>("no-cd");
    expect(condition(o, "ClusterNotReady")).toMatchObject({ status: "True", reason: "ClusterDeploymentNotFound" });
    expect(condition(o, "InfraEnvReady")?.status).toBe("True");
    expect(await orderBmis(f, c.uid)).toEqual([]);
    expect(o.status?.workers ?? []).toEqual([]);
  });

  it("without a node set's NodePool it reports NodePoolUnmapped, never makes one, and the worker is still created", async () => {
    const { c, o } = await result<Requests>("requests");
    const np = condition(o, "NodePoolUnmapped");
    expect(np).toMatchObject({ status: "True", reason: "NodePoolUnmapped" });
    expect(np?.message).toContain("no NodePool serves node set nopool");
    expect((await hub.nodePools(c.ref.namespace)).map((p) => p.metadata?.name)).not.toContain(c.sample.nodePools.nopool);
    // The design waits for the ClusterDeployment, not the NodePool: the worker's BMI exists.
    expect(o.status?.workers?.filter((w) => w.nodeSet === "nopool")).toHaveLength(1);
  });
});

type IgnitionOutcomes = { c: Case; outcomes: Record<string, { o: ClusterOrder; bmis: number; ms: number }> };

describe("discovery ignition", () => {
  const expectRefused = async (kind: string, reason: string) => {
    const { outcomes } = await result<IgnitionOutcomes>("ignition");
    const { o, bmis } = outcomes[kind];
    const ready = condition(o, "InfraEnvReady");
    expect(ready).toMatchObject({ status: "False", reason: "IgnitionFetchFailed" });
    expect(ready?.message).toContain(`(${reason})`);
    expect(ready?.message).not.toContain(MARKER); // no byte of the body reaches the status
    expect(bmis).toBe(0);
    expect(o.status?.workers ?? []).toEqual([]);
    return ready?.message ?? "";
  };

  it("refuses an http:// URL without connecting", async () => {
    const msg = await expectRefused("http", "NotHttps");
    expect(msg).toContain("HTTPS only");
    expect(ign.hits.get("http /ok.ign")).toBeUndefined(); // the plaintext server was never asked
  });

  it("does not follow a redirect, even to a valid ignition", async () => {
    const msg = await expectRefused("redirect", "Redirect");
    expect(msg).toContain("redirects are not followed");
  });

  it("refuses an ignition larger than 64 KiB", async () => {
    const msg = await expectRefused("big", "TooLarge");
    expect(msg).toContain("exceeds 65536 bytes");
  });

  it("refuses a body that is not JSON", async () => {
    await expectRefused("garbage", "NotJson");
  });

  it("gives up on a server that never finishes, within the fetch timeout", async () => {
    const msg = await expectRefused("slow", "Timeout");
    expect(msg).toMatch(/did not complete within \d+ ms/);
    const { outcomes } = await result<IgnitionOutcomes>("ignition");
    expect(outcomes.slow.ms).toBeLessThan(60_000);
  });

  it("creates the worker once the same InfraEnv points at a valid HTTPS ignition (the control)", async () => {
    const { outcomes } = await result<IgnitionOutcomes>("ignition");
    expect(condition(outcomes.ok.o, "InfraEnvReady")).toMatchObject({ status: "True", reason: "IgnitionAvailable" });
    expect(outcomes.ok.bmis).toBe(1);
  });
});

describe("Agents", () => {
  it("binds nothing when two Agents carry the BMI's MACs, and says which (AgentMatchAmbiguous)", async () => {
    const { c, o, bmiId, agents, events } = await result<{ c: Case; o: ClusterOrder; bmiId: string; agents: KubeObject[]; events: { reason?: string; type?: string; note?: string }[] }>("ambiguous");
    const amb = condition(o, "AgentMatchAmbiguous");
    expect(amb).toMatchObject({ status: "True", reason: "AmbiguousAgentMatch" });
    expect(amb?.message).toMatch(/dup-a/);
    expect(amb?.message).toMatch(/dup-b/);
    expect(amb?.message).toContain("nothing is bound until the match is unique");
    const ev = events.find((e) => e.reason === "AmbiguousAgentMatch");
    expect(ev?.type).toBe("Warning");
    for (const a of agents) {
      expect(bound(a)).toBe(false);
      expect(a.metadata?.labels?.[WORKER_NAME_LABEL]).toBeUndefined();
      expect(a.metadata?.labels?.[ORDER_LABEL]).toBeUndefined();
    }
    // The worker's BMI is neither replaced nor deleted while it waits.
    expect((await orderBmis(f, c.uid)).map((b) => b.id)).toEqual([bmiId]);
  });

  it("never touches an Agent of another namespace, order or InfraEnv with matching MACs; binds its own", async () => {
    const { c, before, after, agents, o } = await result<{ c: Case; o: ClusterOrder; before: unknown[]; after: unknown[]; agents: KubeObject[] }>("foreign");
    expect(after).toEqual(before);
    const mine = agents.filter((a) => a.metadata?.labels?.[ORDER_LABEL] === c.uid);
    expect(mine).toHaveLength(1);
    expect(bound(mine[0])).toBe(true);
    expect(["other-order", "other-infraenv"]).not.toContain(mine[0].metadata?.name);
    expect(condition(o, "AgentMatchAmbiguous")?.status).toBe("False");
    expect(await orderBmis(f, c.uid)).toHaveLength(1);
  });
});

describe("lifecycle edges", () => {
  it("Unmanaged: the CLI says the order is paused and nothing is made (no InfraEnv, BMI, stack update or NodePool change)", async () => {
    const { c, run, o, updates } = await result<{ c: Case; run: { code: number; stdout: string; stderr: string }; o: ClusterOrder; updates: number }>("unmanaged");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`${c.ref.namespace}/${c.ref.name}: paused`);
    expect(run.stdout).toContain("management-state=Unmanaged");
    expect(condition(o, "Managed")).toMatchObject({ status: "False", reason: "Unmanaged" });
    expect(await hub.infraEnvs(c.ref.namespace)).toEqual([]);
    expect(await orderBmis(f, c.uid)).toEqual([]);
    expect(updates).toBe(0);
    expect((await hub.nodePools(c.ref.namespace)).map((p) => p.spec?.replicas)).toEqual([0]);
    // Deletion still runs for an Unmanaged order: the finalizer is there.
    expect(o.metadata.finalizers).toContain(FINALIZER);
  });

  it("a ClusterOrder deleted while its BMIs are being created: the finalizer removes every BMI and the stack, then the order goes", async () => {
    const { c, actions, stackExists } = await result<{ c: Case; during: string; actions: string[]; stackExists: boolean }>("deleted");
    expect(actions[actions.length - 1]).toMatch(/^(deleted|gone)$/);
    expect(actions).toContain("deleted");
    expect(await hub.order(c.ref.namespace, c.ref.name)).toBeUndefined();
    expect(await orderBmis(f, c.uid)).toEqual([]);
    expect((await hub.agents(c.ref.namespace)).filter((a) => a.metadata?.labels?.[ORDER_LABEL] === c.uid)).toEqual([]);
    expect(stackExists).toBe(false);
  });

  it("a corrupted stack checkpoint fails that order's reconcile with a clear error, changes no BMI, and leaves other orders alone", async () => {
    const { c, run, peerRun, before, after, o } = await result<{ c: Case; before: { id: string }[]; after: { id: string; metadata?: { deletion_timestamp?: unknown } | null }[];
      run: { code: number; stdout: string; stderr: string }; peerRun: { code: number; stdout: string; stderr: string }; o: ClusterOrder }>("corrupt");
    if (process.env.BMW_BADINPUT_DEBUG) process.stdout.write(`[debug] corrupt stderr: ${run.stderr}\n[debug] peer: ${peerRun.stdout} ${peerRun.stderr}\n`);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: /m);
    expect(run.stderr).toContain(`failed to load checkpoint`);
    expect(run.stderr).toContain(`--stack ${stackName(c.ref.namespace, c.ref.name)}`);
    expect(after.map((b) => b.id)).toEqual(before.map((b) => b.id));
    expect(after.every((b) => !b.metadata?.deletion_timestamp)).toBe(true);
    // No create was fenced either: the status still lists the one worker.
    expect(o.status?.workers?.length).toBe(1);
    // The other orders' stacks are unaffected (a fresh process, as after a restart).
    expect(peerRun.code).toBe(0);
    expect(peerRun.stdout).toContain("no-cd: ");
    // The CLI's progress output (the engine's lines on stderr) carries no secret either.
    expect(`${run.stdout}${run.stderr}${peerRun.stdout}${peerRun.stderr}`).not.toContain(t.lab.pullSecret.token);
  });
});

describe("the whole lab afterwards", () => {
  it("holds exactly the BMIs the cases allow, all created in tenant system", async () => {
    await Promise.allSettled([...running.values()]);
    const all = await f.bareMetalInstances.listAll();
    const live = all.filter((b) => !b.metadata?.deletion_timestamp);
    const byOrder = new Map<string, number>();
    for (const b of live) {
      const uid = b.metadata?.labels?.[ORDER_LABEL] ?? "(none)";
      byOrder.set(uid, (byOrder.get(uid) ?? 0) + 1);
    }
    for (const [uid, allowed] of allowedBmis) expect([uid, byOrder.get(uid) ?? 0]).toEqual([uid, allowed]);
    expect([...byOrder.keys()].filter((uid) => !allowedBmis.has(uid))).toEqual([]);
    expect(live.every((b) => b.metadata?.tenant === "system")).toBe(true);
    expect((await t.lab.stats()).fulfillment.creates_without_system_tenant).toBe(0);
  });
});

