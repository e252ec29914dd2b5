// Security (issue 7): the reconciler runs as a child process with exactly the deploy/ RBAC (a
// ServiceAccount token, no admin kubeconfig anywhere in its environment) through create → Ready →
// scale → delete, plus an order whose InfraEnv points at refused ignition URLs. Afterwards the lab
// pull secret, the fulfillment token and the ServiceAccount token are searched for in every file of
// the Pulumi state directory (checkpoints, history, backups, config), the reconciler's log, the
// Kubernetes Events and /metrics; none may appear in plaintext. Every BMI Create carried tenant
// system, and the identity is refused what its role does not grant.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as crypto from "node:crypto";
import * as k8s from "@kubernetes/client-node";
import { Filter, type FulfillmentClient } from "../../clients/fulfillment";
import { INFRAENV_AGENT_LABEL, infraEnvName, ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";
import { condition, Hub, orderBmis, startIgnitionServer, type IgnitionServer } from "../badinput/support";
import { eventually, eventuallyPasses } from "../support/eventually";
import { createTestNamespace, kubeConfig } from "../support/kube";
import { startTestLab, type TestLab } from "../support/labEnv";
import { reconcilerServiceAccount, type ReconcilerIdentity } from "../support/rbac";
import { cli, startReconciler, type ReconcilerProcess } from "../support/reconciler";

jest.setTimeout(300_000);

const suffix = crypto.randomBytes(3).toString("hex");
const MARKER = `security-ignition-${suffix}`;

let t: TestLab;
let hub: Hub;
let f: FulfillmentClient;
let id: ReconcilerIdentity;
let reconciler: ReconcilerProcess;
let ign: IgnitionServer;
let ns = "";
let ignNs = "";
let uid = "";
let ignUid = "";
let metricsUrl = "";
const name = "sec-co";
const ignName = "sec-ign";
/** What must never appear in plaintext, by what it is. */
const secrets: Record<string, string> = {};
/** Files of the state directory as they were just before the deletion (checkpoints are removed with the stack). */
let stateBeforeDelete = new Map<string, string>();
const metricsScrapes: string[] = [];
const suiteStart = Date.now();
const cliOutputs: string[] = [];
let reconcilerEnv: NodeJS.ProcessEnv = {};

const ready = (o: ClusterOrder | undefined, n: number) =>
  o?.status?.readyWorkers === n && (o.status.workers ?? []).length === n && (o.status.workers ?? []).every((w) => w.phase === "Ready");

function readTree(dir: string, into = new Map<string, string>()): Map<string, string> {
  if (!fs.existsSync(dir)) return into;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) readTree(p, into);
    else if (entry.isFile()) into.set(p, fs.readFileSync(p, "latin1"));
  }
  return into;
}

/** "<secret name> in <where>" for every secret found; empty when clean. */
function leaks(where: string, text: string): string[] {
  return Object.entries(secrets).filter(([, v]) => text.includes(v)).map(([k]) => `${k} in ${where}`);
}

