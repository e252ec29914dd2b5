// The reconciler's observation handed to the program: what the file holds (no ignition, no ignition URL,
// no pull secret), its size for a 20-worker order, the program's plan from it (the same as from the
// observation itself, names included; no observation of its own; the ignition fetched only for a BMI to
// be created), and the program observing for itself when there is no handoff, when it is stale or malformed.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { decodeHandoff, encodeHandoff, HANDOFF_FILE_ENV, readHandoff, WITHHELD_IGNITION, writeHandoff } from "../../io/handoff";
import { incarnationNames, nameSeed } from "../../io/incarnationNames";
import type { Observation } from "../../io/observe";
import { programPlan, type ProgramPlanDeps } from "../../io/programPlan";
import { defaultPlannerConfig } from "../../planner/config";
import { fingerprint, plan } from "../../planner";
import type { ClusterOrder, IgnitionFetch, Snapshot } from "../../planner/types";
import { bmiFor, boundAgent, bmRequest, entry, NS, ORDER, snap, UID } from "../planner/builders";

const REF = { namespace: NS, name: ORDER };
const PULL_SECRET = "{\"auths\":{\"cloud.openshift.com\":{\"auth\":\"cHVsbC1zZWNyZXQtdG9rZW4tZm9yLXRlc3Rz\"}}}";
const API_KEY = "b2f1c5e0d9a84c7fa1e3b6d2c8f40917";
const IGNITION_URL = `https://assisted.example/api/assisted-install/v2/infra-envs/ie-1/downloads/files?file_name=discovery.ign&api_key=${API_KEY}`;
/** A discovery ignition of the lab's size (~15 KB) carrying the pull secret, as a real one does. */
const IGNITION = JSON.stringify({ ignition: { version: "3.2.0" }, storage: { files: [{ path: "/root/.docker/config.json",
  contents: { source: `data:,${encodeURIComponent(PULL_SECRET)}` } }, { path: "/etc/pad", contents: { source: `data:,${"x".repeat(15_000)}` } }] } });
const config = defaultPlannerConfig();

/** An order of `ready` Ready workers (BMIs listed, Agents bound) that asks for `requested` compute workers. */
function observation(ready: number, requested = ready): Observation {
  const names = Array.from({ length: ready }, (_, i) => `w${String(i).padStart(2, "0")}`);
  const s = snap({
    nodeRequests: [bmRequest("compute", requested)],
    workers: names.map((n) => entry(n, { phase: "Ready", readySince: "2026-12-01T09:00:00Z" })),
    bmis: names.map((n) => bmiFor(n, { spec: { catalogItem: "cat-system", instanceType: "bm.small",
      networkAttachment: { subnet: "subnet-1", securityGroups: ["sg-1", "sg-2"], interface: "eth1" } } })),
    agents: names.map((n) => boundAgent(n, n, "added-to-existing-cluster")),
    nodePools: [{ name: "np-compute", namespace: NS, nodeSet: "compute", replicas: requested, statusReplicas: ready }],
    infraEnv: { name: `${ORDER}-infraenv`, uid: "ie-1", ignitionUrl: IGNITION_URL },
    ignition: { ok: true, content: IGNITION, bytes: Buffer.byteLength(IGNITION) },
    orderPatch: (o) => {
      o.spec.pullSecret = PULL_SECRET;
      o.metadata.annotations = { "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({ spec: { pullSecret: PULL_SECRET } }),
        "osac.openshift.io/tenant": "acme" };
      o.metadata.labels = { "osac.openshift.io/clusterorder-uuid": "c-1" };
    },
  });
  const seed = nameSeed(s.order);
  return { snapshot: { ...s, newName: incarnationNames(seed) }, fulfillmentCalls: 7, nameSeed: seed };
}

/** The plan the reconciler makes of its observation: a fresh name generator from the same seed. */
function reconcilerPlan(obs: Observation) {
  return plan({ ...obs.snapshot, newName: incarnationNames(obs.nameSeed) });
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "bmw-handoff-test-"));
}

