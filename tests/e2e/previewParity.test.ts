// Preview parity on the lab (issue 17, point 1): every reconcile of an order's life is preceded by
// `baremetal-workers preview` (App.preview: `pulumi preview --refresh` of the on-disk program, as an
// admin runs it), and the preview is held to what the reconcile then did (tests/support/parity.ts): the
// same (URN, operation) steps, or no change when it ran no update. The life: a new order with two node
// sets to Ready, a scale-up, a security-group edit of the Ready order, a scale-down through CAPI's
// unbinding, a worker whose host allocation fails and is retried, a periodic refresh, and a BMI deleted on
// the service behind the stack's back. On the way, the operator's levers of the same issue (point 6): a
// rollback pin that says what it ignores, and retry-now cutting a 10-minute backoff short.
import * as k8s from "@kubernetes/client-node";
import { App } from "../../controller/app";
import type { ReconcileResult } from "../../controller/reconcileDeps";
import { Filter, withInstanceType, type BareMetalInstance, type FulfillmentClient } from "../../clients/fulfillment";
import type { PreviewResult } from "../../stack/operations";
import { startTestLab, type TestLab } from "../support/labEnv";
import { OrderProbe } from "../support/orderWatch";
import { PreviewParity } from "../support/parity";
import { assertNoBmiReplace } from "../support/previewCheck";

