// `baremetal-workers run`: the reconciler process of the pod. Leader election through a Lease (a
// standby replica waits), the loop, status/events per reconcile, metrics and health endpoints, and an
// orderly shutdown on SIGTERM (finish running updates, release the Lease).
import * as os from "node:os";
import { type App, type AppOptions, createApp } from "./app";
import { type ReconcileResult, TENANT_ANNOTATION } from "./reconcile";
import { observeOnly, type ObserveOnlyDeps } from "./observeOnly";
import type { OrderRef } from "../io/observe";
import { startHealthServer, Heartbeat, electionCheck, kubeReachable, allOf } from "./health";
import { defaultIdentity } from "./leader";
import { type Election, shardedLeaders, singleLeader } from "./election";
import { LEASE_BASE } from "./shards";
import { createLogger } from "../lib/logger";
import { NotLeaderError } from "../lib/notLeader";

type Logger = ReturnType<typeof createLogger>;
import { ReconcileLoop } from "./loop";
import { ReconcilerMetrics, type OrderWorkerCounts } from "./metrics";
import { orderKey } from "./reconcileDeps";
import { Slots } from "./slots";
import { loadKubeConfig } from "../clients/kube";
import { glibcMallocTrim, MemoryTrimmer } from "../lib/memoryTrim";
import type { LoopSettings } from "../config/loopSettings";

/** The loop's settings (validated by config/loopSettings.ts) and the wiring's. */
export interface RunOptions extends AppOptions, LoopSettings {
  /** Resolves when the loop should stop (tests); default: SIGTERM/SIGINT. */
  until?: Promise<void>;
}

export async function runLoop(opts: RunOptions): Promise<void> {
  process.env.BMW_FAILPOINT_PGID = String(process.pid); // fault suite: started detached, so our pid is our process group
  const log = createLogger({ name: "reconciler" });
  const updateSlots = new Slots(opts.concurrency);
  let stateBytes: () => Promise<number> | undefined = () => undefined;
  const metrics = new ReconcilerMetrics({ updateSlots, stateBytes: () => stateBytes() });
  const app = await createApp({ ...opts, ...observed(metrics, log), updateSlots });
  stateBytes = () => app.stacks.stateBytes();
  const counts = new Map<string, OrderWorkerCounts>();
  const heartbeat = new Heartbeat(Math.max(3 * opts.intervalMs, 60_000));
  const identity = opts.identity ?? defaultIdentity(os.hostname(), process.pid);
  let loop: ReconcileLoop | undefined;
  const elector = electionOf(opts, app, identity, log, metrics, () => loop);
  let passStart = metrics.totals();
  loop = new ReconcileLoop({
    kube: app.kube,
    namespaces: opts.namespaces,
    intervalMs: opts.intervalMs,
    concurrency: opts.reconcileConcurrency,
    isLeader: () => elector.isLeader(),
    ...(elector.ownership ? { ownership: elector.ownership } : {}),
    log: (level, msg, fields) => log[level](fields ?? {}, msg),
    onTick: () => {
      heartbeat.beat();
      passStart = metrics.totals();
    },
    onPass: ({ orders, durationMs }) => {
      metrics.passDuration.set(durationMs / 1000);
      const [a, b] = [passStart, metrics.totals()];
      log.info({ orders, durationMs, ups: b.ups - a.ups, skipped: b.skipped - a.skipped, settled: b.settled - a.settled,
        fulfillmentCalls: b.fulfillmentCalls - a.fulfillmentCalls }, "pass complete");
    },
    reconcile: countedReconcile(app, metrics, counts, log, opts.mode === "observe", (ref) => elector.ownership?.shardOfRef(ref)),
    ...(app.settled.enabled && opts.mode !== "observe" ? { settled: app.settled } : {}),
    onSettledCheck: settledCheckObserver(app, metrics, counts, log),
  });
  const kc = loadKubeConfig(app.settings.kubeconfigPath);
  const health = await startHealthServer({
    port: opts.healthPort, host: opts.healthHost, metrics,
    liveness: () => heartbeat.check(),
    readiness: async () => allOf({ kube: await kubeReachable(kc), election: electionCheck(elector) }),
  });
  log.info({ identity, health: `http://${health.host}:${health.port}`, stateDir: app.stateDir, mode: opts.mode, shards: opts.shards },
    "reconciler started");
  const trimmer = memoryTrimmer(app, metrics, log);
  elector.start();
  if (app.settled.enabled && opts.mode !== "observe") await restoreSettled(app, log);
  await loop.start();
  await (opts.until ?? untilSignal());
  log.info("stopping: finishing running updates");
  loop.stop();
  await loop.drain();
  await elector.stop();
  trimmer?.stop();
  await health.close();
  app.close();
}

/** What the App tells the loop's metrics and log. */
function observed(metrics: ReconcilerMetrics, log: Logger): Partial<AppOptions> {
  return {
    durations: metrics,
    log: (msg, fields, level = "warn") => log[level](fields ?? {}, msg),
    onFulfillmentCall: (method, code) => metrics.countFulfillmentCall(method, code),
    onBmiCacheEvent: (type) => metrics.countBmiCacheEvent(type),
    onBmiCacheSync: (synced) => metrics.bmiCacheSynced.set(synced ? 1 : 0),
  };
}

