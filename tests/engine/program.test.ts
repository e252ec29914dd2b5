// The program on the real engine and the lab (issue 5): `up` creates the BMIs of a 3-worker ClusterOrder,
// an `up` with nothing new changes nothing, a scale change gives the expected preview diff, and the
// workers reach Ready through the reconcile path.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { App } from "../../controller/app";
import { reconcileOrder, refreshOffset } from "../../controller/reconcile";
import { APPLIED_ANNOTATION, IGNITION_OF_NEW_INFRAENV, ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";
import { Filter } from "../../clients/fulfillment";
import { eventuallyPasses } from "../support/eventually";
import { startTestLab, type TestLab } from "../support/labEnv";
import { assertNoBmiReplace } from "../support/previewCheck";
import { summarizeEventLog } from "../../stack/eventLog";
import { describeStepDifference, stepDifference } from "../../stack/stepParity";
import type { StackState } from "../../stack/operations";
import { providerText } from "../../providers/lazyProvider";
import { agentBindingProvider } from "../../providers/agentBinding";
import { bareMetalInstanceProvider } from "../../providers/bareMetalInstance";
import { runTsJson } from "../support/run";

jest.setTimeout(600_000);

describe("the program of one ClusterOrder's stack", () => {
  let t: TestLab;
  let app: App;
  const ref = { namespace: "", name: "engine-co" };

  beforeAll(async () => {
    t = await startTestLab("engine");
    ref.namespace = await t.lab.createNamespace(`engine-${Date.now().toString(36)}`);
    await t.lab.createSampleOrder({ namespace: ref.namespace, name: ref.name,
      nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }, { nodeSet: "gpu", numberOfNodes: 1, instanceType: "gpu" }] });
    app = new App({ env: t.env, stateDir: t.stateDir });
  });

  afterAll(async () => {
    app?.close();
    await t?.stop();
  });

  async function orderBmis() {
    const order = (await app.kube.getClusterOrder(ref.namespace, ref.name))!;
    const f = t.lab.fulfillmentClient();
    try {
      return await f.bareMetalInstances.listAll(Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid }));
    } finally {
      f.close();
    }
  }

  it("creates the InfraEnv and, once it publishes its ignition, the three BMIs in one update (F18); another update creates no BMI", async () => {
    const first = await app.stacks.up(ref, { message: "desired compute=2,gpu=1; test" });
    const bmis = await orderBmis();
    expect(bmis).toHaveLength(3);
    expect(new Set(bmis.map((b) => b.metadata?.name)).size).toBe(3);
    expect(first.changes.create).toBeGreaterThanOrEqual(4); // the InfraEnv and the three BMIs (and components, NodePool patches)
    expect((await app.kube.listInfraEnvs(ref.namespace))[0]?.status?.bootArtifacts?.discoveryIgnitionURL).toMatch(/^https:/);
    // The fence recorded each slot as Attempted before its Create.
    const order = (await app.kube.getClusterOrder(ref.namespace, ref.name)) as ClusterOrder;
    expect(order.status?.workers).toHaveLength(3);
    expect(order.status?.workers?.every((w) => w.bmiCreateState === "Attempted")).toBe(true);
    // Each BMI boots from the ignition the new InfraEnv published, never from the planner's placeholder.
    const f = t.lab.fulfillmentClient();
    try {
      for (const b of bmis) {
        const userData = (await f.bareMetalInstances.get(b.id!)).spec?.user_data ?? "";
        expect(userData).not.toBe(IGNITION_OF_NEW_INFRAENV);
        expect(JSON.parse(userData)).toHaveProperty("ignition");
      }
    } finally {
      f.close();
    }
    // Another update creates no BMI (it may bind the Agents the lab's hosts registered meanwhile).
    const again = await app.stacks.up(ref, { message: "desired compute=2,gpu=1; test" });
    expect(again.changes.delete ?? 0).toBe(0);
    expect((await orderBmis()).map((b) => b.id).sort()).toEqual(bmis.map((b) => b.id).sort());
  });

  it("reaches Ready through reconciles, after which an up changes nothing", async () => {
    await eventuallyPasses(async () => {
      await app.reconcile(ref);
      const o = (await app.kube.getClusterOrder(ref.namespace, ref.name))!;
      const agents = (await app.kube.listAgents(ref.namespace)).map((a) => `${a.metadata?.name}:${a.status?.debugInfo?.state}:${a.spec?.clusterDeploymentName?.name ?? "-"}`);
      // The whole picture in the failure message: phases, reasons, conditions, Agents.
      const picture = { ready: o.status?.readyWorkers, workers: o.status?.workers?.map((w) => `${w.name}:${w.phase}:${w.lastFailureReason ?? ""}`),
        conditions: o.status?.conditions?.filter((c) => c.status === "True").map((c) => `${c.type}:${c.message}`), agents };
      if (picture.ready !== 3) throw new Error(`not Ready yet: ${JSON.stringify(picture)}`);
    }, 180_000, 1_000);
    const again = await app.stacks.up(ref, { message: "desired compute=2,gpu=1; steady" });
    expect({ ...again.changes, same: 0 }).toEqual({ create: 0, update: 0, delete: 0, replace: 0, same: 0 });
    expect(await orderBmis()).toHaveLength(3);
  });

  it("a state whose resources hold the SDK's serialized provider (before providerModule.js) updates with nothing but same steps", async () => {
    const sdkTexts = await runTsJson<Record<string, string>>("tests/providers/serialize-sdk.ts", []);
    type Res = { type: string; inputs?: Record<string, unknown>; outputs?: Record<string, unknown> };
    const dynamic = (st: StackState) => ((st.deployment as { resources: Res[] }).resources).filter((r) => r.type in sdkTexts);
    const state = await app.stacks.exportStack(ref);
    expect(dynamic(state).length).toBeGreaterThanOrEqual(6); // 3 BMIs, 3 bindings
    const specOf = (type: string) => (type.endsWith(":BareMetalInstance") ? bareMetalInstanceProvider : agentBindingProvider).spec;
    for (const [type, text] of Object.entries(sdkTexts)) expect(text).not.toBe(providerText(specOf(type)));
    for (const r of dynamic(state)) {
      for (const bag of [r.inputs, r.outputs]) if (bag && "__provider" in bag) bag.__provider = sdkTexts[r.type];
    }
    await app.stacks.importStack(ref, state);
    const up = await app.stacks.up(ref, { message: "desired compute=2,gpu=1; provider text" });
    expect({ ...up.changes, same: 0 }).toEqual({ create: 0, update: 0, delete: 0, replace: 0, same: 0 });
    for (const r of dynamic(await app.stacks.exportStack(ref))) expect(r.inputs?.__provider).toBe(providerText(specOf(r.type)));
    expect(await orderBmis()).toHaveLength(3);
  });

  it("after a restart, skips an order whose stack already holds its plan, and updates it under a new program", async () => {
    const recorded = async () => (await app.kube.getClusterOrder(ref.namespace, ref.name))!.metadata.annotations?.[APPLIED_ANNOTATION];
    // The last update saw the world unchanged, so the order records what was applied with which program.
    expect(await recorded()).toMatch(new RegExp(`^${app.runner().programDigest()}\\.[0-9a-f]{32}$`));
    // A new process: its own pid in BMW_FAILPOINT_PGID and another log level change nothing the program declares.
    const restarted = new App({ env: { ...t.env, BMW_FAILPOINT_PGID: "4242", BMW_LOG_LEVEL: "debug" }, stateDir: t.stateDir });
    try {
      expect((await restarted.reconcile(ref)).action).toBe("skipped");
    } finally {
      restarted.close();
    }
    // Another program (a new release, other settings): the record does not match, so one `up` runs; the
    // record is withdrawn before that update starts and written again after it.
    await app.kube.patchClusterOrderMetadata(ref, { annotations: { [APPLIED_ANNOTATION]: `0000000000000000.${"0".repeat(32)}` } });
    const upgraded = new App({ env: t.env, stateDir: t.stateDir });
    try {
      const deps = upgraded.reconcileDeps();
      const seenDuringUp: (string | undefined)[] = [];
      const stacks = { ...deps.stacks, up: async (r: typeof ref, o: { message: string; refresh?: boolean }) => {
        seenDuringUp.push(await recorded());
        return deps.stacks.up(r, o);
      } };
      const r = await reconcileOrder({ ...deps, stacks }, ref);
      expect(r.action).toBe("up");
      expect(r.up?.changes).toMatchObject({ create: 0, update: 0, delete: 0, replace: 0 });
      expect(seenDuringUp).toEqual([undefined]);
      expect(await recorded()).toMatch(new RegExp(`^${upgraded.runner().programDigest()}\\.`));
      expect((await reconcileOrder(deps, ref)).action).toBe("skipped");
    } finally {
      upgraded.close();
    }
  });

  it("refreshes a converged stack once per refresh interval, counted from its last update", async () => {
    const deps = app.reconcileDeps();
    const every = 60_000;
    let clock = Date.now();
    const ups: boolean[] = [];
    const stacks = { ...deps.stacks, up: async (r: typeof ref, o: { message: string; refresh?: boolean }) => {
      ups.push(o.refresh === true);
      return deps.stacks.up(r, o);
    } };
    // A process of its own (fresh memory): the applied record says the stack holds the plan.
    const memory: typeof deps.memory = new Map();
    const d = { ...deps, stacks, memory, refreshIntervalMs: every, now: () => new Date(clock) };
    const start = clock;
    const dueIn = every - refreshOffset(`${ref.namespace}/${ref.name}`, every);
    expect((await reconcileOrder(d, ref)).action).toBe("skipped");
    clock = start + dueIn - 1_000;
    expect((await reconcileOrder(d, ref)).action).toBe("skipped");
    // Due at the order's own offset in the interval: one `up --refresh` that changes nothing.
    clock = start + dueIn;
    const refreshed = await reconcileOrder(d, ref);
    expect(refreshed.action).toBe("up");
    expect(refreshed.up?.changes).toMatchObject({ create: 0, update: 0, delete: 0, replace: 0 });
    const refreshedAt = clock;
    clock = refreshedAt + 1_000;
    expect((await reconcileOrder(d, ref)).action).toBe("skipped");
    // An update for another reason refreshes as well, and the next periodic one counts from it.
    memory.get(`${ref.namespace}/${ref.name}`)!.lastFingerprint = "a plan applied earlier";
    clock = refreshedAt + every / 2;
    expect((await reconcileOrder(d, ref)).action).toBe("up");
    clock = refreshedAt + every;
    expect((await reconcileOrder(d, ref)).action).toBe("skipped");
    clock = refreshedAt + every * 1.5;
    expect((await reconcileOrder(d, ref)).action).toBe("up");
    expect(ups).toEqual([true, true, true]);
  });

  it("previews a scale-up as one BMI create and a NodePool replicas update", async () => {
    const kc = t.lab.kubeConfig();
    const api = kc.makeApiClient(k8s.CustomObjectsApi);
    await api.patchNamespacedCustomObject({
      group: "osac.openshift.io", version: "v1alpha1", namespace: ref.namespace, plural: "clusterorders", name: ref.name,
      body: [{ op: "replace", path: "/spec/nodeRequests/0/numberOfNodes", value: 3 }],
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch));
    const p = await app.preview(ref);
    expect(assertNoBmiReplace(p).map((s) => s.op)).toContain("create"); // the check reads this display
    // One new worker: its BareMetalWorker component and its BMI; the compute NodePool's replicas patch.
    if (p.changeSummary.create !== 2) throw new Error(p.stdout);
    expect(p.changeSummary.create).toBe(2);
    expect(p.changeSummary.update).toBe(1);
    expect(p.changeSummary.delete ?? 0).toBe(0);
    expect(p.stdout).toContain("baremetal-workers:BareMetalInstance");
    expect(p.stdout).toMatch(/replicas\s*:\s*2\s*=>\s*3/);
    // Preview wrote nothing: still three BMIs and three status entries.
    expect(await orderBmis()).toHaveLength(3);
    expect((await app.kube.getClusterOrder(ref.namespace, ref.name))!.status?.workers).toHaveLength(3);
  });

  it("is the same stack an admin previews with plain `pulumi preview`, which refreshes first and shows the same steps", async () => {
    const { execFile } = await import("node:child_process");
    // PULUMI_DEBUG_COMMANDS only makes the engine's --event-log flag available, for the comparison.
    // A temporary directory of its own: the Kubernetes provider used to leave a copy of its kubeconfig, credentials
    // included, in the CLI's TMPDIR at every run; with no kubeconfig of its own (it reads KUBECONFIG) it writes none.
    const adminTmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-admin-tmp-"));
    const env = { ...process.env, ...app.stacks.pulumiEnvironment(), PULUMI_DEBUG_COMMANDS: "true", TMPDIR: adminTmp };
    const eventLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "bmw-admin-preview-")), "events.jsonl");
    // No --refresh: the project (Pulumi.yaml `options.refresh: always`) makes a plain preview refresh.
    const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile("pulumi", ["preview", "--stack", app.stacks.stackName(ref), "--diff", "--non-interactive", "--color", "never", "--event-log", eventLog],
        { cwd: app.stacks.workDir, env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });
    if (out.code !== 0) throw new Error(`pulumi preview failed:\n${out.stderr.slice(-2000)}\n${out.stdout.slice(-2000)}`);
    expect(assertNoBmiReplace(out.stdout).map((s) => s.op)).toContain("create");
    // The pending scale-up of the previous test, exactly as the product's preview shows it.
    expect(out.stdout).toContain("baremetal-workers:BareMetalInstance");
    expect(out.stdout).toMatch(/\+ 2 to create/);
    const admin = summarizeEventLog(fs.readFileSync(eventLog, "utf8"));
    const bmis = admin.steps.filter((s) => s.urn.includes("BareMetalInstance"));
    expect(bmis.filter((s) => s.op === "refresh").length).toBe(3); // every BMI was read first
    const ours = await app.preview(ref);
    expect(describeStepDifference(stepDifference(admin.steps, ours.steps))).toBe("the same steps");
    expect(admin.outputs.fingerprint).toBe(ours.outputs.fingerprint);
    expect(fs.readdirSync(adminTmp).filter((f) => f.startsWith("kubeconfig"))).toEqual([]);
    fs.rmSync(adminTmp, { recursive: true, force: true });
  });

  it("status reports during an update leave the program's fence alone: a scale-up creates its BMI in one update", async () => {
    // The previous test left compute at 3 (one new worker pending, so the next status differs). The program
    // is held 12 s between its observation (a few seconds after the update starts) and its fence, and the
    // first progress report comes 6 s in, inside that window: it used to write the new status, the
    // resourceVersion moved, the conditional fence failed, and the new worker waited for another update.
    const slow = new App({ env: { ...t.env, BMW_PROGRESS_REPORT_MS: "6000", BMW_FAILPOINT_DELAYS: "program.beforeFence=12000" }, stateDir: t.stateDir });
    try {
      const r = await slow.reconcile(ref);
      expect(r.action).toBe("up");
      expect(r.up?.changes.create).toBe(2); // the new BareMetalWorker component and its BMI
      expect(await orderBmis()).toHaveLength(4);
      const order = (await slow.kube.getClusterOrder(ref.namespace, ref.name))!;
      expect(order.status?.workers).toHaveLength(4);
      expect(order.status?.desiredWorkers).toBe(4);
    } finally {
      slow.close();
    }
  });

  it("status reports during a new order's update wait for its fence: the InfraEnv and the BMI come in one update (F18)", async () => {
    // Once the update has made the InfraEnv, the reconciler's own plan has no new slot any more (it does not
    // fetch the ignition), so its progress report wrote the status, the fence conflicted, and the BMI waited.
    const name = "engine-new";
    await t.lab.createSampleOrder({ namespace: ref.namespace, name, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 1, instanceType: "compute" }] });
    const slow = new App({ env: { ...t.env, BMW_PROGRESS_REPORT_MS: "2000", BMW_FAILPOINT_DELAYS: "program.beforeFence=8000" }, stateDir: t.stateDir });
    try {
      const r = await slow.reconcile({ namespace: ref.namespace, name });
      expect(r.action).toBe("up");
      const hist = await slow.history({ namespace: ref.namespace, name });
      expect(hist.filter((e) => e.kind === "update")).toHaveLength(1);
      expect(r.up?.changes.create).toBeGreaterThanOrEqual(4); // the InfraEnv, the NodePool patch, the worker component and its BMI
      const order = (await slow.kube.getClusterOrder(ref.namespace, name))!;
      expect(order.status?.workers).toHaveLength(1);
      const f = t.lab.fulfillmentClient();
      try {
        expect(await f.bareMetalInstances.listAll(Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid }))).toHaveLength(1);
      } finally {
        f.close();
      }
    } finally {
      slow.close();
    }
  });
});