jest.setTimeout(900_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const GVP = { group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders" };

describe("a preview is what the next update does", () => {
  let t: TestLab;
  let app: App;
  let f: FulfillmentClient;
  let probe: OrderProbe;
  let uid = "";
  const ref = { namespace: "", name: "parity-co" };
  const parity = new PreviewParity();
  /** Previews that showed a Ready or Binding worker's BMI deleted or any BMI replaced. */
  const unsafe: string[] = [];
  const note = (s: string) => process.stdout.write(`[parity] ${s}\n`);

  beforeAll(async () => {
    t = await startTestLab("parity");
    ref.namespace = await t.lab.createNamespace(`parity-${Date.now().toString(36)}`);
    // The product's default program mode (inline): the loop's update planned from the handed-off observation,
    // the preview from its own. No step of this life makes the program fail (tests/support/env.ts says why
    // that matters in jest). A backoff long enough that only retry-now can end it within the test.
    app = new App({ env: { ...t.env, BMW_REFRESH_INTERVAL_MS: "0",
      BMW_RESOURCE_BACKOFF_MS: "600000", BMW_RESOURCE_BACKOFF_CAP_MS: "600000" }, stateDir: t.stateDir });
    f = t.lab.fulfillmentClient();
    probe = new OrderProbe(t.lab.kubeConfig(), ref.namespace, ref.name, f);
  });

  afterAll(async () => {
    note(parity.summary());
    app?.close();
    f?.close();
    await t?.stop();
  });

  /** One case: preview (checked for host safety too), then the reconcile it is held to. */
  async function previewThenReconcile(what: string): Promise<ReconcileResult | undefined> {
    let preview: PreviewResult | undefined;
    try {
      preview = await app.preview(ref);
    } catch (e) {
      note(`${what}: preview failed: ${String((e as Error).message).split("\n").find((l) => /error:/i.test(l)) ?? ""}`);
    }
    if (preview) {
      try {
        assertNoBmiReplace({ steps: preview.steps }, { expectedDeletes: await deletable() });
      } catch (e) {
        unsafe.push(`${what}: ${(e as Error).message.split("\n")[0]}`);
      }
    }
    let result: ReconcileResult | undefined;
    try {
      result = await app.reconcile(ref);
    } catch (e) {
      note(`${what}: reconcile failed: ${String((e as Error).message).slice(0, 200)}`);
    }
    note(`${what}: ${result?.action ?? "failed"}${result?.up ? ` ${JSON.stringify(result.up.changes)}` : ""} — ${parity.record(what, preview, result)}`);
    return result;
  }

  /** BMIs whose delete is expected: those of workers no longer Ready or Binding (released by CAPI, retired). */
  async function deletable(): Promise<string[]> {
    const ws = (await probe.order())?.status?.workers ?? [];
    return ws.filter((w) => w.phase !== "Ready" && w.phase !== "Binding").map((w) => w.bareMetalInstance?.name ?? "").filter(Boolean);
  }

  /** Previewed reconciles until `n` workers are Ready and a reconcile had nothing to do. */
  async function drive(what: string, n: number, max = 25): Promise<void> {
    for (let i = 1; i <= max; i++) {
      const r = await previewThenReconcile(`${what} ${i}`);
      const o = await probe.order();
      const ws = o?.status?.workers ?? [];
      if (r?.action === "skipped" && ws.length === n && ws.every((w) => w.phase === "Ready")) return;
      await sleep(1_000); // the lab's controllers move on: Agents register, bind, CAPI releases hosts
    }
    throw new Error(`${what}: not Ready with ${n} workers: ${JSON.stringify((await probe.order())?.status?.workers?.map((w) => `${w.name}:${w.phase}`))}`);
  }

  it("a new order with two node sets, to Ready", async () => {
    uid = (await t.lab.createSampleOrder({ ...ref,
      nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }, { nodeSet: "gpu", numberOfNodes: 1, instanceType: "gpu" }] })).uid;
    await drive("create", 3);
  });

  it("a scale-up", async () => {
    await probe.setCount(0, 3);
    await drive("scale-up", 4);
  });

  it("a rollback pins the counts of an earlier update, says so on the order and keeps reporting the request; unpin follows it again", async () => {
    const first = (await app.history(ref)).filter((e) => e.kind === "update" && e.message.startsWith("desired compute=2,gpu=1")).at(-1)!;
    const { pin } = await app.rollback(ref, first.number);
    expect(pin).toEqual({ compute: 2, gpu: 1 });
    await drive("pinned", 3);
    const pinned = (await probe.order())!;
    expect(pinned.status?.desiredWorkers).toBe(4); // the tenant still asks for 3 + 1
    const c = pinned.status?.conditions?.find((x) => x.type === "Pinned");
    expect(c).toMatchObject({ status: "True", reason: "RolledBack" });
    expect(c?.message).toContain(`update ${first.number} (compute=2, gpu=1)`);
    expect(c?.message).toContain("the requested compute=3 is ignored");
    await app.unpin(ref);
    await drive("unpinned", 4);
    expect((await probe.order())?.status?.conditions?.find((x) => x.type === "Pinned")).toMatchObject({ status: "False", reason: "FollowsRequest" });
  });

  it("a security-group edit of the Ready order changes no host", async () => {
    const api = t.lab.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
    await api.patchNamespacedCustomObject({ ...GVP, ...ref, body: [{ op: "replace", path: "/spec/networkAttachment/securityGroupRefs", value: ["acme-extra-sg"] }] },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch));
    const before = (await probe.bmis(uid)).map((b) => b.id).sort();
    await drive("security groups", 4);
    expect((await probe.bmis(uid)).map((b) => b.id).sort()).toEqual(before);
  });

  it("a scale-down through CAPI's unbinding", async () => {
    await probe.setCount(0, 2);
    await drive("scale-down", 3);
  });

  it("a worker whose host allocation fails, retried with backoff", async () => {
    const catalogItem = (await f.catalogItems.listAll(Filter.nameEquals("system-bmi-passthrough")))[0].id;
    const blockers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const b = await f.bareMetalInstances.create(withInstanceType({
        metadata: { name: `parity-blocker-${i}`, tenant: "system", labels: { "e2e/blocker": "true" } },
        spec: { catalog_item: { id: catalogItem }, user_data: "{}",
          network_attachments: [{ subnet: { id: "acme-workers-subnet" }, interface: "ens2f0", primary: true }] },
      } as BareMetalInstance, "gpu"));
      blockers.push(b.id);
    }
    await probe.setCount(1, 2);
    for (let i = 1; i <= 20; i++) {
      await previewThenReconcile(`host allocation fails ${i}`);
      if ((await probe.order())?.status?.workers?.some((w) => w.phase === "Failed")) break;
      await sleep(1_000);
    }
    const failed = (await probe.order())!;
    expect(failed.status?.workers?.some((w) => w.phase === "Failed")).toBe(true);
    // The order names the earliest next retry, 10 min away; freeing a host alone changes nothing before then.
    const waiting = failed.status?.conditions?.find((x) => x.type === "WorkersFailed")?.message ?? "";
    const next = /earliest next retry (\S+)/.exec(waiting)?.[1];
    expect(Date.parse(next ?? "") - Date.now()).toBeGreaterThan(8 * 60_000);
    await f.bareMetalInstances.delete(blockers[0]);
    // The failed BMI is deleted; then nothing happens while the backoff runs.
    for (let i = 1, last = ""; last !== "skipped"; i++) {
      const r = await previewThenReconcile(`host freed, backoff running ${i}`);
      expect(r?.up?.changes.create ?? 0).toBe(0);
      expect(i).toBeLessThan(8);
      last = r?.action ?? "";
      await sleep(1_000);
    }
    await probe.annotate("osac.openshift.io/retry-now", new Date().toISOString());
    const retried = await previewThenReconcile("retry now");
    expect(retried?.up?.changes.create).toBeGreaterThan(0); // the new incarnation, at once
    await drive("retry", 4);
    const events = await t.lab.kubeConfig().makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: ref.namespace });
    expect(events.items.some((e) => e.reason === "RetryNow" && /retried at once/.test(e.message ?? ""))).toBe(true);
    for (const id of blockers.slice(1)) await f.bareMetalInstances.delete(id);
  });

  it("a periodic refresh of the converged stack", async () => {
    const mem = app.memory.get(`${ref.namespace}/${ref.name}`);
    if (mem) mem.lastFingerprint = "the periodic refresh is due";
    const r = await previewThenReconcile("refresh due");
    expect(r?.action).toBe("up");
  });

  it("a BMI deleted on the service behind the stack's back: the preview reads it gone, as the update does", async () => {
    // Without a refresh the preview would take the stack's record of the BMI for the BMI and show its delete.
    const victim = (await probe.order())!.status!.workers!.find((w) => w.nodeSet === "compute")!;
    await f.bareMetalInstances.delete(victim.bareMetalInstance!.id!);
    const first = await previewThenReconcile("deleted out of band 1");
    expect(first?.action).toBe("up");
    await sleep(1_000);
    await previewThenReconcile("deleted out of band 2");
  });

  it("matched every compared case", () => {
    note(parity.summary());
    expect(parity.mismatches).toEqual([]);
    expect(unsafe).toEqual([]);
    // The corpus must have compared something of each kind: updates that changed hosts, and ones that did not.
    expect(parity.cases).toBeGreaterThanOrEqual(12);
    expect(parity.withChanges).toBeGreaterThanOrEqual(6);
  });
});