async function scrapeMetrics(): Promise<string> {
  const res = await fetch(`${metricsUrl}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  metricsScrapes.push(text);
  return text;
}

beforeAll(async () => {
  const t0 = Date.now();
  t = await startTestLab("security");
  hub = new Hub(t.lab.kubeConfig());
  f = t.lab.fulfillmentClient();
  ign = await startIgnitionServer(t.lab.dir, MARKER);
  ns = await t.lab.createNamespace(`sec-${suffix}`);
  ignNs = await t.lab.createNamespace(`sec-ign-${suffix}`);
  const system = await createTestNamespace(kubeConfig(), "sec-system");

  // The reconciler's identity: a ServiceAccount bound to exactly deploy/reconciler.yaml's roles.
  id = await reconcilerServiceAccount(kubeConfig(), { namespace: system, leaseNamespace: system });
  const kubeconfigFile = id.writeKubeconfig(path.join(t.lab.dir, "reconciler-sa.kubeconfig"));
  const saToken = (id.kc.getCurrentUser()?.token ?? "").trim();
  expect(saToken.length).toBeGreaterThan(20);
  secrets["lab pull secret"] = t.lab.pullSecret.token;
  secrets["fulfillment token"] = fs.readFileSync(t.lab.fulfillment.tokenFile, "utf8").trim();
  secrets["ServiceAccount token"] = saToken;

  uid = (await t.lab.createSampleOrder({ namespace: ns, name, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 1, instanceType: "compute" }] })).uid;
  ignUid = (await t.lab.createSampleOrder({ namespace: ignNs, name: ignName, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 1, instanceType: "compute" }] })).uid;
  // The test, not the lab's assisted stand-in, sets this order's ignition URL.
  await hub.leaveLabScope(ignNs, t.lab.namespaceLabels);

  const env: NodeJS.ProcessEnv = { ...t.env, BMW_KUBECONFIG: kubeconfigFile, BMW_LOG_LEVEL: "debug" };
  delete env.KUBECONFIG; // no admin credentials anywhere in the reconciler's environment
  reconcilerEnv = env;
  reconciler = startReconciler(env, ["--interval", "2", "--namespace", ns, "--namespace", ignNs, "--lease-namespace", system,
    "--identity", "security"], path.join(t.lab.logsDir, "reconciler-security.log"));
  metricsUrl = await eventually(async () => {
    const log = fs.existsSync(reconciler.logFile) ? fs.readFileSync(reconciler.logFile, "utf8") : "";
    return /"health":"(http:\/\/[^"]+)"/.exec(log)?.[1];
  }, 60_000, 200);
  process.stdout.write(`[security] lab, identity and reconciler ready in ${Date.now() - t0} ms\n`);
});

afterAll(async () => {
  await reconciler?.stop();
  await id?.cleanup();
  await ign?.close();
  f?.close();
  await t?.stop();
});

describe("the reconciler as the deploy/ ServiceAccount", () => {
  it("takes a ClusterOrder to Ready", async () => {
    await eventuallyPasses(async () => {
      const o = await hub.order(ns, name);
      expect(reconciler.exited()).toBe(false);
      expect(ready(o, 1)).toBe(true);
    }, 180_000, 1_000);
    expect(await scrapeMetrics()).toMatch(/osac_clusterorder_workers_ready\{[^}]*\} 1/);
  });

  it("scales it up", async () => {
    await hub.patchOrder(ns, name, [{ op: "replace", path: "/spec/nodeRequests/0/numberOfNodes", value: 2 }]);
    await eventuallyPasses(async () => {
      expect(ready(await hub.order(ns, name), 2)).toBe(true);
      expect((await orderBmis(f, uid)).filter((b) => !b.metadata?.deletion_timestamp)).toHaveLength(2);
    }, 180_000, 1_000);
    await scrapeMetrics();
    // The control of the scans below: the user_data the program sent does carry the pull secret (read by
    // Get: a listing leaves user_data out, decisions F13).
    const listed = await orderBmis(f, uid);
    expect(listed.every((b) => b.spec?.user_data === undefined)).toBe(true);
    const userData = (await Promise.all(listed.map((b) => f.bareMetalInstances.get(b.id)))).map((b) => b.spec?.user_data ?? "").join("\n");
    expect(leaks("user_data", userData)).toContain("lab pull secret in user_data");
  });

  it("fetches ignition over HTTPS only, without redirects, at most 64 KiB: no BMI, and the status says why", async () => {
    const ie = infraEnvName(ignName);
    await eventually(async () => ((await hub.infraEnvs(ignNs)).some((i) => i.metadata?.name === ie) ? true : undefined), 120_000, 500);
    for (const [url, reason] of [[ign.http("/ok.ign"), "NotHttps"], [ign.https("/redirect"), "Redirect"], [ign.https("/big.ign"), "TooLarge"]]) {
      await hub.setIgnitionUrl(ignNs, ie, url);
      await eventuallyPasses(async () => {
        const c = condition(await hub.order(ignNs, ignName), "InfraEnvReady");
        expect(c).toMatchObject({ status: "False", reason: "IgnitionFetchFailed" });
        expect(c?.message).toContain(`(${reason})`);
      }, 60_000, 500);
      const o = await hub.order(ignNs, ignName);
      expect(JSON.stringify(o?.status)).not.toContain(MARKER);
      expect(await orderBmis(f, ignUid)).toEqual([]);
    }
    expect(ign.hits.get("http /ok.ign")).toBeUndefined(); // http:// was refused before any connection
    expect(ign.hits.get("https /ok.ign")).toBeUndefined(); // the redirect was not followed
  });

  it("deletes both orders through the finalizer: every BMI gone, then the orders", async () => {
    stateBeforeDelete = readTree(t.stateDir);
    // What an admin reads: the stack's history (messages, config) through the CLI, as the same identity.
    const history = await cli(reconcilerEnv, ["history", `${ns}/${name}`, "--output", "json"]);
    expect(history.code).toBe(0);
    cliOutputs.push(history.stdout + history.stderr);
    await scrapeMetrics();
    await hub.deleteOrder(ns, name);
    await hub.deleteOrder(ignNs, ignName);
    await eventuallyPasses(async () => {
      expect(await hub.order(ns, name)).toBeUndefined();
      expect(await hub.order(ignNs, ignName)).toBeUndefined();
    }, 180_000, 1_000);
    expect(await orderBmis(f, uid)).toEqual([]);
    expect(await orderBmis(f, ignUid)).toEqual([]);
    expect((await hub.agents(ns)).filter((a) => a.metadata?.labels?.[ORDER_LABEL] === uid)).toEqual([]);
    expect(reconciler.exited()).toBe(false);
    await scrapeMetrics();
  });

  it("was never refused by the API server, and is refused what its role does not grant", async () => {
    const log = fs.readFileSync(reconciler.logFile, "utf8");
    expect(log).toContain(`"identity":"security"`);
    // A refusal as any layer writes it (the Status reason, our KubeError, client-node's exception); not a bare
    // 403, which a duration of 403 ms matched in CI.
    expect(log).not.toMatch(/forbidden|"code":403|HTTP-Code: 403|: 403 /i);
    const denied = async (p: Promise<unknown>) => p.then(() => 200, (e: { code?: number }) => e.code);
    const core = id.kc.makeApiClient(k8s.CoreV1Api);
    const custom = id.kc.makeApiClient(k8s.CustomObjectsApi);
    expect(await denied(core.listNamespacedSecret({ namespace: ns }))).toBe(403);
    expect(await denied(core.readNamespacedSecret({ namespace: ns, name: "missing-secret" }))).toBe(403);
    expect(await denied(core.deleteNamespace({ name: ns }))).toBe(403);
    expect(await denied(core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "x" } } }))).toBe(403);
    expect(await denied(custom.createNamespacedCustomObject({ group: "hypershift.openshift.io", version: "v1beta1", namespace: ns,
      plural: "nodepools", body: { apiVersion: "hypershift.openshift.io/v1beta1", kind: "NodePool", metadata: { name: "np" }, spec: {} } }))).toBe(403);
    expect(await denied(custom.createNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", namespace: ns,
      plural: "agents", body: { apiVersion: "agent-install.openshift.io/v1beta1", kind: "Agent", metadata: { name: "a", labels: { [INFRAENV_AGENT_LABEL]: "x" } },
        spec: { approved: true, role: "" } } }))).toBe(403);
  });
});

describe("secrets", () => {
  it("every BMI Create carried tenant system", async () => {
    const stats = (await t.lab.stats()).fulfillment;
    const creates = Object.entries(stats.calls).filter(([k]) => k.endsWith("BareMetalInstances/Create")).reduce((n, [, v]) => n + v, 0);
    expect(creates).toBeGreaterThanOrEqual(2);
    expect(stats.creates_without_system_tenant).toBe(0);
    expect((await f.bareMetalInstances.listAll(Filter.labelsMatch({ [ORDER_LABEL]: uid })))).toEqual([]);
  });

  it("never appear in plaintext in Pulumi state, history, backups or stack config", () => {
    const after = readTree(t.stateDir);
    const files = new Map([...stateBeforeDelete, ...after]);
    // The scan is meaningful: the checkpoints and history of the run were there, with the ignition encrypted.
    const names = [...files.keys()].map((p) => path.relative(t.stateDir, p));
    expect(names.some((p) => p.startsWith(`.pulumi${path.sep}history`))).toBe(true);
    expect(names.some((p) => p.startsWith(`.pulumi${path.sep}stacks`))).toBe(true);
    const withUserData = [...files.values()].filter((text) => text.includes("\"userData\""));
    expect(withUserData.length).toBeGreaterThan(0);
    expect(withUserData.every((text) => text.includes("ciphertext"))).toBe(true);
    const found = [...files].flatMap(([p, text]) => leaks(path.relative(t.stateDir, p), text));
    expect(found).toEqual([]);
    // The Automation API's importStack (pending-operation recovery) writes the state to os.tmpdir() with
    // secrets decrypted and leaves the file behind when the import fails: none may be left from this run.
    const tmp = fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith("automation-")).map((n) => path.join(os.tmpdir(), n))
      .filter((p) => fs.statSync(p).mtimeMs >= suiteStart);
    expect(tmp.flatMap((p) => leaks(p, fs.readFileSync(p, "latin1")))).toEqual([]);
  });

  it("leave no copy in the temporary directory (the kubernetes provider writes its kubeconfig there at every update)", () => {
    const found: string[] = [];
    for (const tmp of new Set([os.tmpdir(), "/tmp"])) {
      for (const entry of fs.readdirSync(tmp, { withFileTypes: true })) {
        const p = path.join(tmp, entry.name);
        if (entry.isFile() && fs.statSync(p).mtimeMs >= suiteStart) found.push(...leaks(p, fs.readFileSync(p, "latin1")));
        // Where the reconciler's pulumi operations keep their temporary files: removed with each operation.
        if (entry.isDirectory() && entry.name.startsWith("bmw-pulumi-")) found.push(...[...readTree(p)].flatMap(([f, text]) => leaks(f, text)));
      }
    }
    expect(found).toEqual([]);
  });

  it("never appear in the reconciler's log or the CLI's output", () => {
    const log = fs.readFileSync(reconciler.logFile, "utf8");
    expect(log.split("\n").length).toBeGreaterThan(20); // debug level: plenty to scan
    expect(leaks("reconciler log", log)).toEqual([]);
    expect(cliOutputs.join("")).toContain("desired compute=2");
    expect(cliOutputs.flatMap((o) => leaks("CLI output", o))).toEqual([]);
  });

  it("never appear in Kubernetes Events", async () => {
    const core = t.lab.kubeConfig().makeApiClient(k8s.CoreV1Api);
    const texts: string[] = [];
    for (const n of [ns, ignNs]) {
      texts.push(JSON.stringify(await hub.events(n)));
      texts.push(JSON.stringify((await core.listNamespacedEvent({ namespace: n })).items));
    }
    const all = texts.join("\n");
    expect(all).toContain("WorkerCreated"); // the run's events are there
    expect(leaks("events", all)).toEqual([]);
    expect(all).not.toContain(MARKER);
  });

  it("never appear in /metrics", async () => {
    await scrapeMetrics();
    expect(metricsScrapes.length).toBeGreaterThanOrEqual(4);
    expect(metricsScrapes.flatMap((m, i) => leaks(`metrics scrape ${i}`, m))).toEqual([]);
    // The scrapes carry real figures (so the scan looked at something): calls to the service by method
    // and code, pulumi ups, and the pass duration of the loop.
    const last = metricsScrapes[metricsScrapes.length - 1];
    expect(last).toMatch(/bmw_fulfillment_calls_total\{method="BareMetalInstances\/List",code="OK"\} [1-9]/);
    expect(last).toMatch(/bmw_pulumi_ups_total\{result="succeeded"\} [1-9]/);
    expect(last).toMatch(/bmw_loop_pass_duration_seconds \d/);
  });
});
