// The program on the real engine and the lab, handed the reconciler's observation (io/handoff.ts): it
// creates exactly the BMIs the reconciler's plan named, fetching the ignition once for them; on a
// converged order it makes no fulfillment-service call at all; it observes for itself once the order
// changed since, or without a handoff (an admin's preview); and the ignition reaches no file.
import * as fs from "node:fs";
import * as k8s from "@kubernetes/client-node";
import * as os from "node:os";
import * as path from "node:path";
import { App } from "../../controller/app";
import { reconcileOrder } from "../../controller/reconcile";
import { Filter } from "../../clients/fulfillment";
import { observe, type Observation } from "../../io/observe";
import { planPass } from "../../io/programPlan";
import { fingerprint } from "../../planner";
import { ORDER_LABEL } from "../../planner/names";
import { eventuallyPasses } from "../support/eventually";
import { startTestLab, type TestLab } from "../support/labEnv";
import { PROGRAM_PROCESS_IN_JEST } from "../support/env";

jest.setTimeout(600_000);

describe("the program handed the reconciler's observation", () => {
  let t: TestLab;
  let app: App;
  const ref = { namespace: "", name: "handoff-co" };
  /** Secrets seen by the test's own observation: a slice of the ignition, and the ignition URL's api_key. */
  const secrets = { ignition: "", apiKey: "" };

  beforeAll(async () => {
    t = await startTestLab("handoff");
    ref.namespace = await t.lab.createNamespace(`handoff-${Date.now().toString(36)}`);
    // One worker at first: its first update creates the InfraEnv and that worker (decisions F18), so the
    // handed-off scale-up below creates from the ignition of an InfraEnv that exists.
    await t.lab.createSampleOrder({ namespace: ref.namespace, name: ref.name,
      nodeRequests: [{ nodeSet: "compute", numberOfNodes: 1, instanceType: "compute" }] });
    app = new App({ env: { ...t.env, ...PROGRAM_PROCESS_IN_JEST }, stateDir: t.stateDir }); // the handoff file is the process mode's
  });

  afterAll(async () => {
    app?.close();
    await t?.stop();
  });

  /** What the reconciler's observe phase hands over. */
  function observeOrder(): Promise<Observation> {
    return observe({ kube: app.kube, fulfillment: app.fulfillment, config: app.config, ignitionCaFile: app.settings.ignitionCaFile,
      createCatalogItem: true }, ref);
  }

  async function fulfillmentCalls(): Promise<number> {
    return Object.values((await t.lab.stats()).fulfillment.calls).reduce((a, b) => a + b, 0);
  }

  async function ignitionsServed(): Promise<number> {
    return (await t.lab.stats()).assisted.ignitionsServed;
  }

  async function orderBmiNames(): Promise<string[]> {
    const order = (await app.kube.getClusterOrder(ref.namespace, ref.name))!;
    const f = t.lab.fulfillmentClient();
    try {
      return (await f.bareMetalInstances.listAll(Filter.labelsMatch({ [ORDER_LABEL]: order.metadata.uid }))).map((b) => b.metadata?.name ?? "").sort();
    } finally {
      f.close();
    }
  }

  /** Every handoff file of a running update (in its operation's private directory, stack/operationTmp.ts), read while the program runs. */
  function handoffFiles(): { file: string; mode: number; dirMode: number; text: string }[] {
    const ours = fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith(`bmw-pulumi-${process.pid}-`)).map((d) => path.join(os.tmpdir(), d));
    return ours.flatMap((root) => (fs.existsSync(root) ? fs.readdirSync(root) : []).map((op) => path.join(root, op))).flatMap((dir) => {
      const file = path.join(dir, "observation.json");
      try {
        return [{ file, mode: fs.statSync(file).mode & 0o777, dirMode: fs.statSync(dir).mode & 0o777, text: fs.readFileSync(file, "utf8") }];
      } catch {
        return [];
      }
    });
  }

  /** `up` with a handoff, watching the handoff file on every output chunk. */
  async function upWith(observation: Observation | undefined, message: string) {
    const seen = new Map<string, ReturnType<typeof handoffFiles>[number]>();
    let output = "";
    const r = await app.stacks.up(ref, { message, observation, onOutput: (chunk) => {
      output += chunk;
      for (const f of handoffFiles()) seen.set(f.file, f);
    } });
    return { r, output, files: [...seen.values()] };
  }

  function filesUnder(dir: string): string[] {
    return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
  }

  it("creates exactly the BMIs the reconciler's plan named, fetching the ignition once, and writes no secret to the handoff", async () => {
    await app.stacks.up(ref, { message: "desired compute=1; infraenv" }); // the InfraEnv and the first worker
    await eventuallyPasses(async () => {
      const ie = (await app.kube.listInfraEnvs(ref.namespace))[0];
      expect(ie?.status?.bootArtifacts?.discoveryIgnitionURL).toMatch(/^https:/);
    }, 30_000);
    const first = await orderBmiNames();
    expect(first).toHaveLength(1);
    await t.lab.kubeConfig().makeApiClient(k8s.CustomObjectsApi).patchNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1",
      plural: "clusterorders", namespace: ref.namespace, name: ref.name,
      body: { spec: { nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, bareMetal: { instanceType: "compute" } }] } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const obs = await observeOrder();
    expect(obs.snapshot.ignition?.ok).toBe(true);
    const content = obs.snapshot.ignition?.ok ? obs.snapshot.ignition.content : "";
    secrets.ignition = content.slice(Math.floor(content.length / 2), Math.floor(content.length / 2) + 120);
    secrets.apiKey = new URL(obs.snapshot.infraEnv!.ignitionUrl!).searchParams.get("api_key")!;
    expect(secrets.ignition.length * secrets.apiKey.length).toBeGreaterThan(0);
    const planned = planPass(obs.snapshot, obs.nameSeed, undefined);
    expect(planned.fence).toHaveLength(1);
    const served = await ignitionsServed();

    const { r, output, files } = await upWith(obs, "desired compute=2; handoff");

    expect(output).not.toMatch(/observing (it|the order) again/);
    expect(r.outputs.fingerprint).toBe(fingerprint(planned));
    expect(await orderBmiNames()).toEqual([...first, ...planned.fence.map((f) => f.bareMetalInstance!.name)].sort());
    expect(await ignitionsServed()).toBe(served + 1);
    expect(files).toHaveLength(1);
    expect({ mode: files[0].mode, dirMode: files[0].dirMode }).toEqual({ mode: 0o600, dirMode: 0o700 });
    expect(files[0].text).not.toContain(secrets.ignition);
    expect(files[0].text).not.toContain(secrets.apiKey);
    expect(fs.existsSync(files[0].file)).toBe(false); // removed with the run
  });

  it("on a converged order makes no fulfillment-service call of its own, where its own observation makes several", async () => {
    await eventuallyPasses(async () => {
      await app.reconcile(ref);
      const o = (await app.kube.getClusterOrder(ref.namespace, ref.name))!;
      if (o.status?.readyWorkers !== 2) throw new Error(`not Ready yet: ${JSON.stringify(o.status?.workers?.map((w) => `${w.name}:${w.phase}`))}`);
    }, 180_000, 1_000);
    const obs = await observeOrder();
    const served = await ignitionsServed();
    const calls = async () => ({ ...(await t.lab.stats()).fulfillment.calls });
    const byMethod = await calls();
    const before = await fulfillmentCalls();
    const handed = await upWith(obs, "desired compute=2; steady, handed off");
    const withHandoff = (await fulfillmentCalls()) - before;
    expect({ ...handed.r.changes, same: 0 }).toEqual({ create: 0, update: 0, delete: 0, replace: 0, same: 0 });
    // Every update refreshes first (Pulumi.yaml): one Get per BMI is the engine's read; the program adds nothing.
    const after = await calls();
    const made = Object.fromEntries(Object.entries(after).map(([m, n]) => [m, n - (byMethod[m] ?? 0)]).filter(([, n]) => Number(n) > 0));
    expect(made).toEqual({ "BareMetalInstances/Get": 2 });
    expect(withHandoff).toBe(2);
    expect(await ignitionsServed()).toBe(served); // every declared BMI is adopted: no ignition needed

    const mid = await fulfillmentCalls();
    const own = await upWith(undefined, "desired compute=2; steady, observed");
    const withoutHandoff = (await fulfillmentCalls()) - mid;
    expect({ ...own.r.changes, same: 0 }).toEqual({ create: 0, update: 0, delete: 0, replace: 0, same: 0 });
    expect(own.r.outputs.fingerprint).toBe(handed.r.outputs.fingerprint);
    expect(withoutHandoff).toBeGreaterThanOrEqual(2 + 5);
  });

  it("observes for itself when the order changed since the reconciler observed it", async () => {
    const obs = await observeOrder();
    await app.kube.patchClusterOrderMetadata(ref, { annotations: { "example.com/touched": "yes" } });
    const before = await fulfillmentCalls();
    const { r, output } = await upWith(obs, "desired compute=2; stale handoff");
    expect(output).toMatch(/changed since the reconciler observed it \(resourceVersion \d+ → \d+\); observing it again/);
    expect(await fulfillmentCalls()).toBeGreaterThan(before);
    expect({ ...r.changes, same: 0 }).toEqual({ create: 0, update: 0, delete: 0, replace: 0, same: 0 });
  });

  it("previews without a handoff as before (an admin's preview), and neither the ignition nor its URL's api_key is in any file of the state", async () => {
    const p = await app.preview(ref);
    expect(p.changeSummary.create ?? 0).toBe(0);
    expect(p.changeSummary.delete ?? 0).toBe(0);
    for (const file of filesUnder(t.stateDir)) {
      const text = fs.readFileSync(file).toString("latin1");
      expect({ file, ignition: text.includes(secrets.ignition), apiKey: text.includes(secrets.apiKey) })
        .toEqual({ file, ignition: false, apiKey: false });
    }
  });

  it("is what the loop's reconcile does: the observation reaches the program through App's runner, and the program observes nothing more", async () => {
    await app.kube.patchClusterOrderMetadata(ref, { annotations: { "example.com/reconcile": "1" } }); // a new version to plan from
    const handed: (Observation | undefined)[] = [];
    let output = "";
    const up = app.stacks.up.bind(app.stacks);
    app.stacks.up = (r, o = { message: "" }) => {
      handed.push(o.observation);
      return up(r, { ...o, onOutput: (chunk) => { output += chunk; o.onOutput?.(chunk); } });
    };
    try {
      const r = await reconcileOrder({ ...app.reconcileDeps(), refreshIntervalMs: 1 }, ref); // refresh due: an update runs
      expect(r.action).toBe("up");
    } finally {
      app.stacks.up = up;
    }
    expect(handed).toHaveLength(1);
    expect(handed[0]?.snapshot.order.metadata.uid).toBeTruthy();
    expect(output).not.toMatch(/observing (the order|it) again|not usable/);
  });
});