interface Counting {
  deps: ProgramPlanDeps;
  observed: number;
  orderReads: number;
  infraEnvLists: number;
  ignitionFetches: number;
  logs: string[];
}

/** The program's dependencies over a hub whose order is at `resourceVersion`, counting every read. */
function programDeps(order: ClusterOrder, obs: Observation, o: { resourceVersion?: string; infraEnvUid?: string } = {}): Counting {
  const c: Counting = { observed: 0, orderReads: 0, infraEnvLists: 0, ignitionFetches: 0, logs: [], deps: undefined as never };
  c.deps = {
    kube: {
      getClusterOrder: async () => {
        c.orderReads++;
        return { ...order, metadata: { ...order.metadata, resourceVersion: o.resourceVersion ?? order.metadata.resourceVersion } };
      },
      listInfraEnvs: async () => {
        c.infraEnvLists++;
        return [{ metadata: { name: `${ORDER}-infraenv`, uid: o.infraEnvUid ?? "ie-1", ownerReferences: [{ uid: UID, kind: "ClusterOrder" }] },
          status: { bootArtifacts: { discoveryIgnitionURL: IGNITION_URL } } }] as never;
      },
    },
    config,
    observe: async () => {
      c.observed++;
      return { ...obs, snapshot: { ...obs.snapshot, newName: incarnationNames(obs.nameSeed) } };
    },
    loadIgnition: async (url: string): Promise<IgnitionFetch> => {
      c.ignitionFetches++;
      expect(url).toBe(IGNITION_URL);
      return { ok: true, content: IGNITION, bytes: Buffer.byteLength(IGNITION) };
    },
    log: (m) => c.logs.push(m),
  };
  return c;
}

function handoffFile(obs: Observation): string {
  return writeHandoff(tempDir(), REF, obs)[HANDOFF_FILE_ENV];
}

