// The benchmark's result record and its markdown rendering (every figure beside its baseline).
import type { KubeRequestsVariant } from "./kubeRequests";

export interface SteadyInterval {
  orders: number;
  workers: number;
  /** Wall time of one pass: the timer tick until every order it listed was reconciled. */
  passMs: number;
  /** pulumi CLI processes started between two consecutive passes (one timer interval). */
  pulumiProcesses: number;
  ups: number;
  skipped: number;
  /** Orders the pass skipped as settled, without a reconcile (absent in older runs). */
  settled?: number;
  fulfillmentCalls: number;
  rssMiB: number;
  /** RSS of the dynamic-provider host the reconciler keeps for all its updates (BMW_PROVIDER_HOST=shared); absent when none runs and in older runs. */
  providerHostRssMiB?: number;
  /** The reconciler's V8 heap (used, reserved) and memory outside it (Buffers, native), from its /metrics; absent in older runs. */
  heapMiB?: { used: number; total: number; external: number };
  /** The reconciler's RSS split (its /metrics): anonymous pages and mapped files; the C heap in use, free and mmapped. Absent in older runs. */
  memoryMiB?: MemorySplit;
  /** The reconciler's trims of its C heap since it started (count, total duration, RSS returned); absent in older runs. */
  trims?: { count: number; totalMs: number; releasedMiB: number };
  /**
   * The whole interval (end of one pass to the end of the next), not only the pass: every reconcile the
   * watches caused as well, and the fulfillment calls they made. Absent in results of older runs.
   */
  interval?: { ms: number; reconciles: number; ups: number; fulfillmentCalls: number };
  /** Settled checks of the interval by outcome (bmw_settled_checks_total): "settled", "resynced" or why not. Absent in older runs. */
  checks?: Record<string, number>;
  /**
   * Every interval measured at this size, when more than one was: the fields above are those of the one
   * with the median fulfillment calls (RSS and memory: after the last). Absent in older runs.
   */
  intervals?: { passMs: number; fulfillmentCalls: number; settled: number; ups: number; checks: Record<string, number> }[];
}

export interface MemorySplit {
  anonymous: number;
  file: number;
  cHeapInUse: number;
  cHeapFree: number;
  cHeapMmapped: number;
}

/** "anonymous A (V8 heap reserved V, C heap in use C + free F), files F" from a steady row's figures. */
export function memorySplitText(m: MemorySplit, v8TotalMiB?: number): string {
  const v8 = v8TotalMiB !== undefined ? `V8 heap reserved ${v8TotalMiB.toFixed(0)}, ` : "";
  return `anonymous ${m.anonymous.toFixed(0)} (${v8}C heap in use ${m.cHeapInUse.toFixed(0)} + free ${m.cHeapFree.toFixed(0)}), files ${m.file.toFixed(0)}`;
}

export interface Integrity {
  createCalls: number;
  deleteCalls: number;
  liveBmis: number;
  requestedWorkers: number;
}

import type { LoadVariant, ProviderLoadVariant, ReconcilerLoadVariant } from "./programLoad";

export interface EventsResult {
  orders?: number;
  count: number;
  latenciesMs: number[];
  medianMs: number;
  p95Ms: number;
  /** CPU of every process under the reconciler from each patch to the end of the update that followed. */
  cpuSeconds?: number[];
  medianCpuSeconds?: number;
  /** The largest RSS of the reconciler and every process under it at once, during any of the events. */
  peakRssMiB?: number;
}

