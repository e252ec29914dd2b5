// Prometheus metrics of the reconciler. The design's five metrics (OSAC-2135 §3.5) carry exactly two
// labels, `tenant` and `worker_type` (always "bare_metal"): no per-ClusterOrder label, so cardinality
// stays bounded by the number of tenants. Our own reconciler metrics use only small fixed label sets.
// Each instance owns its registry, so several reconcilers (or tests) in one process never collide.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { cHeapInfo, residentParts } from "../lib/nativeHeap";

export const WORKER_TYPE = "bare_metal";

/** Label names the design allows on its five metrics. */
export const DESIGN_LABELS = ["tenant", "worker_type"] as const;
type DesignLabel = (typeof DESIGN_LABELS)[number];

/** Per-ClusterOrder worker counts, as reported in its status; aggregated per tenant before export. */
export interface OrderWorkerCounts {
  tenant: string;
  desired: number;
  ready: number;
  failed: number;
}

export type ReconcileResult = "success" | "error" | "skipped";
export type UpResult = "succeeded" | "failed";

export interface MetricsOptions {
  /** Add Node.js process metrics (prefixed bmw_process_/bmw_nodejs_). Default true. */
  defaultMetrics?: boolean;
  /** The loop's pulumi slots, read when /metrics is scraped. */
  updateSlots?: { inUse: number; waiting: number };
  /** Size of the stack state directory, read when /metrics is scraped; undefined when unknown (a remote backend). */
  stateBytes?: () => Promise<number> | number | undefined;
}

// Provisioning spans minutes to an hour (BMI boot + discovery + install); correlation seconds to minutes.
const PROVISIONING_BUCKETS = [60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200];
const CORRELATION_BUCKETS = [5, 15, 30, 60, 120, 300, 600, 900, 1800];
const RECONCILE_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** The design's five metrics: worker counts and provisioning durations per tenant. */
function designMetrics(registers: Registry[]) {
  const labelNames = [...DESIGN_LABELS];
  return {
    workersDesired: new Gauge({
      name: "osac_clusterorder_workers_desired", help: "Bare-metal workers requested by ClusterOrders, per tenant.",
      labelNames, registers,
    }),
    workersReady: new Gauge({
      name: "osac_clusterorder_workers_ready", help: "Bare-metal workers in phase Ready, per tenant.", labelNames, registers,
    }),
    workersFailed: new Gauge({
      name: "osac_clusterorder_workers_failed", help: "Bare-metal workers in phase Failed, per tenant.", labelNames, registers,
    }),
    provisioningDuration: new Histogram({
      name: "osac_clusterorder_worker_provisioning_duration_seconds",
      help: "Time from worker creation to joining its NodePool.", labelNames, buckets: PROVISIONING_BUCKETS, registers,
    }),
    agentCorrelationDuration: new Histogram({
      name: "osac_clusterorder_worker_agent_correlation_duration_seconds",
      help: "Time from a BareMetalInstance running to its Agent matched by MAC.", labelNames,
      buckets: CORRELATION_BUCKETS, registers,
    }),
  };
}

/** The loop's work: reconciles, pulumi ups, skipped reconciles, fulfillment calls and full passes. */
function loopMetrics(registers: Registry[]) {
  return {
    reconcileDuration: new Histogram({
      name: "bmw_reconcile_duration_seconds", help: "Duration of one ClusterOrder reconcile.", labelNames: ["result"],
      buckets: RECONCILE_BUCKETS, registers,
    }),
    pulumiUps: new Counter({
      name: "bmw_pulumi_ups_total", help: "pulumi up operations started, by outcome.", labelNames: ["result"], registers,
    }),
    skippedByFingerprint: new Counter({
      name: "bmw_reconcile_skipped_unchanged_total",
      help: "Reconciles that ran no pulumi up because the plan fingerprint was unchanged.", registers,
    }),
    fulfillmentCalls: new Counter({
      name: "bmw_fulfillment_calls_total", help: "Calls to the fulfillment-service private API, by method and gRPC code.",
      labelNames: ["method", "code"], registers,
    }),
    settledChecks: new Counter({
      name: "bmw_settled_checks_total",
      help: "Timer-pass checks of a settled order, by outcome: settled (skipped without a reconcile) or why it was reconciled in full.",
      labelNames: ["outcome"], registers,
    }),
    passDuration: new Gauge({
      name: "bmw_loop_pass_duration_seconds",
      help: "Duration of the last full pass: from a timer tick until every ClusterOrder it listed was reconciled once.", registers,
    }),
    shardHeld: new Gauge({
      name: "bmw_shard_held", help: "With --shards: 1 for each shard whose Lease this replica holds, 0 for the others.",
      labelNames: ["shard"], registers,
    }),
    shardReconciles: new Counter({
      name: "bmw_shard_reconciles_total", help: "With --shards: this replica's reconciles, by the order's shard and result.",
      labelNames: ["shard", "result"], registers,
    }),
    shardUps: new Counter({
      name: "bmw_shard_pulumi_ups_total", help: "With --shards: this replica's pulumi ups that succeeded, by the order's shard.",
      labelNames: ["shard"], registers,
    }),
  };
}

