// The lab's pure pieces: the assisted host states, the NodePool decision, the discovery ignition.
import * as fs from "node:fs";
import * as path from "node:path";
import { nextHostState, S, statusFor } from "../../lab/controllers/assisted/agentStates";
import { discoveryIgnition, infraEnvOfIgnition } from "../../lab/controllers/assisted/ignition";
import { hostId } from "../../lab/controllers/assisted/inventory";
import { planNodePool } from "../../lab/controllers/hypershift/nodePools";
import type { Agent, NodePool } from "../../lab/controllers/types";
import { matchesSelector } from "../../lab/kube";
import { ensureLabCa } from "../../lab/pki";
import { labHosts, labPullSecret } from "../../lab/world";
import { tempDir } from "./helpers";

const T = { bindMs: 100, installMs: 300, unbindMs: 50 };
const CD = { name: "hc1", namespace: "ns-hc1" };

function agent(name: string, state: string, opts: { bound?: boolean; approved?: boolean; labels?: Record<string, string>; installedOnce?: boolean } = {}): Agent {
  return {
    metadata: { name, namespace: "ns", uid: `uid-${name}`, creationTimestamp: `2026-01-01T00:00:0${name.slice(-1)}Z`,
      labels: opts.labels ?? { agentBareMetal: "true", "osac.openshift.io/node-set": "compute" } },
    spec: { approved: opts.approved ?? true, role: "", clusterDeploymentName: opts.bound === false ? null : CD },
    status: { debugInfo: { state }, progress: opts.installedOnce ? { currentStage: "Done" } : undefined },
  };
}

function nodePool(replicas: number): NodePool {
  return {
    metadata: { name: "hc1-compute", namespace: "ns" },
    spec: { clusterName: "hc1", replicas, platform: { type: "Agent", agent: { agentLabelSelector: { matchLabels: { agentBareMetal: "true", "osac.openshift.io/node-set": "compute" } } } } },
  };
}

describe("assisted host states", () => {
  test("binding a known-unbound agent starts binding, which ends in known after bindMs", () => {
    expect(nextHostState(agent("a1", S.knownUnbound), 0, T)).toBe(S.binding);
    expect(nextHostState(agent("a1", S.knownUnbound, { bound: false }), 10_000, T)).toBeUndefined();
    expect(nextHostState(agent("a1", S.binding), 99, T)).toBeUndefined();
    expect(nextHostState(agent("a1", S.binding), 100, T)).toBe(S.known);
  });

  test("installing completes after installMs; an installed agent losing its binding waits for the user", () => {
    expect(nextHostState(agent("a1", S.installing), 299, T)).toBeUndefined();
    expect(nextHostState(agent("a1", S.installing), 300, T)).toBe(S.added);
    expect(nextHostState(agent("a1", S.added, { bound: false }), 0, T)).toBe(S.unbinding);
    expect(nextHostState(agent("a1", S.unbinding, { bound: false, installedOnce: true }), 49, T)).toBeUndefined();
    expect(nextHostState(agent("a1", S.unbinding, { bound: false, installedOnce: true }), 50, T)).toBe(S.unbindingPending);
    expect(nextHostState(agent("a1", S.unbindingPending, { bound: false, installedOnce: true }), 1e9, T)).toBeUndefined();
  });

  test("a host that was only bound returns to known-unbound when unbound", () => {
    expect(nextHostState(agent("a1", S.known, { bound: false }), 0, T)).toBe(S.unbinding);
    expect(nextHostState(agent("a1", S.unbinding, { bound: false }), 50, T)).toBe(S.knownUnbound);
  });

  test("status of a state carries debugInfo, the Bound/Installed conditions and progress", () => {
    const s = statusFor(S.added, "2026-01-01T00:00:00Z");
    expect(s.debugInfo?.state).toBe("added-to-existing-cluster");
    expect(s.conditions?.find((c) => c.type === "Installed")?.status).toBe("True");
    expect(s.conditions?.find((c) => c.type === "Bound")?.status).toBe("True");
    expect(s.progress?.currentStage).toBe("Done");
    expect(statusFor(S.unbindingPending, "x").conditions?.find((c) => c.type === "Bound")?.reason).toBe("UnbindingPendingUserAction");
  });
});