export interface BenchResult {
  startedAt: string;
  /** When the run was carried on with --resume after its processes ended. */
  resumedAt?: string[];
  options: Record<string, unknown>;
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string; pulumi: string; platform: string };
  floor: { runs: number[]; medianMs: number; cpuSeconds?: number[]; medianCpuSeconds?: number };
  /** CPU of loading the program in a fresh Node process, per transpiler and compile-cache setting. */
  programLoad?: LoadVariant[];
  providerLoad?: ProviderLoadVariant[];
  /** The reconciler's modules loaded in a fresh process, as the launcher loads them and as before (all packages external, TypeScript loaded). */
  reconcilerLoad?: ReconcilerLoadVariant[];
  /** Kubernetes API requests through the product's access layer and through client-node's own KubeConfig (bench/kubeRequests.ts). */
  kubeRequests?: KubeRequestsVariant[];
  idleRssMiB: number;
  /** The idle reconciler's V8 heap and RSS split; absent in older runs. */
  idleHeapMiB?: { used: number; total: number; external: number };
  idleMemoryMiB?: MemorySplit;
  burst?: { orders: number; bmis: number; createMs: number; allBmisMs: number; stacksPerMinute: number };
  steady: SteadyInterval[];
  /** The last size again, with settled orders off (BMW_RESYNC_INTERVAL_MS=0): the baseline of the settled skip. */
  steadyObservingAll?: SteadyInterval;
  /** The last size again, every order due for its resync in every pass (BMW_RESYNC_INTERVAL_MS = the interval). */
  steadyResyncing?: SteadyInterval;
  events?: EventsResult;
  /** Events again at the last size (program inline), next to eventsProgramProcess. */
  eventsLast?: EventsResult;
  /** The same events at the last size with a Node program process per update (BMW_PROGRAM_MODE=process): the inline program's baseline. */
  eventsProgramProcess?: EventsResult;
  /** The same events at the last size with a dynamic-provider host per update (BMW_PROVIDER_HOST=per-update): the shared host's baseline. */
  eventsHostPerUpdate?: EventsResult;
  /** BMI calls the simulator counted, and live BMIs against requested workers (the run never scales down). */
  integrity?: Integrity;
  naive?: { stacks: number; wallMs: number; pulumiProcesses: number; changed: number };
  /** A new reconciler process over the same orders: its first full pass (no in-memory fingerprints). */
  restart?: Restart;
  /** The same at the last size: a new reconciler process over every order of the run. */
  restartLast?: Restart;
  /** Every pulumi CLI process of the run (reconciler and naive loop), by sub-command: where the time goes. */
  pulumiByCommand: Record<string, { count: number; totalMs: number }>;
  /** CPU by kind of process under the reconciler during the burst (the busiest path). */
  burstCpu?: { wallMs: number; peakRssMiB?: number; byKind: Record<string, { processes: number; cpuSeconds: number }> };
}

