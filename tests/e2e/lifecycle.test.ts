// End to end on the lab (issue 6): the reconciler runs as its own process against the lab and takes a
// ClusterOrder with two node sets through create → Ready, scale-up, scale-down through unbinding, a
// failed host retried with backoff, the Unmanaged pause, preview, history and rollback, two reconcilers
// at once, kill -9 during an update, and deletion through the finalizer. After every step: no
// duplicate and no orphaned BMI.
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Filter, withInstanceType, type BareMetalInstance, type FulfillmentClient } from "../../clients/fulfillment";
import { FINALIZER, MANAGEMENT_STATE_ANNOTATION } from "../../planner/names";
import type { ClusterOrder } from "../../planner/types";
import { eventuallyPasses } from "../support/eventually";
import { startTestLab, type TestLab } from "../support/labEnv";
import { OrderProbe } from "../support/orderWatch";
import { assertSummaryKeepsHosts } from "../support/previewCheck";
import { cli, pulumiPids, startReconciler, type ReconcilerProcess } from "../support/reconciler";

jest.setTimeout(900_000);

/** The reconciler's JSON log lines. */
function logLines(file: string): Record<string, unknown>[] {
  return fs.readFileSync(file, "utf8").split("\n").flatMap((l) => {
    try {
      const v: unknown = JSON.parse(l);
      return v && typeof v === "object" ? [v as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

const ready = (o: ClusterOrder | undefined, n: number) =>
  o?.status?.readyWorkers === n && (o.status.workers ?? []).length === n && (o.status.workers ?? []).every((w) => w.phase === "Ready");

describe("the reconciler on the lab", () => {
  let t: TestLab;
  let f: FulfillmentClient;
  let probe: OrderProbe;
  let uid = "";
  let ns = "";
  const name = "e2e-co";
  const reconcilers: ReconcilerProcess[] = [];
  let env: NodeJS.ProcessEnv;

  const start = (id: string) => {
    const r = startReconciler(env, ["--interval", "5", "--namespace", ns, "--identity", id, "--lease-namespace", ns],
      path.join(t.lab.logsDir, `reconciler-${id}.log`));
    reconcilers.push(r);
    return r;
  };

  async function sound(): Promise<void> {
    const inv = await probe.invariants(uid);
    expect(inv.duplicates).toEqual([]);
    expect(inv.orphans).toEqual([]);
  }

  async function converge(n: number, timeoutMs = 240_000): Promise<ClusterOrder> {
    let last: ClusterOrder | undefined;
    await eventuallyPasses(async () => {
      last = await probe.order();
      expect(ready(last, n)).toBe(true);
      expect((await probe.invariants(uid)).live).toBe(n);
    }, timeoutMs, 1_000);
    await sound();
    return last!;
  }

  beforeAll(async () => {
    t = await startTestLab("e2e");
    env = { ...t.env, BMW_LOG_LEVEL: "info" };
    ns = await t.lab.createNamespace(`e2e-${Date.now().toString(36)}`);
    f = t.lab.fulfillmentClient();
    probe = new OrderProbe(t.lab.kubeConfig(), ns, name, f);
  });

  afterAll(async () => {
    for (const r of reconcilers) await r.stop();
    f?.close();
    await t?.stop();
  });

  it("creates a ClusterOrder's workers in two node sets and reaches Ready", async () => {
    const sample = await t.lab.createSampleOrder({ namespace: ns, name,
      nodeRequests: [{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }, { nodeSet: "gpu", numberOfNodes: 1, instanceType: "gpu" }] });
    uid = sample.uid;
    start("a");
    const o = await converge(3);
    expect(o.metadata.finalizers).toContain(FINALIZER);
    expect(o.status?.desiredWorkers).toBe(3);
    expect(o.status?.conditions?.find((c) => c.type === "InfraEnvReady")?.status).toBe("True");
    expect(new Set(o.status?.workers?.map((w) => w.nodeSet))).toEqual(new Set(["compute", "gpu"]));
  });

  it("a steady pass skips the settled order without a fulfillment call (the BMI cache follows the event stream); a BMI changed on the service ends that", async () => {
    const log = reconcilers[0].logFile;
    const passes = () => logLines(log).filter((l) => l.msg === "pass complete");
    const reconciled = () => logLines(log).filter((l) => l.msg === "reconciled" && l.order === `${ns}/${name}`).length;
    // Two passes after convergence: the order is settled in the second at the latest.
    const seen = passes().length;
    await eventuallyPasses(async () => {
      const settled = passes().slice(seen).filter((p) => p.settled === 1);
      expect(settled.length).toBeGreaterThanOrEqual(2);
      // A settled pass reads the order's BMIs from the cache the event stream keeps: no call (a reconcile a
      // watch event caused meanwhile, or the cache's first listing, may add calls to a pass, hence the least).
      expect(Math.min(...settled.map((p) => Number(p.fulfillmentCalls)))).toBe(0);
    }, 60_000, 1_000);
    const before = reconciled();
    const [bmi] = await probe.bmis(uid);
    await f.bareMetalInstances.update({ id: bmi.id, metadata: { ...bmi.metadata, labels: { ...bmi.metadata?.labels, "e2e.example/touched": "1" } } } as BareMetalInstance,
      { updateMask: ["metadata.labels"] });
    await eventuallyPasses(async () => expect(reconciled()).toBeGreaterThan(before), 30_000, 500);
    await sound();
  });

  it("a restarted reconciler finds the settled order settled from its stored record; an Agent changed while none ran is observed", async () => {
    const passes = (r: ReconcilerProcess) => logLines(r.logFile).filter((l) => l.msg === "pass complete");
    const firstPass = async (r: ReconcilerProcess) => {
      let lines: Record<string, unknown>[] = [];
      await eventuallyPasses(async () => {
        lines = logLines(r.logFile);
        expect(lines.some((l) => l.msg === "pass complete")).toBe(true);
      }, 120_000, 500);
      const end = lines.findIndex((l) => l.msg === "pass complete");
      return { pass: lines[end], reconciled: lines.slice(0, end).filter((l) => l.msg === "reconciled" && l.order === `${ns}/${name}`), lines };
    };
    // Settled again after the previous test's BMI change, then stopped.
    const a = reconcilers[0];
    const seen = passes(a).length;
    await eventuallyPasses(async () => expect(passes(a).slice(seen).some((p) => p.settled === 1)).toBe(true), 60_000, 1_000);
    await a.stop();

    const b = start("a-restarted");
    const one = await firstPass(b);
    expect(one.lines.find((l) => String(l.msg).startsWith("settled records restored"))).toMatchObject({ orders: 1 });
    // (A second tick before the pass ends checks it once more: "settled" counts checks.)
    expect(one.pass).toMatchObject({ orders: 1, skipped: 0, ups: 0 });
    expect(Number(one.pass.settled)).toBeGreaterThanOrEqual(1);
    expect(one.reconciled).toEqual([]); // not observed: no reconcile, only the hub-wide listings
    await b.stop();

    // While no reconciler runs, an Agent of the order changes: the stored record no longer holds.
    const [agent] = await probe.agents();
    await t.lab.kubeConfig().makeApiClient(k8s.CustomObjectsApi).patchNamespacedCustomObject({
      group: "agent-install.openshift.io", version: "v1beta1", plural: "agents", namespace: ns, name: agent,
      body: { metadata: { labels: { "e2e.example/touched": "1" } } },
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    const c = start("a-restarted-2");
    const two = await firstPass(c);
    expect(two.pass).toMatchObject({ orders: 1, ups: 0 });
    expect(two.reconciled[0]).toMatchObject({ action: "skipped" }); // observed in full, nothing to do
    await sound();
  });

  it("at its resync time the settled order is compared, not observed; its Cluster moved to another version is observed", async () => {
    for (const r of reconcilers) await r.stop();
    // A short resync; the later tests keep this reconciler (their orders move, so the resync costs them nothing).
    env = { ...env, BMW_RESYNC_INTERVAL_MS: "6000", BMW_LOG_LEVEL: "debug" };
    const r = start("a-resync");
    const key = `${ns}/${name}`;
    const checks = () => logLines(r.logFile).filter((l) => l.msg === "settled check" && l.order === key).map((l) => String(l.outcome));
    const reconciledSince = (i: number) => {
      const lines = logLines(r.logFile);
      const from = lines.filter((l) => l.msg === "settled check" && l.order === key)[i];
      return lines.slice(lines.indexOf(from)).filter((l) => l.msg === "reconciled" && l.order === key).length;
    };
    // Settled, then compared at least twice at its resync time with nothing observed in between.
    const firstHit = () => checks().findIndex((o) => o === "settled" || o === "resynced");
    await eventuallyPasses(async () => {
      const c = checks();
      expect({ resynced: c.slice(Math.max(0, firstHit())).filter((o) => o === "resynced").length >= 2, outcomes: c })
        .toMatchObject({ resynced: true });
    }, 90_000, 1_000);
    expect(reconciledSince(firstHit())).toBe(0);

    // Its fulfillment Cluster moves to a ClusterVersion that does not exist: no watch sees it; the resync does.
    const clusterId = (await probe.order())!.metadata.labels?.["osac.openshift.io/clusterorder-uuid"];
    expect(clusterId).toBeTruthy();
    const cluster = await f.clusters.get(clusterId!);
    const moveTo = (version: { id?: string; name?: string }) => f.clusters.update({ id: clusterId!, spec: { version } } as never,
      { updateMask: ["spec.version"] });
    const atMove = checks().length;
    await moveTo({ id: "cv-e2e-missing" });
    try {
      await eventuallyPasses(async () => {
        expect(checks().slice(atMove)).toContain("unwatched-changed");
        expect((await probe.order())!.status?.conditions?.find((c) => c.type === "RHCOSImageNotFound")).toMatchObject({ status: "True" });
      }, 60_000, 1_000);
    } finally {
      await moveTo(cluster.spec?.version ?? {});
    }
    await eventuallyPasses(async () => {
      expect((await probe.order())!.status?.conditions?.find((c) => c.type === "RHCOSImageNotFound")).toMatchObject({ status: "False" });
    }, 60_000, 1_000);
    await sound();
  });

  it("scales up", async () => {
    await probe.setCount(0, 3);
    await converge(4);
  });

  it("scales down through CAPI's unbinding: the unbound worker's Agent and BMI are deleted", async () => {
    const before = (await probe.order())!.status!.workers!.map((w) => w.bareMetalInstance!.name);
    await probe.setCount(0, 2);
    const after = await converge(3);
    const kept = after.status!.workers!.map((w) => w.bareMetalInstance!.name);
    expect(kept.every((b) => before.includes(b))).toBe(true); // no healthy worker was replaced
    const gone = before.filter((b) => !kept.includes(b));
    expect(gone).toHaveLength(1);
    await eventuallyPasses(async () => {
      const all = await probe.bmis(uid);
      expect(all.map((b) => b.metadata?.name)).not.toContain(gone[0]);
    }, 60_000);
  });

  it("retries a worker whose host allocation failed, with backoff, until it is Ready", async () => {
    // Occupy every free gpu host, then ask for a second gpu worker: its BMI fails with no host.
    const blockers: string[] = [];
    const catalogItem = (await f.catalogItems.listAll(Filter.nameEquals("system-bmi-passthrough")))[0].id;
    for (let i = 0; i < 3; i++) {
      const blocker: BareMetalInstance = withInstanceType({
        metadata: { name: `blocker-${i}`, tenant: "system", labels: { "e2e/blocker": "true" } },
        spec: { catalog_item: { id: catalogItem }, user_data: "{}",
          network_attachments: [{ subnet: { id: "acme-workers-subnet" }, interface: "ens2f0", primary: true }] },
      }, "gpu");
      const b = await f.bareMetalInstances.create(blocker);
      blockers.push(b.id);
    }
    await probe.setCount(1, 2);
    await eventuallyPasses(async () => {
      const o = await probe.order();
      const failed = o?.status?.workers?.find((w) => w.phase === "Failed");
      expect(failed?.lastFailureReason).toBeDefined();
      expect(failed?.nextRetryTime).toBeDefined();
      expect(o?.status?.conditions?.find((c) => c.type === "WorkersFailed")?.status).toBe("True");
    }, 120_000, 1_000);
    await sound();
    await f.bareMetalInstances.delete(blockers[0]);
    const o = await converge(4);
    const retried = o.status!.workers!.filter((w) => w.nodeSet === "gpu").map((w) => w.attemptCount ?? 0);
    expect(Math.max(...retried)).toBeGreaterThanOrEqual(2);
    await eventuallyPasses(async () => {
      const c = (await probe.order())?.status?.conditions?.find((x) => x.type === "WorkersFailed");
      expect(c?.status).toBe("False");
    }, 30_000);
    for (const id of blockers.slice(1)) await f.bareMetalInstances.delete(id);
  });

  it("pauses on the Unmanaged annotation: nothing changes, preview shows no change, then it resumes", async () => {
    await probe.annotate(MANAGEMENT_STATE_ANNOTATION, "unmanaged");
    try {
      await eventuallyPasses(async () => {
        const c = (await probe.order())?.status?.conditions?.find((x) => x.type === "Managed");
        expect(c?.status).toBe("False");
      }, 30_000);
      await probe.setCount(0, 3);
      await new Promise((r) => setTimeout(r, 12_000)); // two timer ticks and the watch event
      expect((await probe.invariants(uid)).live).toBe(4);
      // The loop would do nothing, and the preview of the stack says exactly that.
      const p = await cli(env, ["preview", `${ns}/${name}`, "--output", "json"]);
      expect(p.code).toBe(0);
      const { changes: summary } = JSON.parse(p.stdout.trim().split("\n").pop()!) as { changes: Record<string, number> };
      assertSummaryKeepsHosts(summary);
      expect(summary.create ?? 0).toBe(0);
      expect(summary.delete ?? 0).toBe(0);
      expect(summary.update ?? 0).toBe(0);
    } finally {
      await probe.annotate(MANAGEMENT_STATE_ANNOTATION, null);
    }
    await converge(5);
  });

  it("lists the stack's history with our summaries and rolls back to an earlier desired set", async () => {
    const h = await cli(env, ["history", `${ns}/${name}`, "--output", "json"]);
    expect(h.code).toBe(0);
    const entries = JSON.parse(h.stdout.trim().split("\n").pop()!) as { number: number; message: string; kind: string }[];
    expect(entries.length).toBeGreaterThanOrEqual(4);
    expect(entries.map((e) => e.number).sort((a, b) => a - b)).toEqual(entries.map((_, i) => i + 1));
    const target = entries.filter((e) => e.kind === "update" && e.message.startsWith("desired compute=2,gpu=2;")).pop();
    expect(target).toBeDefined();
    const rb = await cli(env, ["rollback", `${ns}/${name}`, "--to", String(target!.number), "--quiet"]);
    if (rb.code !== 0) await cli(env, ["unpin", `${ns}/${name}`, "--quiet"]);
    expect({ code: rb.code, stderr: rb.stderr.slice(-2000) }).toMatchObject({ code: 0 });
    expect(rb.stdout).toContain("compute=2, gpu=2");
    await converge(4);
    const bad = await cli(env, ["rollback", `${ns}/${name}`, "--to", "9999"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("does not exist");
    expect((await cli(env, ["unpin", `${ns}/${name}`, "--quiet"])).code).toBe(0);
    await converge(5);
    const st = await cli(env, ["status", `${ns}/${name}`]);
    expect(st.stdout).toMatch(/WORKER\s+NODESET\s+PHASE/);
  });

  it("runs two reconcilers at once without duplicating anything (one leads)", async () => {
    start("b");
    await probe.setCount(0, 4);
    await converge(6);
  });

  it("converges after kill -9 of the leader during an update", async () => {
    await probe.setCount(0, 5);
    let killed = false;
    await eventuallyPasses(async () => {
      for (const r of reconcilers.filter((x) => !x.exited())) {
        if (pulumiPids(r.pid).length > 0) {
          r.kill9();
          killed = true;
        }
      }
      expect(killed).toBe(true);
    }, 120_000, 100);
    start("c");
    await converge(7, 300_000);
  });

  it("deletes the ClusterOrder through the finalizer: every BMI gone first, every worker Deleting, WorkerDeleted each", async () => {
    const names = ((await probe.order())?.status?.workers ?? []).map((w) => w.bareMetalInstance?.name).filter((n): n is string => !!n);
    expect(names.length).toBeGreaterThan(0);
    await probe.delete();
    let sawDeleting = false;
    await eventuallyPasses(async () => {
      const o = await probe.order();
      if (o?.status?.workers?.length && o.status.workers.every((w) => w.phase === "Deleting")) sawDeleting = true;
      expect(o).toBeUndefined();
    }, 240_000, 250);
    expect(sawDeleting).toBe(true);
    // The finalizer waited until each BMI was really gone, not merely being deleted.
    expect(await probe.bmis(uid)).toEqual([]);
    const events = await t.lab.kubeConfig().makeApiClient(k8s.CustomObjectsApi)
      .listNamespacedCustomObject({ group: "events.k8s.io", version: "v1", plural: "events", namespace: ns }) as { items: { reason?: string; note?: string }[] };
    const deleted = events.items.filter((e) => e.reason === "WorkerDeleted").map((e) => e.note ?? "");
    for (const n of names) expect(deleted.some((d) => d.includes(n))).toBe(true);
  });
});
