// One reconcile at a time on the lab (real kube-apiserver, simulator, controllers), with a stand-in for
// the stack that does what the program does (observe, plan with its own names, fence, create through the
// real BMI provider) without the engine (issue 15: findings 3, 4, 5, 8, 12, 15).
import * as k8s from "@kubernetes/client-node";
import { App } from "../../controller/app";
import { observe, type Observation } from "../../io/observe";
import { reconcileOrder, type ReconcileDeps, type StackRunner, type UpResult } from "../../controller/reconcile";
import { writeFence } from "../../io/status";
import { newInfraEnvIgnition } from "../../io/newInfraEnvIgnition";
import { fetchIgnition } from "../../clients/ignition";
import { PulumiCommandError } from "../../stack/pulumiProcess";
import { Filter } from "../../clients/fulfillment";
import { ConflictError, type Kube } from "../../clients/kube";
import { fingerprint, plan } from "../../planner";
import { APPLIED_ANNOTATION, FINALIZER, IGNITION_OF_NEW_INFRAENV, ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder, DesiredInfraEnv } from "../../planner/types";
import { create } from "../../providers/bareMetalInstanceOps";
import { eventuallyPasses } from "../support/eventually";
import { startTestLab, type TestLab } from "../support/labEnv";
import { labControlClient } from "../../lab/labControl";
import { clearFaults, setFault, workerBmi } from "../fulfillment/helpers";
import { PROGRAM_PROCESS_IN_JEST } from "../support/env";

jest.setTimeout(300_000);

interface EventObject { reason?: string; type?: string; note?: string; regarding?: { name?: string } }