/** A new reconciler process over the same orders and stacks: its first full pass (no in-memory fingerprints). */
export interface Restart {
  orders: number; firstPassMs: number; untilFirstPassMs: number; ups: number; skipped: number; pulumiProcesses: number;
  /** The restarted reconciler's settled checks until its first pass ended, by outcome. */
  checks?: Record<string, number>;
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
/** A ratio with two decimals, or two significant digits below 0.01 (a steady tick is thousands of times cheaper). */
const x = (a: number, b: number) => {
  const r = a / b;
  if (!(b > 0) || !Number.isFinite(r)) return "n/a";
  return `${r > 0 && r < 0.01 ? r.toPrecision(2) : r.toFixed(2)}×`;
};

/** Workers per order before an event's scale-up. */
function workersOf(r: BenchResult): number {
  const w = r.options.workers;
  return typeof w === "number" ? w : 4;
}

export function renderMarkdown(r: BenchResult): string {
  const m = r.machine;
  const out: string[] = [
    `# baremetal-workers benchmark, ${r.startedAt}`,
    "",
    `Machine: ${m.cpus} cores (${m.cpuModel}), ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}, pulumi ${m.pulumi}.`,
    `Options: ${JSON.stringify(r.options)}`,
    "",
    "| measure | value | baseline | ratio |",
    "|---|---|---|---|",
  ];
  const floor = r.floor.medianMs;
  if (r.events) {
    out.push(`| event → first BMI Create, median (${r.events.count} events${r.events.orders ? ` at ${r.events.orders} orders` : ""}) | ${s(r.events.medianMs)} | bare one-resource \`pulumi up\` ${s(floor)} | ${x(r.events.medianMs, floor)} |`);
    out.push(`| event → first BMI Create, p95 | ${s(r.events.p95Ms)} | bare one-resource \`pulumi up\` ${s(floor)} | ${x(r.events.p95Ms, floor)} |`);
    const floorCpu = r.floor.medianCpuSeconds;
    if (r.events.medianCpuSeconds !== undefined && floorCpu !== undefined) {
      out.push(`| CPU of one update of a ${workersOf(r)}-worker order (scale-up by one, all processes, median) | ${r.events.medianCpuSeconds.toFixed(2)} CPU-s | bare one-resource \`pulumi up\` ${floorCpu.toFixed(2)} CPU-s | ${x(r.events.medianCpuSeconds, floorCpu)} |`);
    }
  }
  const pp = r.eventsProgramProcess;
  const il = r.eventsLast;
  if (il && pp) {
    const at = `${pp.count} events at ${pp.orders} orders`;
    out.push(`| event → first BMI Create, median, program inline (${at}) | ${s(il.medianMs)} | a Node program process per update (BMW_PROGRAM_MODE=process, ${at}) ${s(pp.medianMs)} | ${x(il.medianMs, pp.medianMs)} |`);
    out.push(`| event → first BMI Create, p95, program inline | ${s(il.p95Ms)} | a program process per update ${s(pp.p95Ms)} | ${x(il.p95Ms, pp.p95Ms)} |`);
    if (il.medianCpuSeconds !== undefined && pp.medianCpuSeconds !== undefined) {
      out.push(`| CPU of one update (median), program inline | ${il.medianCpuSeconds.toFixed(2)} CPU-s | a program process per update ${pp.medianCpuSeconds.toFixed(2)} CPU-s | ${x(il.medianCpuSeconds, pp.medianCpuSeconds)} |`);
    }
    if (il.peakRssMiB !== undefined && pp.peakRssMiB !== undefined) {
      out.push(`| RSS of the reconciler and every process under it during an update (largest), program inline | ${il.peakRssMiB.toFixed(0)} MiB | a program process per update ${pp.peakRssMiB.toFixed(0)} MiB | ${x(il.peakRssMiB, pp.peakRssMiB)} |`);
    }
  }
  const hp = r.eventsHostPerUpdate;
  if (il && hp) {
    const at = `${hp.count} events at ${hp.orders} orders`;
    out.push(`| event → first BMI Create, median / p95, one shared provider host (${at}) | ${s(il.medianMs)} / ${s(il.p95Ms)} | a provider host per update (BMW_PROVIDER_HOST=per-update, ${at}) ${s(hp.medianMs)} / ${s(hp.p95Ms)} | ${x(il.medianMs, hp.medianMs)} / ${x(il.p95Ms, hp.p95Ms)} |`);
    if (il.medianCpuSeconds !== undefined && hp.medianCpuSeconds !== undefined) {
      out.push(`| CPU of one update (median, all processes, the shared host's included), one shared provider host | ${il.medianCpuSeconds.toFixed(2)} CPU-s | a provider host per update ${hp.medianCpuSeconds.toFixed(2)} CPU-s | ${x(il.medianCpuSeconds, hp.medianCpuSeconds)} |`);
    }
  }
  const last = r.steady[r.steady.length - 1];
  if (last && r.naive) {
    const scale = last.orders / r.naive.stacks;
    const naiveWall = r.naive.wallMs * scale;
    const naiveProcs = r.naive.pulumiProcesses * scale;
    const note = scale === 1 ? "" : ` (measured over ${r.naive.stacks} stacks, ×${scale.toFixed(1)})`;
    out.push(`| steady tick at ${last.orders} orders × ${last.workers / last.orders} workers: wall time | ${s(last.passMs)} | naive loop (\`up\` on every stack)${note} ${s(naiveWall)} | ${x(last.passMs, naiveWall)} |`);
    out.push(`| steady tick: pulumi processes | ${last.pulumiProcesses} | naive loop${note} ${Math.round(naiveProcs)} | ${x(last.pulumiProcesses, naiveProcs)} |`);
  }
  const all = r.steadyObservingAll;
  if (last && all && all.orders === last.orders) {
    out.push(`| steady pass at ${last.orders} orders: wall time (${last.settled ?? 0} settled) | ${s(last.passMs)} | every order observed (BMW_RESYNC_INTERVAL_MS=0) ${s(all.passMs)} | ${x(last.passMs, all.passMs)} |`);
    out.push(`| steady pass at ${last.orders} orders: fulfillment calls${ofIntervals(last)} | ${last.fulfillmentCalls} | every order observed ${all.fulfillmentCalls} | ${x(last.fulfillmentCalls, all.fulfillmentCalls)} |`);
    out.push(`| reconciler RSS at ${last.orders} orders, settled orders on (burst and growth behind it) | ${last.rssMiB.toFixed(0)} MiB | every order observed, a fresh process ${all.rssMiB.toFixed(0)} MiB | ${x(last.rssMiB, all.rssMiB)} |`);
    const rs = r.steadyResyncing;
    if (rs && rs.orders === all.orders) {
      const how = `every order due for its resync (${outcomes(rs.checks)})`;
      out.push(`| steady pass at ${rs.orders} orders, ${how}: wall time | ${s(rs.passMs)} | every order observed ${s(all.passMs)} | ${x(rs.passMs, all.passMs)} |`);
      out.push(`| the same: fulfillment calls | ${rs.fulfillmentCalls} | every order observed ${all.fulfillmentCalls} | ${x(rs.fulfillmentCalls, all.fulfillmentCalls)} |`);
    }
  }
  for (const restart of [r.restart, r.restartLast]) {
    if (!restart || !r.naive) continue;
    const naiveWall = r.naive.wallMs * (restart.orders / r.naive.stacks);
    const checks = restart.checks ? `; settled checks: ${outcomes(restart.checks)}` : "";
    out.push(`| restart: a new reconciler's first pass over ${restart.orders} orders (${restart.ups} ups, ${restart.pulumiProcesses} pulumi processes${checks}) | ${s(restart.untilFirstPassMs)} | one \`up\` per order (naive tick) ${s(naiveWall)} | ${x(restart.untilFirstPassMs, naiveWall)} |`);
  }
  if (r.burst) {
    out.push(`| burst: ${r.burst.orders} orders created at once until all ${r.burst.bmis} BMIs exist | ${r.burst.stacksPerMinute.toFixed(1)} stacks/min (${s(r.burst.allBmisMs)}) | floor: one \`up\` at a time ${(60_000 / floor).toFixed(1)} ups/min | ${x(r.burst.stacksPerMinute, 60_000 / floor)} |`);
  }
  const tscLoad = r.programLoad?.find((v) => v.transpiler === "tsc" && !v.compileCache);
  for (const v of r.programLoad ?? []) {
    if (v === tscLoad) continue;
    out.push(`| program load CPU in a fresh Node process, ${v.transpiler}${v.compileCache ? " + Node compile cache" : ""} (median of ${v.cpuMs.length}) | ${v.medianCpuMs.toFixed(0)} ms | ts-node with tsc ${tscLoad?.medianCpuMs.toFixed(0) ?? "?"} ms | ${x(v.medianCpuMs, tscLoad?.medianCpuMs ?? 0)} |`);
  }
  const fromSources = r.providerLoad?.find((v) => v.from === "sources");
  const fromBundle = r.providerLoad?.find((v) => v.from === "bundle");
  if (fromSources && fromBundle) {
    out.push(`| provider host load CPU (the SDK and the providers' logic) from the prebuilt bundle, Node compile cache (median of ${fromBundle.cpuMs.length}) | ${fromBundle.medianCpuMs.toFixed(0)} ms | from the sources with ts-node + swc ${fromSources.medianCpuMs.toFixed(0)} ms | ${x(fromBundle.medianCpuMs, fromSources.medianCpuMs)} |`);
  }
  const noTs = r.providerLoad?.find((v) => v.from === "bundle, no TypeScript");
  if (fromBundle && noTs) {
    out.push(`| the same, the SDK's TypeScript deferred (providers/hostLaunch.js, what our pulumi processes run) | ${noTs.medianCpuMs.toFixed(0)} ms | the SDK's host as it is ${fromBundle.medianCpuMs.toFixed(0)} ms | ${x(noTs.medianCpuMs, fromBundle.medianCpuMs)} |`);
  }
  if (last) {
    out.push(`| reconciler RSS at ${last.orders} orders | ${last.rssMiB.toFixed(0)} MiB | idle, 0 orders ${r.idleRssMiB.toFixed(0)} MiB | ${x(last.rssMiB, r.idleRssMiB)} |`);
    if (last.memoryMiB) {
      const idle = r.idleMemoryMiB ? `idle: ${memorySplitText(r.idleMemoryMiB, r.idleHeapMiB?.total)}` : "—";
      out.push(`| the same, by kind of page (MiB) | ${memorySplitText(last.memoryMiB, last.heapMiB?.total)} | ${idle} | — |`);
    }
    if (last.providerHostRssMiB !== undefined) out.push(`| RSS of the shared dynamic-provider host beside it, at ${last.orders} orders | ${last.providerHostRssMiB.toFixed(0)} MiB | — | — |`);
  }
  const pooled = r.kubeRequests?.find((v) => v.how === "pooled");
  const perRequest = r.kubeRequests?.find((v) => v.how === "client-node");
  if (pooled && perRequest) {
    out.push(`| a Kubernetes API request (a GET, ${pooled.requests} in a row): CPU / wall time, TLS connections opened | ${pooled.cpuMsPerRequest.toFixed(2)} / ${pooled.wallMsPerRequest.toFixed(2)} ms, ${pooled.connections} | client-node's KubeConfig (an Agent per request) ${perRequest.cpuMsPerRequest.toFixed(2)} / ${perRequest.wallMsPerRequest.toFixed(2)} ms, ${perRequest.connections} | ${x(pooled.cpuMsPerRequest, perRequest.cpuMsPerRequest)} / ${x(pooled.wallMsPerRequest, perRequest.wallMsPerRequest)} |`);
  }
  const loadNow = r.reconcilerLoad?.find((v) => v.how === "product");
  const loadBefore = r.reconcilerLoad?.find((v) => v.how !== "product");
  if (loadNow && loadBefore) {
    out.push(`| the reconciler's modules loaded, fresh process: RSS / V8 heap in use (client-node bundled, the SDK's TypeScript deferred; median of ${loadNow.rssMiB.length}) | ${loadNow.medianRssMiB.toFixed(0)} / ${loadNow.medianHeapUsedMiB.toFixed(0)} MiB | every package from node_modules, TypeScript loaded ${loadBefore.medianRssMiB.toFixed(0)} / ${loadBefore.medianHeapUsedMiB.toFixed(0)} MiB | ${x(loadNow.medianRssMiB, loadBefore.medianRssMiB)} / ${x(loadNow.medianHeapUsedMiB, loadBefore.medianHeapUsedMiB)} |`);
  }
  const several = r.steady.some((st) => (st.intervals?.length ?? 0) > 1);
  out.push("", `Steady state as the number of workers grows (${several ? "the interval with the median fulfillment calls of those measured, all of them in brackets" : "one timer interval each"}):`, "",
    "| orders | workers | pass wall time | pulumi processes | ups | skipped (unchanged) | settled (not observed) | fulfillment calls | calls per order | RSS (+ shared provider host) |",
    "|---|---|---|---|---|---|---|---|---|---|");
  for (const st of r.steady) {
    out.push(`| ${st.orders} | ${st.workers} | ${s(st.passMs)} | ${st.pulumiProcesses} | ${st.ups} | ${st.skipped} | ${st.settled ?? "n/a"} | ${st.fulfillmentCalls}${st.intervals && st.intervals.length > 1 ? ` (of ${st.intervals.map((i) => i.fulfillmentCalls).join(" / ")})` : ""} | ${(st.fulfillmentCalls / st.orders).toFixed(2)} | ${st.rssMiB.toFixed(0)} MiB${st.providerHostRssMiB !== undefined ? ` (+ ${st.providerHostRssMiB.toFixed(0)})` : ""} |`);
  }
  const whole = r.steady.filter((st) => st.interval);
  if (whole.length) {
    out.push("", "The same intervals whole (pass end to pass end), with the reconciles the watches caused:", "",
      "| orders | interval | reconciles | per order | ups | fulfillment calls | calls per order |", "|---|---|---|---|---|---|---|");
    for (const st of whole) {
      const i = st.interval!;
      out.push(`| ${st.orders} | ${s(i.ms)} | ${i.reconciles} | ${(i.reconciles / st.orders).toFixed(2)} | ${i.ups} | ${i.fulfillmentCalls} | ${(i.fulfillmentCalls / st.orders).toFixed(2)} |`);
    }
  }
  const cmds = Object.entries(r.pulumiByCommand).sort((a, b) => b[1].totalMs - a[1].totalMs);
  if (cmds.length) {
    out.push("", "pulumi CLI processes of the whole run, by sub-command:", "", "| sub-command | processes | mean wall time | total |", "|---|---|---|---|");
    for (const [c, v] of cmds) out.push(`| \`${c}\` | ${v.count} | ${(v.totalMs / v.count).toFixed(0)} ms | ${s(v.totalMs)} |`);
  }
  if (r.burstCpu) {
    const kinds = Object.entries(r.burstCpu.byKind).sort((a, b) => b[1].cpuSeconds - a[1].cpuSeconds);
    const total = kinds.reduce((a, [, v]) => a + v.cpuSeconds, 0);
    const peak = r.burstCpu.peakRssMiB !== undefined ? `; at most ${r.burstCpu.peakRssMiB.toFixed(0)} MiB RSS in all of them at once` : "";
    out.push("", `CPU during the burst (${s(r.burstCpu.wallMs)} wall, ${total.toFixed(0)} CPU-s on ${m.cpus} cores${peak}), by process under the reconciler (itself included):`, "",
      "| process | processes | CPU | share |", "|---|---|---|---|");
    for (const [k, v] of kinds) out.push(`| ${k} | ${v.processes} | ${v.cpuSeconds.toFixed(1)} s | ${((100 * v.cpuSeconds) / total).toFixed(0)}% |`);
  }
  if (r.integrity) {
    const i = r.integrity;
    out.push("", `Integrity (the run only creates and scales up): ${i.liveBmis} live BMIs for ${i.requestedWorkers} requested workers, ` +
      `${i.createCalls} BMI Create calls, ${i.deleteCalls} BMI Delete calls (expected 0).`);
  }
  if (r.events) out.push("", `Event latencies (ms): ${r.events.latenciesMs.join(", ")}; CPU-s per update: ${(r.events.cpuSeconds ?? []).map((v) => v.toFixed(2)).join(", ")}`);
  if (il) out.push(`At the last size, program inline: latencies (ms) ${il.latenciesMs.join(", ")}; CPU-s per update: ${(il.cpuSeconds ?? []).map((v) => v.toFixed(2)).join(", ")}`);
  if (pp) out.push(`At the last size, a program process per update: latencies (ms) ${pp.latenciesMs.join(", ")}; CPU-s per update: ${(pp.cpuSeconds ?? []).map((v) => v.toFixed(2)).join(", ")}`);
  out.push(`Floor runs (ms): ${r.floor.runs.map((v) => v.toFixed(0)).join(", ")}; CPU-s: ${(r.floor.cpuSeconds ?? []).map((v) => v.toFixed(2)).join(", ")}`, "");
  return out.join("\n");
}

/** " (the median of 3 intervals: 4, 63, 12 calls)" for a size that measured several intervals. */
function ofIntervals(st: SteadyInterval): string {
  const all = st.intervals;
  return all && all.length > 1 ? ` (the median of ${all.length} intervals: ${all.map((i) => i.fulfillmentCalls).join(", ")} calls)` : "";
}

/** Settled checks by outcome, e.g. "480 resynced, 20 order-changed". */
function outcomes(checks: Record<string, number> | undefined): string {
  const entries = Object.entries(checks ?? {}).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  return entries.length ? entries.map(([k, n]) => `${n} ${k}`).join(", ") : "no settled checks";
}