/** The C heap's trims (lib/memoryTrim.ts). */
function memoryMetrics(registers: Registry[]) {
  return {
    trimDuration: new Histogram({
      name: "bmw_memory_trim_duration_seconds", help: "Duration of one return of the C heap's free pages to the system (malloc_trim).",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers,
    }),
    trimReleased: new Counter({
      name: "bmw_memory_trim_released_bytes_total", help: "Resident memory the trims of the C heap returned to the system.", registers,
    }),
    // Read at each scrape: with V8's heap figures they say which part of the RSS grows.
    cHeap: new Gauge({
      name: "bmw_memory_c_heap_bytes", help: "The C heap (glibc mallinfo2): bytes in use, free but kept by malloc, and in mmapped blocks.",
      labelNames: ["state"], registers,
      collect() {
        const m = cHeapInfo();
        if (!m) return;
        this.set({ state: "in_use" }, m.inUseBytes);
        this.set({ state: "free" }, m.freeBytes);
        this.set({ state: "mmapped" }, m.mmappedBytes);
      },
    }),
    resident: new Gauge({
      name: "bmw_memory_resident_bytes", help: "The process's resident memory by kind of page: anonymous (V8 and C heaps, stacks) and mapped files.",
      labelNames: ["kind"], registers,
      collect() {
        const parts = residentParts();
        if (!parts) return;
        this.set({ kind: "anonymous" }, parts.anonymousBytes);
        this.set({ kind: "file" }, parts.fileBytes);
      },
    }),
  };
}

/** The BMI cache kept by the service's event stream (io/bmiCache.ts). */
function bmiCacheMetrics(registers: Registry[]) {
  return {
    bmiCacheSynced: new Gauge({
      name: "bmw_bmi_cache_synced", help: "1 while the BareMetalInstance cache is synced from the service's event stream; 0 while passes list instead.",
      registers,
    }),
    bmiCacheEvents: new Counter({
      name: "bmw_bmi_cache_events_total", help: "Events the BareMetalInstance cache took from the service's event stream, by type.",
      labelNames: ["type"], registers,
    }),
  };
}

/** Gauges read from the options when /metrics is scraped: the update slots and the state directory's size. */
function scrapedGauges(registers: Registry[], opts: MetricsOptions) {
  const slots = opts.updateSlots;
  const stateBytes = opts.stateBytes;
  return {
    updateSlots: new Gauge({
      name: "bmw_pulumi_update_slots", help: "Stack updates running (state=running) and waiting for one of the --concurrency slots (state=waiting).",
      labelNames: ["state"], registers,
      collect() {
        if (!slots) return;
        this.set({ state: "running" }, slots.inUse);
        this.set({ state: "waiting" }, slots.waiting);
      },
    }),
    stateBytes: new Gauge({
      name: "bmw_state_bytes", help: "Bytes of the Pulumi file backend's state directory (checkpoints, retained history, locks).",
      registers,
      async collect() {
        const bytes = await stateBytes?.();
        if (bytes !== undefined) this.set(bytes);
      },
    }),
  };
}

export interface LoopTotals {
  ups: number;
  skipped: number;
  settled: number;
  fulfillmentCalls: number;
}

export class ReconcilerMetrics {
  readonly registry = new Registry();
  private readonly running: LoopTotals = { ups: 0, skipped: 0, settled: 0, fulfillmentCalls: 0 };

  readonly workersDesired: Gauge<DesignLabel>;
  readonly workersReady: Gauge<DesignLabel>;
  readonly workersFailed: Gauge<DesignLabel>;
  readonly provisioningDuration: Histogram<DesignLabel>;
  readonly agentCorrelationDuration: Histogram<DesignLabel>;

  readonly reconcileDuration: Histogram<"result">;
  readonly pulumiUps: Counter<"result">;
  readonly skippedByFingerprint: Counter;
  readonly fulfillmentCalls: Counter<"method" | "code">;
  readonly settledChecks: Counter<"outcome">;
  readonly passDuration: Gauge;
  readonly shardHeld: Gauge<"shard">;
  readonly shardReconciles: Counter<"shard" | "result">;
  readonly shardUps: Counter<"shard">;
  readonly updateSlots: Gauge<"state">;
  readonly stateBytes: Gauge;
  readonly trimDuration: Histogram;
  readonly trimReleased: Counter;
  readonly bmiCacheSynced: Gauge;
  readonly bmiCacheEvents: Counter<"type">;

