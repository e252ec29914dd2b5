// The metrics exposition: the design's five metrics carry only `tenant` and `worker_type`, gauges are
// per-tenant sums of the orders' counts (no per-order series), vanished tenants disappear, and the
// HTTP endpoints serve them along with liveness and readiness.
import { Heartbeat, allOf, electionCheck, startHealthServer } from "../../controller/health";
import { aggregateByTenant, ReconcilerMetrics } from "../../controller/metrics";
import { samples } from "../support/metrics";

const DESIGN_METRICS = [
  "osac_clusterorder_workers_desired",
  "osac_clusterorder_workers_ready",
  "osac_clusterorder_workers_failed",
  "osac_clusterorder_worker_provisioning_duration_seconds",
  "osac_clusterorder_worker_agent_correlation_duration_seconds",
];

describe("ReconcilerMetrics", () => {
  it("exposes the design's five metrics with only tenant and worker_type labels, summed per tenant", async () => {
    const m = new ReconcilerMetrics({ defaultMetrics: false });
    m.setWorkerGauges([
      { tenant: "acme", desired: 3, ready: 2, failed: 1 },
      { tenant: "acme", desired: 2, ready: 2, failed: 0 },
      { tenant: "globex", desired: 4, ready: 1, failed: 2 },
    ]);
    m.observeProvisioning("acme", 620);
    m.observeAgentCorrelation("globex", 42);
    m.countUp("succeeded");
    m.countSkipped();
    m.countFulfillmentCall("CreateBareMetalInstance", "OK");
    const done = m.startReconcile();
    done("success");

    const all = samples(await m.render());
    for (const name of DESIGN_METRICS) expect(all.some((s) => s.name.startsWith(name))).toBe(true);
    const design = all.filter((s) => DESIGN_METRICS.some((n) => s.name.startsWith(n)));
    for (const s of design) {
      const allowed = s.name.endsWith("_bucket") ? ["le", "tenant", "worker_type"] : ["tenant", "worker_type"];
      expect(Object.keys(s.labels).sort()).toEqual(allowed);
      expect(s.labels.worker_type).toBe("bare_metal");
    }
    const gauge = (name: string, tenant: string) => all.find((s) => s.name === name && s.labels.tenant === tenant)?.value;
    expect(gauge("osac_clusterorder_workers_desired", "acme")).toBe(5);
    expect(gauge("osac_clusterorder_workers_ready", "acme")).toBe(4);
    expect(gauge("osac_clusterorder_workers_failed", "acme")).toBe(1);
    expect(gauge("osac_clusterorder_workers_failed", "globex")).toBe(2);
    expect(all.find((s) => s.name === "osac_clusterorder_worker_provisioning_duration_seconds_count")?.value).toBe(1);
    expect(all.find((s) => s.name === "osac_clusterorder_worker_provisioning_duration_seconds_bucket" && s.labels.le === "900")?.value).toBe(1);
    expect(all.find((s) => s.name === "osac_clusterorder_worker_provisioning_duration_seconds_bucket" && s.labels.le === "600")?.value).toBe(0);

    // our own metrics: bounded label sets, never an order name
    expect(all.find((s) => s.name === "bmw_pulumi_ups_total")).toMatchObject({ labels: { result: "succeeded" }, value: 1 });
    expect(all.find((s) => s.name === "bmw_reconcile_skipped_unchanged_total")?.value).toBe(1);
    expect(all.find((s) => s.name === "bmw_fulfillment_calls_total")).toMatchObject({
      labels: { method: "CreateBareMetalInstance", code: "OK" }, value: 1 });
    expect(all.find((s) => s.name === "bmw_reconcile_duration_seconds_count")).toMatchObject({ labels: { result: "success" }, value: 1 });
  });

  it("drops tenants whose orders are gone instead of keeping stale values", async () => {
    const m = new ReconcilerMetrics({ defaultMetrics: false });
    m.setWorkerGauges([{ tenant: "acme", desired: 1, ready: 1, failed: 0 }, { tenant: "old", desired: 2, ready: 0, failed: 2 }]);
    m.setWorkerGauges([{ tenant: "acme", desired: 2, ready: 1, failed: 0 }]);
    const failed = samples(await m.render()).filter((s) => s.name === "osac_clusterorder_workers_failed");
    expect(failed).toEqual([{ name: "osac_clusterorder_workers_failed", labels: { tenant: "acme", worker_type: "bare_metal" }, value: 0 }]);
    expect([...aggregateByTenant([]).keys()]).toEqual([]);
  });

  it("includes Node.js process metrics under the bmw_ prefix by default, still without extra labels on osac_ metrics", async () => {
    const m = new ReconcilerMetrics();
    const text = await m.render();
    expect(text).toMatch(/^bmw_process_cpu_user_seconds_total /m);
    expect(text).not.toMatch(/^osac_\w+\{[^}]*\b(?!tenant|worker_type|le)\w+=/m);
  });

  it("counts settled checks by outcome, and its running totals are read at once (a pass's figures cannot take in later work)", async () => {
    const m = new ReconcilerMetrics({ defaultMetrics: false });
    const before = m.totals();
    m.countSettledCheck("settled");
    m.countSettledCheck("settled");
    m.countSettledCheck("bmis-changed");
    m.countFulfillmentCall("BareMetalInstances/List", "OK");
    m.countUp("succeeded");
    m.countSkipped();
    expect(before).toEqual({ ups: 0, skipped: 0, settled: 0, fulfillmentCalls: 0 });
    expect(m.totals()).toEqual({ ups: 1, skipped: 1, settled: 2, fulfillmentCalls: 1 });
    const lines = await m.render();
    expect(lines).toContain('bmw_settled_checks_total{outcome="settled"} 2');
    expect(lines).toContain('bmw_settled_checks_total{outcome="bmis-changed"} 1');
  });

  it("per shard: which shard Leases are held, and the reconciles and ups of each shard's orders, with only a shard label beside the result", async () => {
    const m = new ReconcilerMetrics({ defaultMetrics: false });
    m.setShardsHeld(4, [1, 3]);
    m.startReconcile()("success", { shard: 1, up: true });
    m.startReconcile()("skipped", { shard: 1, up: false });
    m.startReconcile()("error", { shard: 3 });
    m.startReconcile()("success", { up: true }); // not sharded: no shard series
    m.setShardsHeld(4, [3]);
    const s = samples(await m.render()).filter((x) => x.name.startsWith("bmw_shard_"));
    const value = (name: string, labels: Record<string, string>) => s.find((x) => x.name === name && JSON.stringify(x.labels) === JSON.stringify(labels))?.value;
    expect([0, 1, 2, 3].map((i) => value("bmw_shard_held", { shard: String(i) }))).toEqual([0, 0, 0, 1]);
    expect(value("bmw_shard_reconciles_total", { shard: "1", result: "success" })).toBe(1);
    expect(value("bmw_shard_reconciles_total", { shard: "1", result: "skipped" })).toBe(1);
    expect(value("bmw_shard_reconciles_total", { shard: "3", result: "error" })).toBe(1);
    expect(value("bmw_shard_pulumi_ups_total", { shard: "1" })).toBe(1);
    expect(value("bmw_shard_pulumi_ups_total", { shard: "3" })).toBeUndefined();
    expect(new Set(s.flatMap((x) => Object.keys(x.labels)))).toEqual(new Set(["shard", "result"]));
  });

  it("counts the C heap's trims: their durations and the resident memory they returned", async () => {
    const m = new ReconcilerMetrics({ defaultMetrics: false });
    m.observeTrim({ releasedBytes: 3 * 1048576, durationMs: 4 });
    m.observeTrim({ releasedBytes: 0, durationMs: 30 });
    const lines = await m.render();
    expect(lines).toContain(`bmw_memory_trim_released_bytes_total ${3 * 1048576}`);
    expect(lines).toContain("bmw_memory_trim_duration_seconds_count 2");
    expect(lines).toContain('bmw_memory_trim_duration_seconds_bucket{le="0.005"} 1');
  });

  it("splits the resident memory at each scrape: the C heap in use, free and mmapped; anonymous pages and mapped files", async () => {
    const m = new ReconcilerMetrics({ defaultMetrics: false });
    const text = await m.render();
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, "\\$&")} (\\d+)$`, "m").exec(text)?.[1] ?? NaN);
    const glibc = Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);
    if (glibc) {
      expect(value('bmw_memory_c_heap_bytes{state="in_use"}')).toBeGreaterThan(1048576);
      expect(value('bmw_memory_c_heap_bytes{state="free"}')).toBeGreaterThanOrEqual(0);
      expect(value('bmw_memory_c_heap_bytes{state="mmapped"}')).toBeGreaterThanOrEqual(0);
    }
    const anonymous = value('bmw_memory_resident_bytes{kind="anonymous"}');
    const file = value('bmw_memory_resident_bytes{kind="file"}');
    expect(anonymous).toBeGreaterThan(10 * 1048576);
    expect(file).toBeGreaterThan(10 * 1048576);
    expect(Math.abs(anonymous + file - process.memoryUsage.rss())).toBeLessThan(64 * 1048576);
  });

  it("counts the BMI cache's events by a short type and says whether it is synced", async () => {
    const m = new ReconcilerMetrics({ defaultMetrics: false });
    m.countBmiCacheEvent("EVENT_TYPE_OBJECT_UPDATED");
    m.countBmiCacheEvent("EVENT_TYPE_OBJECT_UPDATED");
    m.countBmiCacheEvent("EVENT_TYPE_OBJECT_DELETED");
    m.bmiCacheSynced.set(1);
    const lines = await m.render();
    expect(lines).toContain('bmw_bmi_cache_events_total{type="updated"} 2');
    expect(lines).toContain('bmw_bmi_cache_events_total{type="deleted"} 1');
    expect(lines).toContain("bmw_bmi_cache_synced 1");
  });

  it("reports the pulumi slots as they are when scraped", async () => {
    const slots = { inUse: 2, waiting: 5 };
    const m = new ReconcilerMetrics({ defaultMetrics: false, updateSlots: slots });
    expect(await m.render()).toContain('bmw_pulumi_update_slots{state="waiting"} 5');
    slots.inUse = 4;
    expect(await m.render()).toContain('bmw_pulumi_update_slots{state="running"} 4');
  });
});

describe("health server", () => {
  it("serves /metrics, /healthz from the loop heartbeat and /readyz from the checks", async () => {
    const m = new ReconcilerMetrics({ defaultMetrics: false });
    m.setWorkerGauges([{ tenant: "acme", desired: 1, ready: 0, failed: 0 }]);
    let t = 1_000;
    const beat = new Heartbeat(5_000, () => t);
    let leader = false;
    let reachable = true;
    const srv = await startHealthServer({
      port: 0, metrics: m, liveness: () => beat.check(),
      readiness: async () => allOf({
        kube: { ok: reachable, detail: reachable ? "reachable" : "unreachable" },
        election: electionCheck({ isLeader: () => leader, healthy: () => reachable }),
      }),
    });
    const get = async (p: string) => {
      const r = await fetch(`http://127.0.0.1:${srv.port}${p}`);
      return { status: r.status, type: r.headers.get("content-type") ?? "", body: await r.text() };
    };
    try {
      expect(srv.host).toBe("127.0.0.1");
      const metrics = await get("/metrics");
      expect(metrics.status).toBe(200);
      expect(metrics.type).toContain("text/plain");
      expect(metrics.body).toContain('osac_clusterorder_workers_desired{tenant="acme",worker_type="bare_metal"} 1');

      expect(await get("/healthz")).toMatchObject({ status: 200, body: expect.stringContaining("loop ticked 0 ms ago") });
      t += 6_000; // the loop stopped ticking
      expect(await get("/healthz")).toMatchObject({ status: 503, body: expect.stringContaining("has not ticked for 6000 ms") });
      beat.beat();
      expect((await get("/healthz")).status).toBe(200);

      expect(await get("/readyz")).toMatchObject({ status: 200, body: expect.stringContaining("ok election: standby") });
      leader = true;
      expect((await get("/readyz")).body).toContain("ok election: leader");
      reachable = false;
      const notReady = await get("/readyz");
      expect(notReady.status).toBe(503);
      expect(notReady.body).toContain("FAIL kube: unreachable");
      expect((await get("/nope")).status).toBe(404);
    } finally {
      await srv.close();
    }
  });
});
