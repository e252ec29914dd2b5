// Observe-only mode on the lab (issue 17, point 4): a reconciler started with `run --mode observe` beside a
// stand-in incumbent (this project's own App in act mode, which records status.workers[] as the design's
// controller does) reports per order, in its own annotation, whether its plan agrees with the recorded
// workers, and makes no fulfillment-service mutation and no other write to the ClusterOrder. Then the
// switch (point 5): the incumbent stops, this controller acts with a state of its own (no stack yet) and
// takes the order over by adoption: zero fulfillment-service mutations, the recorded workers and their
// attempt history kept, and an empty preview afterwards.
import * as path from "node:path";
import { App } from "../../controller/app";
import type { ClusterOrder } from "../../planner/types";
import { OBSERVE_REPORT_ANNOTATION, type ObserveReport } from "../../planner/observeReport";
import { FINALIZER } from "../../planner/names";
import { eventuallyPasses } from "../support/eventually";
import { PROGRAM_PROCESS_IN_JEST } from "../support/env";
import { productEnv, startTestLab, type TestLab } from "../support/labEnv";
import { OrderProbe } from "../support/orderWatch";
import { startReconciler, type ReconcilerProcess } from "../support/reconciler";

jest.setTimeout(600_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MUTATING = /\/(Create|Update|Delete|Signal)$/;

describe("run --mode observe beside the incumbent", () => {
  let t: TestLab;
  let incumbent: App;
  let observer: ReconcilerProcess | undefined;
  let probe: OrderProbe;
  const ref = { namespace: "", name: "observed-co" };

  beforeAll(async () => {
    t = await startTestLab("observe");
    ref.namespace = await t.lab.createNamespace(`obs-${Date.now().toString(36)}`);
    incumbent = new App({ env: { ...t.env, ...PROGRAM_PROCESS_IN_JEST }, stateDir: t.stateDir });
    probe = new OrderProbe(t.lab.kubeConfig(), ref.namespace, ref.name, t.lab.fulfillmentClient());
  });

  afterAll(async () => {
    await observer?.stop();
    incumbent?.close();
    await t?.stop();
  });

  const mutations = async () => Object.entries((await t.lab.stats()).fulfillment.calls)
    .filter(([m]) => MUTATING.test(m)).reduce((n, [, c]) => n + c, 0);
  const reportOf = (o: ClusterOrder | undefined): ObserveReport | undefined => {
    const raw = o?.metadata.annotations?.[OBSERVE_REPORT_ANNOTATION];
    return raw ? (JSON.parse(raw) as ObserveReport) : undefined;
  };

  async function incumbentConverges(n: number): Promise<void> {
    await eventuallyPasses(async () => {
      const r = await incumbent.reconcile(ref);
      const ws = (await probe.order())?.status?.workers ?? [];
      expect(r.action === "skipped" && ws.length === n && ws.every((w) => w.phase === "Ready")).toBe(true);
    }, 240_000, 1_000);
  }

  it("agrees with a converged order, then reports the incumbent's pending scale-up, changing nothing", async () => {
    await t.lab.createSampleOrder({ ...ref, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }] });
    await incumbentConverges(2);
    const stateDir = path.join(t.lab.dir, "observer-state");
    const env = productEnv(t.lab, stateDir, { BMW_LOG_LEVEL: "info" });
    const before = await mutations();
    const settled = (await probe.order())!;
    observer = startReconciler(env, ["--mode", "observe", "--interval", "2", "--namespace", ref.namespace, "--lease-namespace", ref.namespace],
      path.join(t.lab.logsDir, "reconciler-observer.log"));
    await eventuallyPasses(async () => expect(reportOf(await probe.order())).toMatchObject({ agrees: true, differences: [] }), 120_000, 1_000);
    // It ran the program and its providers too: a preview on a stack of its own, which would only adopt.
    await eventuallyPasses(async () => expect(reportOf(await probe.order())?.preview).toMatch(/^a new stack: \d+ to create .*, 0 to update, 0 to delete$/),
      120_000, 1_000);

    // The tenant asks for a third worker; the incumbent has not acted yet.
    await probe.setCount(0, 3);
    await eventuallyPasses(async () => {
      const r = reportOf(await probe.order());
      expect(r?.agrees).toBe(false);
      expect(r?.differences).toContain("would create 1 new worker(s) in node set compute");
      expect(r?.differences).toContain("desiredWorkers: recorded 2, planned 3");
    }, 60_000, 1_000);
    await sleep(5_000); // a few more passes of the observer
    const now = (await probe.order())!;
    expect(await mutations()).toBe(before);
    expect(now.status).toEqual(settled.status);
    expect(now.metadata.finalizers).toEqual(settled.metadata.finalizers);
    expect(now.metadata.finalizers).toContain(FINALIZER); // the incumbent's, untouched

    // The incumbent acts; the observer agrees again.
    await incumbentConverges(3);
    await eventuallyPasses(async () => expect(reportOf(await probe.order())?.agrees).toBe(true), 60_000, 1_000);
  });

  it("once switched on, takes the incumbent's workers over with no fulfillment-service mutation and previews nothing more", async () => {
    await observer?.stop();
    observer = undefined;
    incumbent.close();
    const recorded = (await probe.order())!;
    // Switched on with the state it observed with: its previews' stacks were not in this backend.
    const stateDir = path.join(t.lab.dir, "observer-state");
    const ours = new App({ env: { ...productEnv(t.lab, stateDir), ...PROGRAM_PROCESS_IN_JEST }, stateDir });
    try {
      expect(await ours.stacks.stackExists(ref)).toBe(false);
      const calls = async () => ({ ...(await t.lab.stats()).fulfillment.calls });
      const before = await calls();
      const r = await ours.reconcile(ref);
      expect(r.action).toBe("up");
      const after = await calls();
      const mutated = Object.entries(after).filter(([m, n]) => MUTATING.test(m) && n !== (before[m] ?? 0));
      expect(mutated).toEqual([]);
      const taken = (await probe.order())!;
      const shape = (o: ClusterOrder) => (o.status?.workers ?? []).map((w) => [w.name, w.phase, w.bareMetalInstance?.id, w.attemptCount]);
      expect(shape(taken)).toEqual(shape(recorded));
      const p = await ours.preview(ref);
      expect(p.steps.filter((s) => s.op !== "same" && s.op !== "refresh")).toEqual([]);
      expect((await ours.reconcile(ref)).action).toBe("skipped");
    } finally {
      ours.close();
    }
  });
});