  constructor(opts: MetricsOptions = {}) {
    const registers = [this.registry];
    // Registered in this order, which is the exposition's order.
    const design = designMetrics(registers);
    this.workersDesired = design.workersDesired;
    this.workersReady = design.workersReady;
    this.workersFailed = design.workersFailed;
    this.provisioningDuration = design.provisioningDuration;
    this.agentCorrelationDuration = design.agentCorrelationDuration;
    const loop = loopMetrics(registers);
    this.reconcileDuration = loop.reconcileDuration;
    this.pulumiUps = loop.pulumiUps;
    this.skippedByFingerprint = loop.skippedByFingerprint;
    this.fulfillmentCalls = loop.fulfillmentCalls;
    this.settledChecks = loop.settledChecks;
    this.passDuration = loop.passDuration;
    this.shardHeld = loop.shardHeld;
    this.shardReconciles = loop.shardReconciles;
    this.shardUps = loop.shardUps;
    const scraped = scrapedGauges(registers, opts);
    this.updateSlots = scraped.updateSlots;
    this.stateBytes = scraped.stateBytes;
    const memory = memoryMetrics(registers);
    this.trimDuration = memory.trimDuration;
    this.trimReleased = memory.trimReleased;
    const cache = bmiCacheMetrics(registers);
    this.bmiCacheSynced = cache.bmiCacheSynced;
    this.bmiCacheEvents = cache.bmiCacheEvents;
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: "bmw_" });
  }

  /**
   * Sets the three worker gauges from every order's counts, summed per tenant. Tenants that no
   * longer have orders disappear from the exposition instead of keeping their last value.
   */
  setWorkerGauges(orders: Iterable<OrderWorkerCounts>): void {
    const perTenant = aggregateByTenant(orders);
    for (const g of [this.workersDesired, this.workersReady, this.workersFailed]) g.reset();
    for (const [tenant, c] of perTenant) {
      const labels = { tenant, worker_type: WORKER_TYPE };
      this.workersDesired.set(labels, c.desired);
      this.workersReady.set(labels, c.ready);
      this.workersFailed.set(labels, c.failed);
    }
  }

  /** A sharded replica's shard Leases: every shard of the count, 1 where held. */
  setShardsHeld(shards: number, held: readonly number[]): void {
    for (let i = 0; i < shards; i++) this.shardHeld.set({ shard: String(i) }, held.includes(i) ? 1 : 0);
  }

  observeProvisioning(tenant: string, seconds: number): void {
    this.provisioningDuration.observe({ tenant, worker_type: WORKER_TYPE }, seconds);
  }

  observeAgentCorrelation(tenant: string, seconds: number): void {
    this.agentCorrelationDuration.observe({ tenant, worker_type: WORKER_TYPE }, seconds);
  }

  /**
   * Times a reconcile: call the returned function with its result when it ends. For a sharded replica,
   * `shard` is the order's shard (undefined: not counted per shard) and `up` whether it ran a pulumi up.
   */
  startReconcile(): (result: ReconcileResult, per?: { shard?: number; up?: boolean }) => void {
    const end = this.reconcileDuration.startTimer();
    return (result, per = {}) => {
      end({ result });
      if (per.shard === undefined) return;
      this.shardReconciles.inc({ shard: String(per.shard), result });
      if (per.up) this.shardUps.inc({ shard: String(per.shard) });
    };
  }

  countUp(result: UpResult): void {
    this.pulumiUps.inc({ result });
    this.running.ups++;
  }

  countSkipped(): void {
    this.skippedByFingerprint.inc();
    this.running.skipped++;
  }

  /** `code` is the gRPC status name ("OK", "UNAVAILABLE", ...), a bounded set. */
  countFulfillmentCall(method: string, code: string): void {
    this.fulfillmentCalls.inc({ method, code });
    this.running.fulfillmentCalls++;
  }

  /** `outcome`: "settled", "resynced", or the SettledMiss that sent the order to a full reconcile (a bounded set). */
  countSettledCheck(outcome: string): void {
    this.settledChecks.inc({ outcome });
    if (outcome === "settled" || outcome === "resynced") this.running.settled++;
  }

  /** "EVENT_TYPE_OBJECT_UPDATED" → "updated": a small, fixed label set. */
  countBmiCacheEvent(type: string): void {
    this.bmiCacheEvents.inc({ type: type.replace(/^EVENT_TYPE_(OBJECT_)?/, "").toLowerCase() });
  }

  observeTrim(report: { releasedBytes: number; durationMs: number }): void {
    this.trimDuration.observe(report.durationMs / 1000);
    this.trimReleased.inc(report.releasedBytes);
  }

  /**
   * Running totals of the loop's work, for per-pass figures in the log. Read at once (prom-client's get()
   * is asynchronous: a total read at a tick could include work done just after it).
   */
  totals(): LoopTotals {
    return { ...this.running };
  }

  /** The Prometheus text exposition. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

export function aggregateByTenant(orders: Iterable<OrderWorkerCounts>): Map<string, Omit<OrderWorkerCounts, "tenant">> {
  const out = new Map<string, Omit<OrderWorkerCounts, "tenant">>();
  for (const o of orders) {
    const c = out.get(o.tenant) ?? { desired: 0, ready: 0, failed: 0 };
    c.desired += o.desired;
    c.ready += o.ready;
    c.failed += o.failed;
    out.set(o.tenant, c);
  }
  return out;
}