/** Returns the C heap's free pages to the system now and then (glibc only): RSS near the memory in use. */
function memoryTrimmer(app: App, metrics: ReconcilerMetrics, log: Logger): MemoryTrimmer | undefined {
  const intervalMs = app.reconcilerSettings.memoryTrimIntervalMs;
  const trim = intervalMs > 0 ? glibcMallocTrim() : undefined;
  if (!trim) {
    if (intervalMs > 0) log.info("the C library has no malloc_trim: freed native memory is left to the allocator");
    return undefined;
  }
  const trimmer = new MemoryTrimmer({ trim, intervalMs, onTrim: (r) => {
    metrics.observeTrim(r);
    log.debug({ releasedBytes: r.releasedBytes, durationMs: Math.round(r.durationMs) }, "C heap trimmed");
  } });
  trimmer.start();
  return trimmer;
}

/** Orders settled before this process started (controller/settledStore.ts), each compared with the hub in its first check. */
async function restoreSettled(app: App, log: Logger): Promise<void> {
  const restored = await app.settled.restore();
  if (restored.length) log.info({ orders: restored.length }, "settled records restored; each is compared with the hub in its first check");
}

/** Counts each settled check; an order settled before a restart gets its worker gauges from its stored record. */
function settledCheckObserver(app: App, metrics: ReconcilerMetrics, counts: Map<string, OrderWorkerCounts>, log: Logger) {
  return (ref: OrderRef, outcome: string): void => {
    metrics.countSettledCheck(outcome);
    const k = orderKey(ref);
    log.debug({ order: k, outcome }, "settled check");
    const gauges = (outcome === "settled" || outcome === "resynced") && !counts.has(k) ? app.settled.gauges(ref) : undefined;
    if (gauges) {
      counts.set(k, gauges);
      metrics.setWorkerGauges(counts.values());
    }
  };
}

function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
}

/** Who may act (controller/election.ts): one Lease, or the shard Leases with --shards. */
function electionOf(opts: RunOptions, app: App, identity: string, log: Logger, metrics: ReconcilerMetrics,
  loop: () => ReconcileLoop | undefined): Election {
  // Observing replicas elect among themselves, on a Lease of their own: they never stand an acting replica down.
  const common = { app, identity, namespace: opts.leaseNamespace, log, leaseDurationSeconds: opts.leaseDurationSeconds,
    name: opts.mode === "observe" ? `${LEASE_BASE}-observe` : LEASE_BASE,
    drain: (which: (ref: OrderRef) => boolean) => loop()?.drain(which) ?? Promise.resolve() };
  if (!opts.shards || opts.mode === "observe") return singleLeader(common);
  const shards = opts.shards;
  return shardedLeaders({ ...common, shards, onShardsChanged: (held) => {
    metrics.setShardsHeld(shards, held);
    loop()?.resync();
  } });
}

/** One reconcile of the loop, counted in the metrics and logged; keeps each order's worker gauges. */
function countedReconcile(app: App, metrics: ReconcilerMetrics, counts: Map<string, OrderWorkerCounts>, log: Logger, observe: boolean,
  shardOf: (ref: OrderRef) => number | undefined) {
  const observer: ObserveOnlyDeps = { kube: app.kube, observeAndPlan: (r) => app.observeAndPlan(r),
    preview: (r, o) => app.observePreview(r, o), previewed: new Map() };
  return async (ref: OrderRef): Promise<ReconcileResult> => {
    const done = metrics.startReconcile();
    const started = Date.now();
    try {
      const r = observe ? await observeOnly(observer, ref) : await app.reconcile(ref);
      done(r.action === "skipped" ? "skipped" : "success", { shard: shardOf(ref), up: r.up !== undefined });
      if (r.action === "skipped") metrics.countSkipped();
      if (r.up) metrics.countUp("succeeded");
      const k = `${ref.namespace}/${ref.name}`;
      if (r.plan && r.action !== "deleted" && r.action !== "gone") {
        // An order's tenant does not change: read it once, not on every reconcile.
        let tenant = counts.get(k)?.tenant;
        if (!tenant) {
          const order = await app.kube.getClusterOrder(ref.namespace, ref.name);
          tenant = order?.metadata.annotations?.[TENANT_ANNOTATION] ?? "unknown";
        }
        counts.set(k, {
          tenant,
          desired: r.plan.status.desiredWorkers, ready: r.plan.status.readyWorkers,
          failed: r.plan.status.workers.filter((w) => w.phase === "Failed").length,
        });
      } else {
        counts.delete(k);
      }
      metrics.setWorkerGauges(counts.values());
      log.info({ order: k, action: r.action, changes: r.up?.changes, upMs: r.up?.durationMs, durationMs: Date.now() - started,
        message: r.message }, "reconciled");
      return r;
    } catch (err) {
      // Refused for a shard this replica does not hold: not a reconcile of that shard.
      done("error", { shard: err instanceof NotLeaderError ? undefined : shardOf(ref) });
      throw err;
    }
  };
}