describe("reconcile on the lab, with the program's steps in place of the engine", () => {
  let t: TestLab;
  let app: App;
  let custom: k8s.CustomObjectsApi;
  let ns = "";
  /** BMI names the stand-in program sent a Create for, in order. */
  const createsSent: string[] = [];

  beforeAll(async () => {
    t = await startTestLab("reconcile");
    // Backoff long enough that a failed worker is not retried while a test looks at it.
    app = new App({ env: { ...t.env, ...PROGRAM_PROCESS_IN_JEST, BMW_TRANSIENT_BACKOFF_MS: "120000", BMW_TRANSIENT_BACKOFF_CAP_MS: "120000",
      BMW_RESOURCE_BACKOFF_MS: "120000", BMW_RESOURCE_BACKOFF_CAP_MS: "120000" }, stateDir: t.stateDir });
    custom = t.lab.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
    ns = await t.lab.createNamespace(`rec-${Date.now().toString(36)}`);
  });

  afterAll(async () => {
    app?.close();
    await t?.stop();
  });

  async function ensureInfraEnv(ie: DesiredInfraEnv): Promise<void> {
    try {
      await custom.createNamespacedCustomObject({ group: "agent-install.openshift.io", version: "v1beta1", plural: "infraenvs", namespace: ie.namespace,
        body: { apiVersion: "agent-install.openshift.io/v1beta1", kind: "InfraEnv",
          metadata: { name: ie.name, namespace: ie.namespace, ownerReferences: [{ ...ie.owner, controller: true, blockOwnerDeletion: false }] },
          spec: { pullSecretRef: { name: ie.pullSecretName } } } });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
    }
  }

  /**
   * What index.ts does in an update, minus the engine: observation (its own, or the one the reconcile
   * handed over), plan, fence and Creates.
   */
  async function programUp(ref: { namespace: string; name: string }, handed?: Observation): Promise<UpResult> {
    const { snapshot } = handed ?? await observe({ kube: app.kube, fulfillment: app.fulfillment, config: app.config,
      ignitionCaFile: app.settings.ignitionCaFile, createCatalogItem: true }, ref);
    if (snapshot.bmis === undefined) throw new Error("error: the fulfillment-service could not be read");
    const p = plan(snapshot);
    if (p.infraEnv) await ensureInfraEnv(p.infraEnv);
    // A new order's BMIs take the ignition of the InfraEnv just made, fetched before the fence (decisions F18).
    const later = p.workers.filter((w) => !w.bmi.adoptId && w.bmi.userData === IGNITION_OF_NEW_INFRAENV);
    const ignition = later.length === 0 ? undefined : await newInfraEnvIgnition({ kube: app.kube,
      loadIgnition: (url) => fetchIgnition(url, { caFile: app.settings.ignitionCaFile, maxBytes: app.config.ignitionMaxBytes }) },
    snapshot.order, { infraEnvName: p.infraEnv!.name, timeoutMs: 60_000, pollMs: 250, maxBytes: app.config.ignitionMaxBytes });
    let workers = p.workers;
    if (p.fence.length > 0) {
      try {
        await writeFence(app.kube, snapshot.order, p);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
        workers = workers.filter((w) => !w.requiresFence);
      }
    }
    const errors: string[] = [];
    for (const w of workers) {
      if (!w.bmi.adoptId && !snapshot.bmis.some((b) => b.name === w.bmi.name)) createsSent.push(w.bmi.name);
      try {
        await create({ ...w.bmi, ...(later.includes(w) ? { userData: ignition! } : {}), connection: app.settings.fulfillment });
      } catch (err) {
        errors.push(`    error: ${(err as Error).message}`);
      }
    }
    if (errors.length > 0) throw new PulumiCommandError({ code: 255, stdout: [...errors, "error: update failed"].join("\n"), stderr: "" }, ["up"]);
    return { changes: { create: 0, update: 0, delete: 0, replace: 0, same: 0 }, durationMs: 0, outputs: { fingerprint: fingerprint({ ...p, workers }) } };
  }

  /** The stack's destroy: the deletes of every BMI the order records are issued, not awaited. */
  async function destroyIssuing(ref: { namespace: string; name: string }): Promise<void> {
    const order = await app.kube.getClusterOrder(ref.namespace, ref.name);
    for (const w of order?.status?.workers ?? []) {
      if (w.bareMetalInstance?.id) await app.fulfillment.bareMetalInstances.delete(w.bareMetalInstance.id).catch(() => undefined);
    }
  }

  const calls = { up: 0, destroy: 0 };
  function deps(up: StackRunner["up"] = (ref) => programUp(ref), destroy: StackRunner["destroy"] = destroyIssuing): ReconcileDeps {
    const stacks: StackRunner = {
      up: async (ref, o) => {
        calls.up++;
        return up(ref, o);
      },
      destroy: async (ref) => {
        calls.destroy++;
        return destroy(ref);
      },
      preview: () => Promise.reject(new Error("no saved preview in these tests")),
      removeStack: async () => undefined,
      pin: async () => undefined,
      stackExists: (r) => app.stacks.stackExists(r),
      programDigest: () => "stand-in",
    };
    return { ...app.reconcileDeps(), stacks, progressReportMs: 0 };
  }

  const order = async (name: string) => (await app.kube.getClusterOrder(ns, name)) as ClusterOrder;
  const condition = (o: ClusterOrder, type: string) => o.status?.conditions?.find((c) => c.type === type);
  async function events(name: string): Promise<EventObject[]> {
    const list = await custom.listNamespacedCustomObject({ group: "events.k8s.io", version: "v1", plural: "events", namespace: ns }) as { items: EventObject[] };
    return list.items.filter((e) => e.regarding?.name === name);
  }
  async function orderBmis(uid: string) {
    return app.fulfillment.bareMetalInstances.listAll(Filter.and(Filter.tenantEquals("system"), Filter.labelsMatch({ [ORDER_LABEL]: uid })));
  }

  it("leaves an order without bare-metal node requests alone: no finalizer, no InfraEnv, no stack, no status", async () => {
    await custom.createNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: ns,
      body: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", metadata: { name: "vm-only", namespace: ns },
        spec: { templateID: "osac.templates.ocp", nodeRequests: [] } } });
    const before = { ...calls };
    const r = await reconcileOrder(deps(), { namespace: ns, name: "vm-only" });
    expect(r.action).toBe("ignored");
    const o = await order("vm-only");
    expect(o.metadata.finalizers ?? []).not.toContain(FINALIZER);
    expect(o.status).toBeUndefined();
    expect(calls).toEqual(before);
    expect((await app.kube.listInfraEnvs(ns)).filter((ie) => ie.metadata?.name === "vm-only-infraenv")).toEqual([]);
  });

  describe("an order with two workers", () => {
    const name = "rec-co";
    const ref = () => ({ namespace: ns, name });
    let uid = "";

    it("a failed update names its cause on the order (UpdateFailed, Warning event, no secret) and emits no event for workers it never created", async () => {
      uid = (await t.lab.createSampleOrder({ namespace: ns, name, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }] })).uid;
      // The first update would create the InfraEnv and, with its ignition, the two new workers (decisions F18);
      // it fails before the program fences anything.
      const token = "Zx9Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz";
      const failing: StackRunner["up"] = async () => {
        throw new PulumiCommandError({ code: 255, stderr: "", stdout: [
          "Diagnostics:", "  pulumi:pulumi:Stack (bmw):",
          `    error: the checkpoint is corrupt near "authorization: Bearer ${token}"`, "error: update failed"].join("\n") }, ["up"]);
      };
      await expect(reconcileOrder(deps(failing), ref())).rejects.toThrow(/exit code 255/);
      const o = await order(name);
      expect(condition(o, "UpdateFailed")).toMatchObject({ status: "True", reason: "EngineError" });
      expect(condition(o, "UpdateFailed")?.message).toContain("the checkpoint is corrupt");
      expect(JSON.stringify(o.status)).not.toContain(token);
      const ev = await events(name);
      const warning = ev.find((e) => e.reason === "UpdateFailed");
      expect(warning?.type).toBe("Warning");
      expect(warning?.note).toContain("the checkpoint is corrupt");
      expect(JSON.stringify(ev)).not.toContain(token);
      // No worker was created, so no WorkerCreated (the failed pass's plan had two new slots of its own).
      expect(ev.filter((e) => e.reason === "WorkerCreated")).toEqual([]);
      expect(o.status?.workers ?? []).toEqual([]);
    });

    it("the next successful update clears UpdateFailed, and WorkerCreated names exactly the BMIs that exist", async () => {
      await reconcileOrder(deps(), ref());
      const o = await order(name);
      expect(condition(o, "UpdateFailed")?.status).toBe("False");
      const bmis = (await orderBmis(uid)).map((b) => b.metadata?.name).sort();
      expect(bmis).toHaveLength(2);
      await eventuallyPasses(async () => {
        const created = (await events(name)).filter((e) => e.reason === "WorkerCreated");
        expect(created).toHaveLength(2);
        expect(created.map((e) => bmis.find((b) => e.note?.includes(b!))).sort()).toEqual(bmis);
      }, 30_000);
      expect(o.status?.phase).toBeUndefined(); // osac-operator's field
    });

    it("a rejected Create fails that worker with backoff at once, and the next update does not send it again", async () => {
      await custom.patchNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: ns, name,
        body: { spec: { nodeRequests: [{ nodeSet: "compute", numberOfNodes: 3, bareMetal: { instanceType: "compute" } }] } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
      await t.lab.fault({ method: "BareMetalInstances/Create", code: "INVALID_ARGUMENT" });
      try {
        const sentBefore = createsSent.length;
        await expect(reconcileOrder(deps(), ref())).rejects.toThrow();
        const rejected = createsSent.slice(sentBefore);
        expect(rejected).toHaveLength(1);
        let o = await order(name);
        const failed = o.status?.workers?.find((w) => w.bareMetalInstance?.name === rejected[0]);
        expect(failed).toMatchObject({ phase: "Failed" });
        expect(failed?.nextRetryTime).toBeDefined();
        expect(condition(o, "UpdateFailed")).toMatchObject({ status: "True", reason: "CreateRejected" });
        expect(condition(o, "UpdateFailed")?.message).toContain(rejected[0]);
        // The loop comes back: the update declares the two live workers only, and succeeds.
        const r = await reconcileOrder(deps(), ref());
        expect(r.action).toBe("up");
        expect(createsSent.slice(sentBefore)).toEqual(rejected);
        o = await order(name);
        expect(condition(o, "UpdateFailed")?.status).toBe("False");
        expect(o.status?.workers?.find((w) => w.name === failed!.name)?.phase).toBe("Failed");
      } finally {
        await t.lab.clearFaults();
      }
    });

    it("deletion never waits: every worker Deleting, requeue while a BMI is stuck, finalizer only after Gets confirm all gone", async () => {
      await custom.patchNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: ns, name,
        body: { spec: { nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, bareMetal: { instanceType: "compute" } }] } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
      const live = (await orderBmis(uid)).map((b) => b.metadata!.name);
      expect(live.length).toBeGreaterThanOrEqual(2);
      await t.lab.fault({ namePrefix: live[0], stuckDeleting: true });
      try {
        await custom.deleteNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: ns, name });
        const started = Date.now();
        const r = await reconcileOrder(deps(), ref());
        expect(Date.now() - started).toBeLessThan(20_000);
        expect(r.action).toBe("requeue");
        expect(r.requeueAt!.getTime() - Date.now()).toBeLessThan(31_000);
        const o = await order(name);
        expect(o.metadata.finalizers).toContain(FINALIZER);
        expect(o.status?.workers?.length).toBeGreaterThanOrEqual(1);
        expect(o.status?.workers?.every((w) => w.phase === "Deleting")).toBe(true);
        expect(o.status?.workers?.some((w) => w.bareMetalInstance?.name === live[0])).toBe(true);
        expect(o.status?.phase).toBeUndefined();
        // Still stuck: another pass requeues again and does not destroy the stack a second time.
        const destroys = calls.destroy;
        expect((await reconcileOrder(deps(), ref())).action).toBe("requeue");
        expect(calls.destroy).toBe(destroys);
      } finally {
        await t.lab.clearFaults();
      }
      await eventuallyPasses(async () => {
        const r = await reconcileOrder(deps(), ref());
        expect(["deleted", "gone"]).toContain(r.action);
      }, 60_000, 500);
      expect(await app.kube.getClusterOrder(ns, name)).toBeUndefined();
      expect(await orderBmis(uid)).toEqual([]);
      const deleted = (await events(name)).filter((e) => e.reason === "WorkerDeleted").map((e) => e.note ?? "");
      for (const b of live) expect(deleted.some((n) => n.includes(b))).toBe(true);
    });
  });
  it("deletion keeps the finalizer while Lists leave out a BMI known only by name; found by name, it is deleted and confirmed", async () => {
    const name = "rec-lost";
    const ref = { namespace: ns, name };
    const { uid } = await t.lab.createSampleOrder({ namespace: ns, name, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 1, instanceType: "compute" }] });
    // A Create whose response was lost: the BMI exists, the status knows it by name only.
    const lost = workerBmi(`${name}-w0a`);
    lost.metadata!.labels = { ...lost.metadata!.labels, [ORDER_LABEL]: uid };
    const bmi = await app.fulfillment.bareMetalInstances.create(lost);
    const o = await order(name);
    await app.kube.patchClusterOrderMetadata(ref, { finalizers: [...(o.metadata.finalizers ?? []), FINALIZER] }, o.metadata.resourceVersion);
    // Written as the product writes it (its field manager owns the entry).
    await app.kube.applyClusterOrderStatus(ref, { workers: [{ name: "w0", nodeSet: "compute", kind: "BareMetalInstance", phase: "Provisioning",
      instanceType: "compute", bmiCreateState: "Attempted", bareMetalInstance: { name: `${name}-w0a` } }] });
    await custom.deleteNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: ns, name });
    const control = labControlClient({ address: t.lab.fulfillment.address, caFile: t.lab.fulfillment.caFile, plaintext: t.lab.fulfillment.plaintext });
    try {
      // Every List leaves the BMI out, the lookup by name included: one absence is not proof.
      await setFault(control, { list: { omit_id: bmi.id } });
      // The reconcile's clock, not the wall clock, stamps the transition to Deleting.
      const clock = new Date("2031-02-03T04:05:06.000Z");
      const r = await reconcileOrder({ ...deps(), now: () => clock }, ref);
      expect(r.action).toBe("requeue");
      const kept = await order(name);
      expect(kept.metadata.finalizers).toContain(FINALIZER);
      expect(kept.status?.workers?.map((w) => [w.bareMetalInstance?.name, w.phase, w.attemptStartedAt]))
        .toEqual([[lost.metadata!.name, "Deleting", clock.toISOString()]]);
      await clearFaults(control);
      // The next pass finds it by name, deletes it and keeps the finalizer until a Get confirms it gone.
      await eventuallyPasses(async () => {
        expect(["deleted", "gone"]).toContain((await reconcileOrder(deps(), ref)).action);
      }, 60_000, 500);
    } finally {
      await clearFaults(control);
      control.close();
    }
    expect(await app.kube.getClusterOrder(ns, name)).toBeUndefined();
    await expect(app.fulfillment.bareMetalInstances.get(bmi.id)).rejects.toThrow(/NOT_FOUND/);
    expect(await orderBmis(uid)).toEqual([]);
  });

  it("deletion drops an entry known only by name whose BMI never existed after two lookups by name found nothing", async () => {
    const name = "rec-never";
    const ref = { namespace: ns, name };
    await t.lab.createSampleOrder({ namespace: ns, name, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 1, instanceType: "compute" }] });
    const o = await order(name);
    await app.kube.patchClusterOrderMetadata(ref, { finalizers: [...(o.metadata.finalizers ?? []), FINALIZER] }, o.metadata.resourceVersion);
    await app.kube.applyClusterOrderStatus(ref, { workers: [{ name: "w0", nodeSet: "compute", kind: "BareMetalInstance", phase: "Provisioning",
      instanceType: "compute", bmiCreateState: "Attempted", bareMetalInstance: { name: `${name}-w0a` } }] });
    await custom.deleteNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: ns, name });
    expect((await reconcileOrder(deps(), ref)).action).toBe("requeue");
    expect((await order(name)).metadata.finalizers).toContain(FINALIZER);
    expect((await reconcileOrder(deps(), ref)).action).toBe("deleted");
    expect(await app.kube.getClusterOrder(ns, name)).toBeUndefined();
  });
  /** The Kube of the reconcile, counting its ClusterOrder calls by method. */
  function countingClusterOrderCalls(kube: Kube): { kube: Kube; calls: Record<string, number>; reads: number[] } {
    const calls: Record<string, number> = {};
    const reads: number[] = [];
    const counted = new Proxy(kube, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop, target);
        if (typeof value !== "function" || typeof prop !== "string" || !prop.includes("ClusterOrder")) return value;
        return (...args: unknown[]) => {
          calls[prop] = (calls[prop] ?? 0) + 1;
          if (prop === "getClusterOrder") reads.push(Date.now());
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    return { kube: counted, calls, reads };
  }

  it("a scale-up (2 -> 3) reads the order twice, writes its status once and its metadata once before and at most once after `up`; the program plans from the reconcile's observation", async () => {
    const name = "rec-count";
    const ref = { namespace: ns, name };
    const { uid } = await t.lab.createSampleOrder({ namespace: ns, name, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }] });
    await reconcileOrder(deps(), ref);
    await eventuallyPasses(async () => {
      const ie = (await app.kube.listInfraEnvs(ns)).find((x) => x.metadata?.name === `${name}-infraenv`);
      expect(ie?.status?.bootArtifacts?.discoveryIgnitionURL).toMatch(/^https:/);
    }, 60_000);
    // Converged: the stack holds the plan, and the order records it.
    await eventuallyPasses(async () => {
      expect((await reconcileOrder(deps(), ref)).action).toBe("skipped");
    }, 120_000, 1_000);
    expect((await order(name)).metadata.annotations?.[APPLIED_ANNOTATION]).toBeDefined();
    expect(await orderBmis(uid)).toHaveLength(2);

    await custom.patchNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: ns, name,
      body: { spec: { nodeRequests: [{ nodeSet: "compute", numberOfNodes: 3, bareMetal: { instanceType: "compute" } }] } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const counted = countingClusterOrderCalls(app.kube);
    const handed: (Observation | undefined)[] = [];
    const handOff: StackRunner["up"] = async (r, o) => {
      handed.push(o.observation);
      return programUp(r, o.observation);
    };
    const r = await reconcileOrder({ ...deps(handOff), kube: counted.kube }, ref);
    expect(r.action).toBe("up");
    // The program got the reconcile's observation (no read of its own), at the version the withdrawal of
    // the applied record left: its conditional fence succeeded, so the third BMI exists after this one pass.
    expect(handed).toHaveLength(1);
    expect(handed[0]?.snapshot.order.spec.nodeRequests?.[0]?.numberOfNodes).toBe(3);
    expect(handed[0]?.snapshot.order.metadata.annotations?.[APPLIED_ANNOTATION]).toBeUndefined();
    expect(await orderBmis(uid)).toHaveLength(3);
    // Reads: the get (the observation before `up` reuses it) and the observation after `up`. Writes: the
    // record's withdrawal before `up`; after it, one status write and, only when the plan did not move
    // during `up`, one metadata patch recording it (here it moved: the new worker's BMI now exists).
    const recorded = (await order(name)).metadata.annotations?.[APPLIED_ANNOTATION] !== undefined;
    expect(counted.calls).toEqual({ getClusterOrder: 2, applyClusterOrderStatus: 1, patchClusterOrderMetadata: recorded ? 2 : 1 });
  });

  it("progress reports of an update begin when it has its pulumi slot: an order waiting for one is not observed meanwhile", async () => {
    const name = "rec-count"; // the previous test left it converged at 3 workers
    const ref = { namespace: ns, name };
    await custom.patchNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: ns, name,
      body: { spec: { nodeRequests: [{ nodeSet: "compute", numberOfNodes: 4, bareMetal: { instanceType: "compute" } }] } } },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const counted = countingClusterOrderCalls(app.kube);
    const at = { called: 0, started: 0 };
    const waitsForSlot: StackRunner["up"] = async (r, o) => {
      at.called = Date.now();
      await new Promise((res) => setTimeout(res, 1_000)); // the other updates hold every slot
      at.started = Date.now();
      o.onStart?.();
      await new Promise((res) => setTimeout(res, 600)); // the engine's refresh, before the program's steps
      return programUp(r, o.observation);
    };
    const r = await reconcileOrder({ ...deps(waitsForSlot), kube: counted.kube, progressReportMs: 150 }, ref);
    expect(r.action).toBe("up");
    expect(counted.reads.filter((t) => t > at.called && t < at.started)).toEqual([]);
    expect(counted.reads.filter((t) => t >= at.started && t < at.started + 600).length).toBeGreaterThan(0);
  });
});