describe("the observation handoff", () => {
  it("holds no ignition, ignition URL or pull secret, and is about 23 KB for a 20-worker order", () => {
    const text = encodeHandoff(REF, observation(20));
    for (const secret of [IGNITION.slice(0, 200), "cHVsbC1zZWNyZXQtdG9rZW4", API_KEY, "last-applied-configuration", "x".repeat(100)]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain("osac.openshift.io/tenant");
    const bytes = Buffer.byteLength(text);
    expect(bytes).toBeGreaterThan(15_000);
    expect(bytes).toBeLessThan(40_000);
  });

  it("is a 0600 file written once into the caller's private directory", () => {
    const dir = tempDir();
    const env = writeHandoff(dir, REF, observation(2));
    expect(Object.keys(env)).toEqual([HANDOFF_FILE_ENV]);
    expect(path.dirname(env[HANDOFF_FILE_ENV])).toBe(dir);
    expect(fs.statSync(env[HANDOFF_FILE_ENV]).mode & 0o777).toBe(0o600);
    expect(() => writeHandoff(dir, REF, observation(2))).toThrow(/EEXIST/);
  });

  it("plans to the same plan as the observation it came from, with the ignition withheld from adopted BMIs", () => {
    const obs = observation(20);
    const handed = readHandoff(handoffFile(obs), REF, config);
    expect(handed.ignitionWithheld).toBe(true);
    const fromHandoff = plan(handed.snapshot);
    const direct = reconcilerPlan(obs);
    expect(fingerprint(fromHandoff)).toBe(fingerprint(direct));
    expect(fromHandoff.status).toEqual(direct.status);
    expect(fromHandoff.events).toEqual(direct.events);
    expect(fromHandoff.workers.map((w) => w.bmi.adoptId)).toEqual(direct.workers.map((w) => w.bmi.adoptId));
    expect(fromHandoff.workers.every((w) => w.bmi.userData === WITHHELD_IGNITION)).toBe(true);
  });

  it("gives the program the reconciler's plan with no observation of its own; a converged order needs no ignition", async () => {
    const obs = observation(20);
    const c = programDeps(obs.snapshot.order, obs);
    const r = await programPlan(c.deps, REF, { file: handoffFile(obs) }, undefined);
    expect(r.source).toBe("handoff");
    expect({ observed: c.observed, orderReads: c.orderReads, infraEnvLists: c.infraEnvLists, ignitionFetches: c.ignitionFetches })
      .toEqual({ observed: 0, orderReads: 1, infraEnvLists: 0, ignitionFetches: 0 });
    expect(fingerprint(r.plan)).toBe(fingerprint(reconcilerPlan(obs)));
  });

  it("fetches the ignition once when the plan creates BMIs, and names them as the reconciler's plan did", async () => {
    const obs = observation(18, 20);
    const direct = reconcilerPlan(obs);
    expect(direct.fence).toHaveLength(2);
    const c = programDeps(obs.snapshot.order, obs);
    const r = await programPlan(c.deps, REF, { file: handoffFile(obs) }, undefined);
    expect(r.source).toBe("handoff");
    expect({ observed: c.observed, orderReads: c.orderReads, infraEnvLists: c.infraEnvLists, ignitionFetches: c.ignitionFetches })
      .toEqual({ observed: 0, orderReads: 1, infraEnvLists: 1, ignitionFetches: 1 });
    expect(r.plan).toEqual(direct);
    expect(fingerprint(r.plan)).toBe(fingerprint(direct));
    const created = r.plan.workers.filter((w) => !w.bmi.adoptId);
    expect(created.map((w) => w.bmi.name)).toEqual(direct.fence.map((f) => f.bareMetalInstance?.name));
    expect(created.every((w) => w.bmi.userData === IGNITION)).toBe(true);
  });

  it("plans from what the reconciler left (rejections, error count) with the program's own rollback pin, as the reconciler planned", async () => {
    const obs = observation(18, 20);
    const pin = { counts: { compute: 19 }, update: 4 };
    const left: Observation = { ...obs, snapshot: { ...obs.snapshot, fulfillmentErrors: 0, lastUpdate: { ok: false, reason: "UpdateFailed", message: "m" }, pin } };
    const c = programDeps(left.snapshot.order, left);
    const r = await programPlan(c.deps, REF, { file: handoffFile(left) }, pin);
    expect(r.plan).toEqual(reconcilerPlan(left));
    expect(r.plan.fence).toHaveLength(1); // 18 → 19, the pin's count, not the request's 20
    expect(r.plan.status.desiredWorkers).toBe(20); // the request is still reported
    expect(r.plan.targetWorkers).toBe(19);
    // The program's stack config is the authority: a pin in the handoff is not applied without it.
    expect((await programPlan(programDeps(left.snapshot.order, left).deps, REF, { file: handoffFile(left) }, undefined)).plan.fence).toHaveLength(2);
  });

  it("is stale once the order moved past the handed-off resourceVersion: the program observes for itself", async () => {
    const obs = observation(18, 20);
    const c = programDeps(obs.snapshot.order, obs, { resourceVersion: "101" });
    const r = await programPlan(c.deps, REF, { file: handoffFile(obs) }, undefined);
    expect(r.source).toBe("observed");
    expect(c.observed).toBe(1);
    expect(c.logs.join("\n")).toMatch(/changed since the reconciler observed it \(resourceVersion 100 → 101\)/);
  });

  it("is not used when the InfraEnv was recreated since (the program observes, for the stale-ignition rules)", async () => {
    const obs = observation(18, 20);
    const c = programDeps(obs.snapshot.order, obs, { infraEnvUid: "ie-2" });
    const r = await programPlan(c.deps, REF, { file: handoffFile(obs) }, undefined);
    expect(r.source).toBe("observed");
    expect(c.ignitionFetches).toBe(0);
  });

  it("without a handoff (an admin's preview) the program observes as always", async () => {
    const obs = observation(3);
    const c = programDeps(obs.snapshot.order, obs);
    const r = await programPlan(c.deps, REF, undefined, undefined);
    expect(r.source).toBe("observed");
    expect({ observed: c.observed, orderReads: c.orderReads }).toEqual({ observed: 1, orderReads: 0 });
    expect(fingerprint(r.plan)).toBe(fingerprint(reconcilerPlan(obs)));
  });

  const valid = (): Record<string, unknown> => JSON.parse(encodeHandoff(REF, observation(2)));
  const malformed: [string, (d: Record<string, unknown>) => unknown, RegExp][] = [
    ["not JSON", () => "{\"format\": ", /is not JSON/],
    ["another format version", (d) => ({ ...d, version: 2 }), /is not a baremetal-workers\/observation v1 handoff/],
    ["another order", (d) => ({ ...d, order: "other/order" }), /order is not tenant-a\/co1/],
    ["an order without resourceVersion", (d) => {
      const s = d.snapshot as { order: { metadata: Record<string, unknown> } };
      delete s.order.metadata.resourceVersion;
      return d;
    }, /snapshot\.order\.metadata\.resourceVersion is not a string/],
    ["a BMI without id", (d) => {
      const s = d.snapshot as { bmis: Record<string, unknown>[] };
      delete s.bmis[1].id;
      return d;
    }, /snapshot\.bmis\[1\]\.id is not a string/],
    ["agents that are not a list", (d) => ({ ...d, snapshot: { ...(d.snapshot as object), agents: {} } }), /snapshot\.agents is not an array/],
    ["an ignition with content", (d) => ({ ...d, snapshot: { ...(d.snapshot as object), ignition: { ok: true, bytes: 3, content: "{}" } } }),
      /snapshot\.ignition carries content/],
  ];

  it.each(malformed)("with %s is rejected with a clear error, and the program observes instead", async (_what, edit, message) => {
    const obs = observation(2);
    const edited = edit(valid());
    const file = path.join(tempDir(), "observation.json");
    fs.writeFileSync(file, typeof edited === "string" ? edited : JSON.stringify(edited), { mode: 0o600 });
    expect(() => readHandoff(file, REF, config)).toThrow(message);
    const c = programDeps(obs.snapshot.order, obs);
    const r = await programPlan(c.deps, REF, { file }, undefined);
    expect(r.source).toBe("observed");
    expect(c.observed).toBe(1);
    expect(c.logs.join("\n")).toMatch(message);
  });

  it("missing is reported as unreadable, and the program observes instead", async () => {
    const obs = observation(2);
    const c = programDeps(obs.snapshot.order, obs);
    const r = await programPlan(c.deps, REF, { file: path.join(tempDir(), "gone.json") }, undefined);
    expect(r.source).toBe("observed");
    expect(c.logs.join("\n")).toMatch(/cannot be read \(ENOENT\)/);
  });

  it("round-trips every field the planner reads except the secrets", () => {
    const obs = observation(3);
    const handed = decodeHandoff(JSON.parse(encodeHandoff(REF, obs)), REF, config);
    const strip = (s: Snapshot) => {
      const { newName: _n, config: _c, ignition: _i, infraEnv: _e, order: _o, ...rest } = s;
      return rest;
    };
    expect(strip(handed.snapshot)).toEqual(strip(obs.snapshot));
    expect(handed.snapshot.order.spec.pullSecret).toBeUndefined();
    expect(handed.snapshot.order.spec.nodeRequests).toEqual(obs.snapshot.order.spec.nodeRequests);
    expect(handed.snapshot.order.status).toEqual(obs.snapshot.order.status);
    expect(handed.snapshot.infraEnv).toEqual({ name: `${ORDER}-infraenv`, uid: "ie-1", ignitionUrl: "withheld:" });
  });
});