describe("NodePool decision (CAPI agent provider)", () => {
  test("installs bound, approved, known agents matching the selector up to replicas, oldest first", () => {
    const agents = [
      agent("a1", S.known), agent("a2", S.known), agent("a3", S.known),
      agent("a4", S.known, { approved: false }), agent("a5", S.knownUnbound, { bound: false }),
      agent("a6", S.known, { labels: { agentBareMetal: "true", "osac.openshift.io/node-set": "gpu" } }),
    ];
    const plan = planNodePool(nodePool(2), agents, [CD]);
    expect(plan.install.map((a) => a.metadata.name)).toEqual(["a1", "a2"]);
    expect(plan.release).toEqual([]);
    const all = planNodePool(nodePool(10), agents, [CD]);
    expect(all.install.map((a) => a.metadata.name)).toEqual(["a1", "a2", "a3"]);
  });

  test("agents bound to another ClusterDeployment are not taken", () => {
    const plan = planNodePool(nodePool(1), [agent("a1", S.known)], [{ name: "other", namespace: "ns-hc1" }]);
    expect(plan.install).toEqual([]);
  });

  test("scale-down releases randomly chosen installed agents; readyReplicas counts the remaining nodes", () => {
    const agents = [agent("a1", S.added), agent("a2", S.added), agent("a3", S.installing)];
    const plan = planNodePool(nodePool(1), agents, [CD], () => 0.99);
    expect(plan.release.map((a) => a.metadata.name)).toEqual(["a3", "a2"]);
    expect(plan.readyReplicas).toBe(1);
    const other = planNodePool(nodePool(1), agents, [CD], () => 0);
    expect(other.release.map((a) => a.metadata.name)).toEqual(["a1", "a2"]);
  });

  test("label selectors: matchLabels and matchExpressions; no selector selects nothing", () => {
    expect(matchesSelector({ matchLabels: { a: "1" }, matchExpressions: [{ key: "b", operator: "In", values: ["x"] }] }, { a: "1", b: "x" })).toBe(true);
    expect(matchesSelector({ matchExpressions: [{ key: "b", operator: "DoesNotExist" }] }, { b: "x" })).toBe(false);
    expect(matchesSelector(undefined, { a: "1" })).toBe(false);
  });
});

describe("discovery ignition", () => {
  const dir = tempDir("ign");
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test("is ~15 KB of Ignition v3 JSON carrying the pull secret and naming its InfraEnv", () => {
    const ca = ensureLabCa(dir);
    const ps = labPullSecret();
    const ign = discoveryIgnition({
      infraEnv: { namespace: "ns", name: "o-infraenv", uid: "0b6f3c1e-0000-4000-8000-000000000001" },
      pullSecret: ps.dockerconfigjson, serviceUrl: "https://127.0.0.1:1", caPem: fs.readFileSync(ca.caFile, "utf8"),
    });
    const parsed = JSON.parse(ign) as { ignition: { version: string } };
    expect(parsed.ignition.version).toBe("3.2.0");
    expect(Buffer.byteLength(ign)).toBeGreaterThan(12_000);
    expect(Buffer.byteLength(ign)).toBeLessThan(20_000);
    expect(ign).toContain(ps.token);
    expect(infraEnvOfIgnition(ign)).toEqual({ namespace: "ns", name: "o-infraenv", uid: "0b6f3c1e-0000-4000-8000-000000000001" });
    expect(fs.existsSync(path.join(dir, "ca.crt"))).toBe(true);
  });

  test("anything else is not a discovery ignition", () => {
    expect(infraEnvOfIgnition("#cloud-config\n")).toBeUndefined();
    expect(infraEnvOfIgnition(JSON.stringify({ ignition: { version: "3.2.0" } }))).toBeUndefined();
    expect(infraEnvOfIgnition(JSON.stringify({ ignition: { version: "2.2.0" }, storage: { files: [] } }))).toBeUndefined();
  });

  test("host ids are uuid-shaped and stable per lab and host", () => {
    expect(hostId("lab1", "compute-00")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(hostId("lab1", "compute-00")).toBe(hostId("lab1", "compute-00"));
    expect(hostId("lab1", "compute-00")).not.toBe(hostId("lab2", "compute-00"));
  });

  test("the host inventory is 12 compute + 4 gpu hosts with one MAC per network port", () => {
    const hosts = labHosts(16);
    expect(hosts.filter((h) => h.labels["osac.openshift.io/host-class"] === "compute")).toHaveLength(12);
    expect(hosts.filter((h) => h.labels["osac.openshift.io/host-class"] === "gpu")).toHaveLength(4);
    expect(new Set(hosts.flatMap((h) => h.macs.map((m) => m.toLowerCase()))).size).toBe(12 * 3 + 4 * 2);
  });
});

describe("lab set-up errors", () => {
  test("a missing upstream CRD directory is named, with the variable that points at it", async () => {
    const { sharedCrdDirs } = await import("../../lab/index");
    const dir = path.join(tempDir("crds"), "no-crds-here");
    expect(() => sharedCrdDirs({ BMW_SHARED_CRDS: dir })).toThrow(`the upstream CRDs (Agent, InfraEnv, NodePool, HostedCluster, ClusterDeployment) are not at ${dir}: set BMW_SHARED_CRDS`);
    const shared = tempDir("crds");
    expect(sharedCrdDirs({ BMW_SHARED_CRDS: shared })).toEqual([shared, expect.stringMatching(/deploy\/crds$/)]);
  });

  test("by default the upstream CRDs come from the checkout itself (lab/crds), so a clone works alone", async () => {
    const { sharedCrdDirs, UPSTREAM_CRDS } = await import("../../lab/index");
    const [upstream] = sharedCrdDirs({});
    expect(upstream).toBe(UPSTREAM_CRDS);
    expect(path.relative(path.resolve(__dirname, "../.."), upstream)).toBe(path.join("lab", "crds"));
    const kinds = fs.readdirSync(upstream).filter((f) => f.endsWith(".yaml"))
      .map((f) => /\n {4}kind: (\w+)\n/.exec(fs.readFileSync(path.join(upstream, f), "utf8"))?.[1]).sort();
    expect(kinds).toEqual(["Agent", "ClusterDeployment", "HostedCluster", "InfraEnv", "NodePool"]);
  });
});
