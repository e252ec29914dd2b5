// Change control on the lab (issue 17, point 2): a blast-radius cap spreads a 20-worker scale-up over passes, and an
// order whose policy holds CAPI-driven scale-downs for approval keeps its released hosts until an operator
// approves exactly that plan; an approval of another plan is refused and changes nothing; a saved preview,
// approved, is what the next update does, or nothing is done (PlanDiverged).
import { App, RefusedError } from "../../controller/app";
import type { ReconcileResult } from "../../controller/reconcileDeps";
import type { FulfillmentClient } from "../../clients/fulfillment";
import { APPROVAL_REQUIRED_ANNOTATION } from "../../planner/changeControl";
import { formatPlanned } from "../../cli/main";
import { PROGRAM_PROCESS_IN_JEST } from "../support/env";
import { productEnv, startTestLab, type TestLab } from "../support/labEnv";
import { OrderProbe } from "../support/orderWatch";

jest.setTimeout(900_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const IN_FLIGHT = new Set(["Provisioning", "WaitingForAgent"]);

describe("change control by kind", () => {
  let t: TestLab;
  let app: App;
  let f: FulfillmentClient;
  let probe: OrderProbe;
  let uid = "";
  const ref = { namespace: "", name: "cc-co" };
  const note = (s: string) => process.stdout.write(`[change control] ${s}\n`);

  beforeAll(async () => {
    t = await startTestLab("change-control", {}, { hosts: 32 });
    ref.namespace = await t.lab.createNamespace(`cc-${Date.now().toString(36)}`);
    app = new App({ env: { ...t.env, ...PROGRAM_PROCESS_IN_JEST, BMW_MAX_CREATES_IN_FLIGHT: "5" }, stateDir: t.stateDir });
    f = t.lab.fulfillmentClient();
    probe = new OrderProbe(t.lab.kubeConfig(), ref.namespace, ref.name, f);
  });

  afterAll(async () => {
    app?.close();
    f?.close();
    await t?.stop();
  });

  async function reconcile(what: string): Promise<ReconcileResult | undefined> {
    try {
      const r = await app.reconcile(ref);
      note(`${what}: ${r.action}${r.up ? ` ${JSON.stringify(r.up.changes)}` : ""}`);
      return r;
    } catch (e) {
      note(`${what}: failed: ${String((e as Error).message).slice(0, 160)}`);
      return undefined;
    }
  }

  /** Reconciles until `n` workers are Ready; returns the most workers seen in flight after any pass. */
  async function drive(what: string, n: number, max = 40): Promise<number> {
    let peak = 0;
    for (let i = 1; i <= max; i++) {
      const r = await reconcile(`${what} ${i}`);
      const ws = (await probe.order())?.status?.workers ?? [];
      peak = Math.max(peak, ws.filter((w) => IN_FLIGHT.has(w.phase)).length);
      if (r?.action === "skipped" && ws.length === n && ws.every((w) => w.phase === "Ready")) return peak;
      await sleep(1_000);
    }
    throw new Error(`${what}: not Ready with ${n} workers: ${JSON.stringify((await probe.order())?.status?.workers?.map((w) => `${w.name}:${w.phase}`))}`);
  }

  it("a cap of 5 creates in flight spreads a 1 → 20 scale-up over passes", async () => {
    uid = (await t.lab.createSampleOrder({ ...ref, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 1, instanceType: "compute" }] })).uid;
    await drive("create", 1);
    const creates = async () => (await t.lab.stats()).fulfillment.calls["BareMetalInstances/Create"] ?? 0;
    const before = await creates();
    await probe.setCount(0, 20);
    // What the cap leaves for later is shown before anything happens.
    expect(formatPlanned(`${ref.namespace}/${ref.name}`, await app.currentPlan(ref))).toContain("14 more create(s) wait for the in-flight caps");
    const peak = await drive("scale-up", 20, 80);
    expect(peak).toBeLessThanOrEqual(5);
    expect(await creates()).toBe(before + 19);
  });

  it("holds a CAPI scale-down for approval: the released hosts stay until exactly that plan is approved", async () => {
    await probe.annotate(APPROVAL_REQUIRED_ANNOTATION, "scaleDown");
    const live = async () => (await probe.bmis(uid)).filter((b) => !b.metadata?.deletion_timestamp).length;
    await probe.setCount(0, 18);
    // CAPI releases two hosts (their workers go Unbinding); then the deletes wait.
    let held: ReconcileResult | undefined;
    for (let i = 1; i <= 20 && !held; i++) {
      const r = await reconcile(`scale-down ${i}`);
      // The pass that patches the NodePool may already report the plan observed after it (CAPI released the
      // hosts during the update) as waiting: the hold is the next pass that runs nothing.
      if (r?.action === "paused" && r.plan?.approval) held = r;
      else await sleep(1_000);
    }
    expect(held?.action).toBe("paused");
    const waiting = held!.plan!.approval!;
    expect(waiting.changes.map((c) => `${c.op} ${c.kind}`)).toEqual(["delete scaleDown", "delete scaleDown"]);
    const order = (await probe.order())!;
    expect(order.status?.conditions?.find((c) => c.type === "ApprovalRequired")).toMatchObject({ status: "True", reason: "ApprovalRequired" });
    // Nothing is deleted while it waits, however often the loop comes back.
    for (let i = 0; i < 3; i++) expect((await reconcile(`waiting ${i + 1}`))?.action).toBe("paused");
    expect(await live()).toBe(20);
    const preview = await app.preview(ref);
    expect(preview.changeSummary.delete ?? 0).toBe(0);
    expect(formatPlanned(`${ref.namespace}/${ref.name}`, preview.plan)).toContain(`--plan ${waiting.fingerprint.slice(0, 12)}`);
    // An approval names the plan it approves: another one is refused and approves nothing.
    await expect(app.approve(ref, "0123456789ab")).rejects.toThrow(RefusedError);
    expect((await reconcile("after a refused approval"))?.action).toBe("paused");
    const approved = await app.approve(ref, waiting.fingerprint.slice(0, 12)); // what the operator saw
    expect("fingerprint" in approved && approved.fingerprint).toBe(waiting.fingerprint);
    const r = await reconcile("approved");
    expect(r?.action).toBe("up");
    expect(r?.up?.changes.delete).toBeGreaterThanOrEqual(2);
    await drive("after approval", 18);
    expect(await live()).toBe(18);
    expect((await probe.order())?.status?.conditions?.find((c) => c.type === "ApprovalRequired")).toMatchObject({ status: "False" });
  });

  it("a saved preview, once approved, is what the update does; one the plan no longer matches fails closed (PlanDiverged)", async () => {
    await probe.annotate(APPROVAL_REQUIRED_ANNOTATION, "create");
    const creates = async () => (await t.lab.stats()).fulfillment.calls["BareMetalInstances/Create"] ?? 0;
    const condition = async () => (await probe.order())?.status?.conditions?.find((c) => c.type === "PlanDiverged");
    await probe.setCount(0, 19);
    expect((await reconcile("scale-up waits"))?.plan?.approval?.changes.map((c) => c.kind)).toEqual(["create"]);
    // The operator previews the waiting plan as it would apply, and saves it.
    const preview = await app.preview(ref, { save: true });
    const saved = preview.saved!;
    note(`saved preview ${saved.id.slice(0, 12)}: ${saved.steps.join(" | ")}`);
    expect(saved.changes).toEqual(["create/create/compute/"]);
    expect(saved.steps.filter((s) => s.startsWith("create ") && s.endsWith("::new:compute:bmi"))).toHaveLength(1);
    expect(saved.steps.every((s) => !s.startsWith("delete "))).toBe(true);
    const before = await creates();
    // The tenant asks for one more before the operator approves: the approved preview no longer matches the plan.
    await probe.setCount(0, 20);
    expect("saved" in (await app.approve(ref, saved.id.slice(0, 12)))).toBe(true);
    for (let i = 1; i <= 2; i++) expect((await reconcile(`diverged ${i}`))?.action).toBe("paused");
    expect(await creates()).toBe(before);
    const diverged = await condition();
    expect(diverged).toMatchObject({ status: "True", reason: "PlanDiverged" });
    expect(diverged?.message).toContain("planned but not saved: create/create/compute/");
    // Back to what was saved and approved: the update makes exactly the saved steps, then the preview is spent.
    await probe.setCount(0, 19);
    const r = await reconcile("as saved");
    expect(r?.action).toBe("up");
    expect(await creates()).toBe(before + 1);
    expect(await condition()).toMatchObject({ status: "False", reason: "Applied" });
    const annotations = (await probe.order())?.metadata.annotations ?? {};
    expect(annotations["osac.openshift.io/saved-preview"]).toBeUndefined();
    expect(annotations["osac.openshift.io/approved-plan"]).toBeUndefined();
    await drive("after the saved preview", 19);
  });

  it("a hub-wide cap of 2 creates in flight is shared by the hub's orders: one order's creates wait for another's", async () => {
    const stateDir = `${t.stateDir}-hub`;
    // The hub this reconciler counts is its namespace (BMW_HUB_NAMESPACES). Another reconciler's order, in
    // another namespace, with three creates in flight, must not count: counted, it left no budget at all.
    const elsewhere = { namespace: await t.lab.createNamespace(`other-${Date.now().toString(36)}`), name: "not-ours" };
    await t.lab.createSampleOrder({ ...elsewhere, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 3, instanceType: "compute" }] });
    await app.kube.applyClusterOrderStatus(elsewhere, { workers: ["x1", "x2", "x3"].map((n) => ({
      name: n, nodeSet: "compute", kind: "BareMetalInstance", phase: "Provisioning", bmiCreateState: "Attempted", attemptCount: 1,
      bareMetalInstance: { name: `not-ours-${n}` } })) } as never);
    const ns = await t.lab.createNamespace(`hub-${Date.now().toString(36)}`);
    const hubApp = new App({ env: { ...productEnv(t.lab, stateDir, { BMW_HUB_MAX_CREATES_IN_FLIGHT: "2", BMW_HUB_NAMESPACES: ns }),
      ...PROGRAM_PROCESS_IN_JEST }, stateDir });
    const orders = [{ namespace: ns, name: "hub-a" }, { namespace: ns, name: "hub-b" }];
    for (const o of orders) await t.lab.createSampleOrder({ ...o, nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }] });
    const workers = async (o: { namespace: string; name: string }) => (await hubApp.kube.getClusterOrder(o.namespace, o.name))?.status?.workers ?? [];
    const inFlight = async () => (await Promise.all(orders.map(workers))).flat().filter((w) => IN_FLIGHT.has(w.phase) && w.bareMetalInstance).length;
    let peak = 0;
    let waited = 0;
    try {
      for (let pass = 1; pass <= 30; pass++) {
        for (const o of orders) {
          // What the preview shows (the world's count) is what the reconcile then does (the ledger's).
          const planned = await hubApp.currentPlan(o);
          const r = await hubApp.reconcile(o);
          note(`hub pass ${pass} ${o.name}: ${r.action}, creates waiting ${planned.createsDeferred ?? 0}`);
          if (planned.createsDeferred) {
            waited++;
            expect(r.plan?.createsDeferred).toBe(planned.createsDeferred);
          }
          peak = Math.max(peak, await inFlight());
        }
        const all = (await Promise.all(orders.map(workers))).flat();
        if (all.length === 4 && all.every((w) => w.phase === "Ready")) break;
        await sleep(1_000);
      }
      expect((await Promise.all(orders.map(workers))).flat().map((w) => w.phase)).toEqual(["Ready", "Ready", "Ready", "Ready"]);
      expect(peak).toBeLessThanOrEqual(2);
      expect(waited).toBeGreaterThan(0);
    } finally {
      hubApp.close();
    }
  });
});
