// `npm run bench`: speed and memory of the reconciler on the lab, every figure next to a baseline
// measured in the same run (issue 7). Not part of `npm test`.
//
//   load       CPU of loading the program in a fresh Node process: tsc vs swc transpiling, and
//              Node's compile cache (each update's program process pays it)
//   floor      bare `pulumi up` of a one-resource dynamic-provider program (bench/floor)
//   burst      B ClusterOrders created at once until every BMI of theirs exists: stacks per minute
//   growth     more orders up to N × W workers, all Ready; at each size one steady interval:
//              pass wall time, pulumi processes, fulfillment calls, reconciler RSS
//   events     E scale-ups at steady state: ClusterOrder patch → first BMI Create (median, p95),
//              as a ratio to the floor
//   naive      a loop that runs `up` on every stack each tick (the same program, stacks and
//              concurrency, reconciler stopped): wall time and pulumi processes of one tick
//
// Writes <out>/bench-<time>.json and .md. The reconciler is the real `baremetal-workers run` child
// process with the product's defaults (60 s interval, 4 stacks at a time), on its own lab.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";
import yargs from "yargs";
import { hideBin } from "yargs/helpers";
import { programEnv, programSettings } from "../config/settings";
import { StackManager } from "../stack/stacks";
import { PROJECT_ROOT, pulumiEnv, toolchain } from "../stack/toolchain";
import { Filter, type FulfillmentClient } from "../clients/fulfillment";
import { startLab, type Lab } from "../lab";
import { ORDER_LABEL } from "../planner/names";
import type { ClusterOrder } from "../planner/types";
import { CpuProfile } from "./cpuProfile";
import { measureKubeRequests } from "./kubeRequests";
import { measureProgramLoad, measureProviderLoad, measureReconcilerLoad } from "./programLoad";
import { createPulumiShim, type PulumiShim } from "./pulumiShim";
import { memorySplitText, type MemorySplit, renderMarkdown, type BenchResult, type Integrity, type Restart, type SteadyInterval } from "./report";
import { median, percentile } from "./stats";
import { cliCommand } from "../cli/command";
import { descendants, procStat } from "../lib/procfs";

function rssKiBOf(pid: number): number | undefined {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return undefined;
  }
}

function cmdlineOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => process.stdout.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

interface Options {
  orders: number;
  workers: number;
  burst: number;
  events: number;
  floorRuns: number;
  concurrency: number;
  interval: number;
  naiveOrders?: number;
  /** BMW_REFRESH_INTERVAL_MS of the reconciler in seconds; the product's default (1 h) when absent. */
  refreshInterval?: number;
  dir: string;
  out: string;
  keep: boolean;
  timeout: number;
  /** Carry on a run whose processes ended (e.g. with the session) from its directory. */
  resume?: string;
}

/** The --quick preset. */
const QUICK = { orders: 40, burst: 20, events: 5, "naive-orders": 10, "floor-runs": 3, interval: 30 } as const;

async function options(): Promise<Options> {
  const argv = await yargs(hideBin(process.argv))
    .usage("npm run bench [-- options]")
    .option("orders", { type: "number", default: 500, describe: "ClusterOrders at steady state" })
    .option("workers", { type: "number", default: 4, describe: "compute workers per ClusterOrder" })
    .option("burst", { type: "number", default: 100, describe: "ClusterOrders created at once (the first of them)" })
    .option("events", { type: "number", default: 20, describe: "scale events timed at steady state" })
    .option("floor-runs", { type: "number", default: 5, describe: "bare one-resource `pulumi up` runs timed" })
    .option("concurrency", { type: "number", default: 4, describe: "stacks updated at once (the reconciler's default)" })
    .option("interval", { type: "number", default: 60, describe: "reconciler timer interval, seconds (its default)" })
    .option("naive-orders", { type: "number", describe: "stacks in the naive tick (default: all)" })
    .option("refresh-interval", { type: "number", describe: "seconds between a converged stack's periodic refreshes (default: the reconciler's, 1 h)" })
    .option("dir", { type: "string", describe: "working directory (lab, state); default a new temp dir" })
    .option("out", { type: "string", default: path.join(PROJECT_ROOT, "bench", "results") })
    .option("keep", { type: "boolean", default: false, describe: "leave the lab running and the directory in place" })
    .option("timeout", { type: "number", default: 5400, describe: "seconds allowed for any one stage" })
    .option("quick", { type: "boolean", default: false,
      describe: "day-to-day size: 40 orders, burst 20, 5 events, naive tick over 10 stacks, 3 floor runs, a 30 s interval (under 20 min on 2 cores); explicit options win" })
    .option("resume", { type: "string", describe: "carry on the run whose --dir this was: restart its lab and a reconciler on their data, and go on with the growth (other options are the run's own)" })
    .middleware((a) => {
      if (!a.quick) return;
      const given = new Set(process.argv.slice(2).map((x) => x.replace(/^--/, "").split("=")[0]));
      for (const [k, v] of Object.entries(QUICK)) if (!given.has(k)) (a as Record<string, unknown>)[k] = v;
    }, true)
    .check((a) => {
      if (a.burst > a.orders) throw new Error("--burst cannot exceed --orders");
      if (a.events > a.orders) throw new Error("--events cannot exceed --orders");
      return true;
    })
    .strict().help().parseAsync();
  return {
    orders: argv.orders, workers: argv.workers, burst: argv.burst, events: argv.events, floorRuns: argv["floor-runs"],
    concurrency: argv.concurrency, interval: argv.interval, naiveOrders: argv["naive-orders"],
    refreshInterval: argv["refresh-interval"],
    dir: argv.resume ?? argv.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "bmw-bench-")), out: argv.out, keep: argv.keep, timeout: argv.timeout,
    resume: argv.resume,
  };
}

/** What a run records in its directory so that `--resume` can carry it on. */
interface RunRecord {
  jsonFile: string;
  options: Omit<Options, "resume">;
}
const RUN_RECORD = "bench-run.json";

async function until<T>(what: string, timeoutS: number, probe: () => Promise<T | undefined>, everyMs = 2_000): Promise<T> {
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutS} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** The floor: `pulumi up` of bench/floor on fresh stacks (each a create of one dynamic resource). */
/** Wall times of the floor's ups, and the CPU of every process of each (the CLI, its plugins, the program). */
async function measureFloor(o: Options, shimEnv: Record<string, string>): Promise<{ times: number[]; cpuSeconds: number[] }> {
  const tc = toolchain();
  const stateDir = path.join(o.dir, "floor-state");
  fs.mkdirSync(stateDir, { recursive: true });
  const pulumiCommand = await PulumiCommand.get({ root: tc.pulumiRoot });
  const envVars = pulumiEnv(tc, { PULUMI_BACKEND_URL: `file://${stateDir}`, PULUMI_CONFIG_PASSPHRASE: "bench", PULUMI_NODEJS_TRANSPILE_ONLY: "true", ...shimEnv });
  const times: number[] = [];
  const cpuSeconds: number[] = [];
  for (let i = 0; i <= o.floorRuns; i++) {
    const stack = await LocalWorkspace.createOrSelectStack({ stackName: `floor-${i}`, workDir: path.join(PROJECT_ROOT, "bench", "floor") },
      { pulumiCommand, envVars });
    await stack.setConfig("value", { value: String(i) });
    const profile = new CpuProfile(process.pid, 100, false); // this process samples, the up is its child
    profile.start();
    const t0 = performance.now();
    const r = await stack.up();
    const ms = performance.now() - t0;
    const cpu = cpuTotal(profile.stop());
    if (r.summary.resourceChanges?.create !== 2) throw new Error(`floor up ${i} did not create its resource: ${JSON.stringify(r.summary.resourceChanges)}`);
    // The first run warms the page cache and ts-node's caches; it is not counted.
    if (i > 0) {
      times.push(ms);
      cpuSeconds.push(cpu);
    }
  }
  for (let i = 0; i <= o.floorRuns; i++) fs.rmSync(path.join(PROJECT_ROOT, "bench", "floor", `Pulumi.floor-${i}.yaml`), { force: true });
  return { times, cpuSeconds };
}

function cpuTotal(p: { byKind: Record<string, { cpuSeconds: number }> }): number {
  return Object.values(p.byKind).reduce((a, k) => a + k.cpuSeconds, 0);
}

class Reconciler {
  readonly child: ChildProcess;
  readonly logFile: string;
  private offset = 0;
  readonly passes: { time: number; orders: number; durationMs: number; ups: number; skipped: number; settled: number; fulfillmentCalls: number }[] = [];
  /** Every reconcile the log records: its end time and action. */
  private readonly reconciles: { time: number; action: string; order?: string }[] = [];
  /** The reconciler's health/metrics address, from its first log line. */
  private healthUrl?: string;

  constructor(env: NodeJS.ProcessEnv, o: Options, logFile: string) {
    this.logFile = logFile;
    const fd = fs.openSync(logFile, "a");
    const run = cliCommand(["run", "--interval", String(o.interval), "--concurrency", String(o.concurrency), "--lease-namespace", "bmw-bench",
      "--health-port", "0"]);
    this.child = spawn(run.command, run.args, { cwd: PROJECT_ROOT, env, stdio: ["ignore", fd, fd] });
    fs.closeSync(fd);
  }

  /** Reads the new lines of the reconciler's JSON log: its address, its passes and its reconciles. */
  poll(): void {
    const text = fs.readFileSync(this.logFile, "utf8");
    const fresh = text.slice(this.offset);
    const end = fresh.lastIndexOf("\n");
    if (end < 0) return;
    this.offset += end + 1;
    for (const line of fresh.slice(0, end).split("\n")) {
      if (!line.includes('"pass complete"') && !line.includes('"msg":"reconciled"') && !line.includes('"health"')) continue;
      let j: { time: string | number; msg: string; health?: string; action?: string; order?: string;
        orders: number; durationMs: number; ups: number; skipped: number; settled?: number; fulfillmentCalls: number };
      try {
        j = JSON.parse(line);
      } catch {
        continue; // stderr shares the file (e.g. Node warnings)
      }
      const time = typeof j.time === "number" ? j.time : Date.parse(j.time);
      this.healthUrl ??= j.health;
      if (j.msg === "reconciled" && j.action) this.reconciles.push({ time, action: j.action, order: j.order });
      if (j.msg === "pass complete") {
        this.passes.push({ time, orders: j.orders, durationMs: j.durationMs, ups: j.ups, skipped: j.skipped, settled: j.settled ?? 0, fulfillmentCalls: j.fulfillmentCalls });
      }
    }
  }

  /** Reconciles the log records in (from, to], by action. */
  reconcilesBetween(from: number, to: number): Record<string, number> {
    this.poll();
    const by: Record<string, number> = {};
    for (const r of this.reconciles) if (r.time > from && r.time <= to) by[r.action] = (by[r.action] ?? 0) + 1;
    return by;
  }

  /** The reconciler's /metrics as exposed. */
  private async metricsText(): Promise<string> {
    this.poll();
    if (!this.healthUrl) throw new Error(`no health address in ${this.logFile}`);
    return (await fetch(`${this.healthUrl}/metrics`)).text();
  }

  /** The reconciler's /metrics: every sample's value by name, summed over its labels. */
  private async metrics(): Promise<Map<string, number>> {
    const text = await this.metricsText();
    const byName = new Map<string, number>();
    for (const l of text.split("\n")) {
      if (l.startsWith("#") || !l.trim()) continue;
      const name = l.slice(0, l.search(/[{ ]/));
      byName.set(name, (byName.get(name) ?? 0) + Number(l.slice(l.lastIndexOf(" ") + 1)));
    }
    return byName;
  }

  /** The reconciler's settled checks so far, by outcome (bmw_settled_checks_total). */
  async settledChecks(): Promise<Record<string, number>> {
    const text = await this.metricsText();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^bmw_settled_checks_total\{outcome="([^"]+)"\} (\S+)$/gm)) out[m[1]] = Number(m[2]);
    return out;
  }

  /** The reconciler's fulfillment calls so far. */
  async fulfillmentCallsTotal(): Promise<number> {
    return (await this.metrics()).get("bmw_fulfillment_calls_total") ?? 0;
  }

  /** The end of the first `up` of `order` ("ns/name") logged after `after`. */
  async nextUp(order: string, after: number, timeoutS: number): Promise<number> {
    return until(`an update of ${order}`, timeoutS, async () => {
      this.poll();
      return this.reconciles.find((r) => r.order === order && r.action === "up" && r.time > after)?.time;
    }, 200);
  }

  /** The V8 heap and external memory, from the reconciler's default process metrics. */
  async heapMiB(): Promise<{ used: number; total: number; external: number }> {
    const m = await this.metrics();
    const mib = (name: string) => (m.get(name) ?? NaN) / 2 ** 20;
    return { used: mib("bmw_nodejs_heap_size_used_bytes"), total: mib("bmw_nodejs_heap_size_total_bytes"), external: mib("bmw_nodejs_external_memory_bytes") };
  }

  /** The reconciler's RSS split by kind of page, and its C heap (bmw_memory_* of its /metrics); undefined without them. */
  async memoryMiB(): Promise<MemorySplit | undefined> {
    const text = await this.metricsText();
    const mib = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? NaN) / 2 ** 20;
    const split = {
      anonymous: mib('bmw_memory_resident_bytes{kind="anonymous"}'), file: mib('bmw_memory_resident_bytes{kind="file"}'),
      cHeapInUse: mib('bmw_memory_c_heap_bytes{state="in_use"}'), cHeapFree: mib('bmw_memory_c_heap_bytes{state="free"}'),
      cHeapMmapped: mib('bmw_memory_c_heap_bytes{state="mmapped"}'),
    };
    return Number.isNaN(split.anonymous) ? undefined : split;
  }

  /** The C heap's trims since the reconciler started (lib/memoryTrim.ts): how many, how long in all, what they returned. */
  async trims(): Promise<{ count: number; totalMs: number; releasedMiB: number }> {
    const m = await this.metrics();
    return { count: m.get("bmw_memory_trim_duration_seconds_count") ?? 0, totalMs: (m.get("bmw_memory_trim_duration_seconds_sum") ?? 0) * 1000,
      releasedMiB: (m.get("bmw_memory_trim_released_bytes_total") ?? 0) / 2 ** 20 };
  }

  rssKiB(): number {
    return rssKiBOf(this.child.pid!) ?? 0;
  }

  /** RSS of the shared dynamic-provider host, the reconciler's own child (per-update hosts are children of pulumi). */
  providerHostRssKiB(): number | undefined {
    const host = descendants(this.child.pid!).find((pid) => procStat(pid)?.ppid === this.child.pid && cmdlineOf(pid).includes("hostLaunch.js"));
    return host === undefined ? undefined : rssKiBOf(host);
  }

  async nextPass(after: number, timeoutS: number): Promise<Reconciler["passes"][number]> {
    return until("the reconciler's next full pass", timeoutS, async () => {
      this.poll();
      return this.passes.find((p) => p.time > after);
    }, 1_000);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    this.child.kill("SIGTERM");
    await until("the reconciler to stop", 120, async () => (this.child.exitCode !== null ? true : undefined), 200).catch(() => this.child.kill("SIGKILL"));
  }
}

class World {
  private readonly api: k8s.CustomObjectsApi;
  constructor(readonly lab: Lab, readonly f: FulfillmentClient, readonly o: Options) {
    this.api = lab.kubeConfig().makeApiClient(k8s.CustomObjectsApi);
  }

  ref(i: number): { namespace: string; name: string } {
    return { namespace: `bench-${i % 10}`, name: `order-${String(i).padStart(4, "0")}` };
  }

  async createOrders(from: number, to: number): Promise<Map<string, string>> {
    const uids = new Map<string, string>();
    const idx = Array.from({ length: to - from }, (_, k) => from + k);
    // Ten at a time: "at once" as far as the reconciler can tell, without flooding the apiserver client.
    for (let k = 0; k < idx.length; k += 10) {
      await Promise.all(idx.slice(k, k + 10).map(async (i) => {
        const r = this.ref(i);
        const so = await this.lab.createSampleOrder({ ...r, nodeRequests: [{ nodeSet: "compute", numberOfNodes: this.o.workers, instanceType: "compute" }] });
        uids.set(`${r.namespace}/${r.name}`, so.uid);
      }));
    }
    return uids;
  }

  /** Live BMIs per order uid. */
  async bmisByOrder(): Promise<Map<string, { name: string; created: number }[]>> {
    const all = await this.f.bareMetalInstances.listAll(Filter.tenantEquals("system"));
    const out = new Map<string, { name: string; created: number }[]>();
    for (const b of all) {
      const uid = b.metadata?.labels?.[ORDER_LABEL];
      if (!uid || b.metadata?.deletion_timestamp) continue;
      const ts = b.metadata?.creation_timestamp;
      const created = ts ? Number(ts.seconds) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : 0;
      out.set(uid, [...(out.get(uid) ?? []), { name: b.metadata?.name ?? "", created }]);
    }
    return out;
  }

  async orders(): Promise<ClusterOrder[]> {
    const res = (await this.api.listClusterCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders" })) as { items: ClusterOrder[] };
    return res.items;
  }

  /** BMIs the simulator holds that are not being deleted, from its counters (no listing). */
  async liveBmiCount(): Promise<number> {
    const byState = (await this.lab.stats()).fulfillment.bmis_by_state;
    return Object.entries(byState).filter(([state]) => !state.endsWith("DELETING")).reduce((a, [, n]) => a + Number(n), 0);
  }

  /** Orders with at least `n` workers, every one of them Ready. */
  async readyCount(n: number): Promise<number> {
    return (await this.orders()).filter((o) => {
      const count = (o.status?.workers ?? []).length;
      return count >= n && o.status?.readyWorkers === count;
    }).length;
  }

  /** What the simulator saw: BMI creates and deletes, and live BMIs against what the orders ask for. */
  async integrity(): Promise<Integrity> {
    const st = await this.lab.stats();
    const live = [...(await this.bmisByOrder()).values()].reduce((a, l) => a + l.length, 0);
    const requested = (await this.orders()).reduce((a, o) => a + (o.spec.nodeRequests ?? []).reduce((b, r) => b + r.numberOfNodes, 0), 0);
    return { createCalls: st.fulfillment.calls["BareMetalInstances/Create"] ?? 0, deleteCalls: st.fulfillment.calls["BareMetalInstances/Delete"] ?? 0, liveBmis: live, requestedWorkers: requested };
  }

  async scale(i: number, n: number): Promise<void> {
    const r = this.ref(i);
    await this.api.patchNamespacedCustomObject({
      group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", ...r,
      body: [{ op: "replace", path: "/spec/nodeRequests/0/numberOfNodes", value: n }],
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch));
  }
}

/** Passes a steady interval waits at most for every order to settle (orders that just became Ready still see Agent updates). */
const SETTLE_PASSES = 5;

/** Steady intervals measured at each size of the growth: the row reports the one with the median fulfillment calls. */
const STEADY_INTERVALS = 3;

async function steadyInterval(rec: Reconciler, world: World, shim: PulumiShim, orders: number, timeoutS: number,
  settling = true, intervals = 1): Promise<SteadyInterval> {
  // A pass that starts after everything is Ready (and, with settled orders on, once every order settled or
  // after SETTLE_PASSES passes), then whole intervals (tick to tick). An order's plan can fall due in any
  // of them (a worker's attempt count resets an hour after it became Ready), so a size measures several.
  let first = await rec.nextPass(Date.now(), timeoutS);
  for (let i = 1; settling && i < SETTLE_PASSES && first.settled < first.orders; i++) first = await rec.nextPass(first.time, timeoutS);
  const measured: SteadyInterval[] = [];
  for (let i = 0; i < intervals; i++) {
    const c0 = shim.count();
    const f0 = await rec.fulfillmentCallsTotal();
    const k0 = await rec.settledChecks();
    const second = await rec.nextPass(first.time, timeoutS);
    const c1 = shim.count();
    const f1 = await rec.fulfillmentCallsTotal();
    const k1 = await rec.settledChecks();
    const by = rec.reconcilesBetween(first.time, second.time);
    measured.push({
      orders, workers: orders * world.o.workers, passMs: second.durationMs, pulumiProcesses: c1 - c0, ups: second.ups,
      skipped: second.skipped, settled: second.settled, fulfillmentCalls: second.fulfillmentCalls, rssMiB: rec.rssKiB() / 1024,
      interval: { ms: second.time - first.time, reconciles: Object.values(by).reduce((a, b) => a + b, 0), ups: by.up ?? 0, fulfillmentCalls: f1 - f0 },
      checks: Object.fromEntries(Object.entries(k1).map(([k, n]) => [k, n - (k0[k] ?? 0)])),
    });
    first = second;
  }
  const chosen = [...measured].sort((a, b) => a.fulfillmentCalls - b.fulfillmentCalls)[Math.floor((measured.length - 1) / 2)];
  return {
    ...chosen,
    ...(rec.providerHostRssKiB() !== undefined ? { providerHostRssMiB: rec.providerHostRssKiB()! / 1024 } : {}),
    heapMiB: await rec.heapMiB(),
    memoryMiB: await rec.memoryMiB(),
    trims: await rec.trims(),
    ...(measured.length > 1 ? { intervals: measured.map((m) => ({
      passMs: m.passMs, fulfillmentCalls: m.fulfillmentCalls, settled: m.settled ?? 0, ups: m.ups, checks: m.checks ?? {} })) } : {}),
  };
}

async function naiveTick(o: Options, env: NodeJS.ProcessEnv, world: World, shim: PulumiShim, count: number): Promise<{ stacks: number; wallMs: number; pulumiProcesses: number; changed: number }> {
  const settings = programSettings(env);
  const stacks = new StackManager({
    stateDir: env.BMW_STATE_DIR, workDir: env.BMW_WORK_DIR, passphraseFile: env.PULUMI_CONFIG_PASSPHRASE_FILE,
    envVars: programEnv(settings, env), toolchain: toolchain(env),
  });
  const refs = Array.from({ length: count }, (_, i) => world.ref(i));
  // Stack selection and config reads are set up before the clock starts, as a long-running naive loop would have.
  for (const r of refs) await stacks.ensureStack(r);
  const c0 = shim.count();
  const t0 = performance.now();
  let changed = 0;
  const queue = [...refs];
  await Promise.all(Array.from({ length: o.concurrency }, async () => {
    for (let r = queue.shift(); r; r = queue.shift()) {
      const up = await stacks.up(r, { message: "naive loop: up every tick" });
      if (up.changes.create + up.changes.update + up.changes.delete + up.changes.replace > 0) changed++;
    }
  }));
  return { stacks: count, wallMs: performance.now() - t0, pulumiProcesses: shim.count() - c0, changed };
}

async function main(): Promise<void> {
  const cli = await options();
  let record: RunRecord | undefined;
  if (cli.resume) {
    const file = path.join(cli.resume, RUN_RECORD);
    if (!fs.existsSync(file)) throw new Error(`${cli.resume} holds no benchmark run to resume (no ${RUN_RECORD})`);
    record = JSON.parse(fs.readFileSync(file, "utf8")) as RunRecord;
  }
  // A run started with --keep stays kept when resumed: its directory is the only copy of its lab and stacks.
  const o: Options = record ? { ...record.options, dir: cli.dir, keep: cli.keep || record.options.keep, timeout: cli.timeout } : cli;
  fs.mkdirSync(o.dir, { recursive: true });
  fs.mkdirSync(o.out, { recursive: true });
  const started = new Date();
  const tc = toolchain();
  const shim = createPulumiShim(tc, o.dir, { append: record !== undefined });
  const shimEnv = { BMW_CACHE_DIR: shim.cacheDir };
  log(`${record ? "resuming" : "working"} in ${o.dir}; ${o.orders} orders × ${o.workers} workers, burst ${o.burst}, ${o.events} events`);

  // A resumed run keeps the load and floor figures it measured; they were measured next to its first stages.
  const programLoad = record ? [] : measureProgramLoad(o.dir, 5);
  if (!record) log(`program load: ${programLoad.map((v) => `${v.transpiler}${v.compileCache ? "+cache" : ""} ${v.medianCpuMs.toFixed(0)} ms`).join(", ")}`);
  const providerLoad = record ? [] : await measureProviderLoad(o.dir, 5);
  if (!record) log(`provider host load: ${providerLoad.map((v) => `${v.from} ${v.medianCpuMs.toFixed(0)} ms`).join(", ")}`);
  const reconcilerLoad = record ? [] : await measureReconcilerLoad(o.dir, 3);
  if (!record) log(`reconciler modules loaded: ${reconcilerLoad.map((v) => `${v.how} RSS ${v.medianRssMiB.toFixed(0)} MiB, heap ${v.medianHeapUsedMiB.toFixed(0)} MiB`).join("; ")}`);
  const floor = record ? { times: [], cpuSeconds: [] } : await measureFloor(o, {});
  if (!record) log(`floor: bare one-resource up median ${median(floor.times).toFixed(0)} ms, ${median(floor.cpuSeconds).toFixed(2)} CPU-s`);

  // Every event adds a worker, three times (first size, last size, the program-process baseline).
  // Four stages of events each add one worker per event; a quarter of the lab's hosts are GPU hosts. Too few
  // compute hosts fail the last stage's creates (HostSelectionFailed), and the planner deletes those BMIs to retry.
  const hosts = Math.ceil(((o.orders * o.workers + 4 * o.events + 8) / 3) * 4);
  const lab = await startLab({ dir: path.join(o.dir, "lab"), preset: "fast", hosts });
  const f = lab.fulfillmentClient();
  const world = new World(lab, f, o);
  await lab.createNamespace("bmw-bench");
  const kubeRequests = record ? undefined : await measureKubeRequests(lab.productSettings().BMW_KUBECONFIG, "bmw-bench");
  if (kubeRequests) {
    log(`kube requests: ${kubeRequests.map((v) => `${v.how} ${v.cpuMsPerRequest.toFixed(2)} CPU-ms, ${v.wallMsPerRequest.toFixed(2)} ms, ${v.connections} connections per ${v.requests}`).join("; ")}`);
  }
  const stateDir = path.join(o.dir, "state");
  const passphrase = path.join(o.dir, "state.passphrase");
  fs.writeFileSync(passphrase, "bench-passphrase", { mode: 0o600 });
  const env: NodeJS.ProcessEnv = {
    ...process.env, ...shimEnv,
    ...lab.productSettings(),
    BMW_STATE_DIR: stateDir,
    BMW_WORK_DIR: path.join(o.dir, "project"),
    PULUMI_CONFIG_PASSPHRASE_FILE: passphrase,
    BMW_LOG_LEVEL: "info",
    ...(o.refreshInterval !== undefined ? { BMW_REFRESH_INTERVAL_MS: String(o.refreshInterval * 1000) } : {}),
  };
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  let rec = new Reconciler(env, o, path.join(o.dir, record ? `reconciler-resumed-${stamp}.log` : "reconciler.log"));
  const stopAtEnd: Reconciler[] = [];
  const jsonFile = record?.jsonFile ?? path.join(o.out, `bench-${stamp}.json`);
  // Written after every stage, so an interrupted run still leaves what it measured.
  const save = () => {
    result.pulumiByCommand = shim.byCommand();
    fs.writeFileSync(jsonFile, `${JSON.stringify(result, null, 2)}\n`);
    fs.writeFileSync(jsonFile.replace(/\.json$/, ".md"), renderMarkdown(result));
  };
  const cleanup = async () => {
    for (const r of new Set([rec, ...stopAtEnd])) await r.stop();
    f.close();
    if (!o.keep) {
      await lab.stop();
      fs.rmSync(o.dir, { recursive: true, force: true });
    }
  };
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => {
      log(`${sig}: writing what was measured and stopping the lab`);
      save();
      void cleanup().finally(() => process.exit(130));
    });
  }
  const result: BenchResult = record ? JSON.parse(fs.readFileSync(record.jsonFile, "utf8")) as BenchResult : {
    startedAt: started.toISOString(), options: { ...o, dir: undefined },
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? "unknown", memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version,
      pulumi: tc.versions.pulumi, platform: `${os.platform()} ${os.release()}` },
    floor: { runs: floor.times, medianMs: median(floor.times), cpuSeconds: floor.cpuSeconds, medianCpuSeconds: median(floor.cpuSeconds) },
    programLoad,
    providerLoad,
    reconcilerLoad,
    kubeRequests,
    steady: [], events: undefined, burst: undefined, naive: undefined, idleRssMiB: 0, pulumiByCommand: {},
  };
  if (record) (result.resumedAt ??= []).push(started.toISOString());
  const { resume: _resume, ...recorded } = o;
  fs.writeFileSync(path.join(o.dir, RUN_RECORD), JSON.stringify({ jsonFile, options: recorded } satisfies RunRecord, null, 2));
  try {
    let uids = new Map<string, string>();
    let have: number;
    if (record) {
      // Resumed: the lab and the stacks are as the ended processes left them; a new reconciler carries on.
      if (!result.events || !result.naive || !result.restart) {
        throw new Error("a run can be resumed only in its growth, after the events, the naive tick and the restart at the first size");
      }
      have = Math.max(o.burst, ...result.steady.map((st) => st.orders));
      const first = await rec.nextPass(0, o.timeout);
      log(`resumed with ${(await world.orders()).length} orders; the new reconciler's first pass took ${first.durationMs} ms (${first.ups} ups)`);
    } else {
      const idle = await rec.nextPass(0, 300);
      result.idleRssMiB = rec.rssKiB() / 1024;
      const heap = result.idleHeapMiB = await rec.heapMiB();
      result.idleMemoryMiB = await rec.memoryMiB();
      log(`reconciler up; idle pass ${idle.durationMs} ms, RSS ${result.idleRssMiB.toFixed(0)} MiB (heap used ${heap.used.toFixed(0)} of ${heap.total.toFixed(0)}, external ${heap.external.toFixed(0)}${result.idleMemoryMiB ? `; ${memorySplitText(result.idleMemoryMiB, heap.total)}` : ""})`);

      // Burst: the first B orders at once, with the CPU of every process under the reconciler sampled.
      const profile = new CpuProfile(rec.child.pid!);
      profile.start();
      const t0 = Date.now();
      uids = await world.createOrders(0, o.burst);
      const created = Date.now();
      await until(`every BMI of the ${o.burst} burst orders`, o.timeout, async () => {
        // The simulator's counters until enough BMIs exist: a listing of every BMI (with its ignition) on each
        // probe took the simulator's and this process's CPU from the burst it measures.
        if ((await world.liveBmiCount()) < o.burst * o.workers) return undefined;
        const by = await world.bmisByOrder();
        const done = [...uids.values()].filter((u) => (by.get(u)?.length ?? 0) >= o.workers).length;
        return done === o.burst ? true : undefined;
      }, 3_000);
      const burstMs = Date.now() - t0;
      result.burstCpu = profile.stop();
      result.burst = { orders: o.burst, bmis: o.burst * o.workers, createMs: created - t0, allBmisMs: burstMs, stacksPerMinute: o.burst / (burstMs / 60_000) };
      save();
      log(`burst: ${o.burst} orders' BMIs all created in ${(burstMs / 1000).toFixed(0)} s (${result.burst.stacksPerMinute.toFixed(1)} stacks/min)`);
      have = o.burst;
    }
    // Naive tick and restart at the first size, so that a long run has them early as well.
    const runNaiveAndRestart = async () => {
      // Naive: the reconciler stops; every stack gets an `up` (after the events settled, so most are no-ops).
      await until("every order Ready", o.timeout, async () => ((await world.readyCount(o.workers)) >= have ? true : undefined), 5_000);
      await rec.stop();
      const naive = await naiveTick(o, env, world, shim, Math.min(o.naiveOrders ?? have, have));
      result.naive = naive;
      save();
      log(`naive tick over ${naive.stacks} stacks: ${(naive.wallMs / 1000).toFixed(0)} s, ${naive.pulumiProcesses} pulumi processes`);

      // The restarted reconciler then carries on with the growth.
      result.restart = await restart("reconciler-restarted.log");
      save();
    };
    /** A new reconciler process (the old one stopped) over the same orders and stacks, until its first full pass. */
    const restart = async (logName: string): Promise<Restart> => {
      await rec.stop();
      const c0 = shim.count();
      const t0r = Date.now();
      rec = new Reconciler(env, o, path.join(o.dir, logName));
      stopAtEnd.push(rec);
      const firstPass = await rec.nextPass(t0r, o.timeout);
      const measured: Restart = { orders: firstPass.orders, firstPassMs: firstPass.durationMs, untilFirstPassMs: firstPass.time - t0r,
        ups: firstPass.ups, skipped: firstPass.skipped, pulumiProcesses: shim.count() - c0, checks: await rec.settledChecks() };
      result.integrity = await world.integrity();
      log(`restart: first pass over ${firstPass.orders} orders after ${((firstPass.time - t0r) / 1000).toFixed(0)} s, ${firstPass.ups} ups, ${measured.pulumiProcesses} pulumi processes`);
      return measured;
    };

    /**
     * Events: scale-ups of distinct orders, patch → first Create of the new BMI, and the CPU of every process
     * under the reconciler from the patch to the end of the update that made it.
     */
    const measureEvents = async (count: number): Promise<NonNullable<BenchResult["events"]>> => {
      const latencies: number[] = [];
      const cpu: number[] = [];
      let peakRssMiB = 0;
      const allUids = new Map([...uids, ...(await world.orders()).map((x) => [`${x.metadata.namespace}/${x.metadata.name}`, x.metadata.uid] as [string, string])]);
      for (let e = 0; e < count; e++) {
        const i = Math.floor((e * have) / count);
        const r = world.ref(i);
        const uid = allUids.get(`${r.namespace}/${r.name}`)!;
        const mine = async () => f.bareMetalInstances.listAll(Filter.labelsMatch({ [ORDER_LABEL]: uid }));
        const before = new Set((await mine()).map((b) => b.metadata?.name ?? ""));
        const profile = new CpuProfile(rec.child.pid!);
        profile.start();
        const at = Date.now();
        await world.scale(i, before.size + 1);
        const fresh = await until(`a new BMI for ${r.namespace}/${r.name}`, o.timeout, async () => {
          const ts = (await mine()).filter((b) => !before.has(b.metadata?.name ?? ""))[0]?.metadata?.creation_timestamp;
          return ts ? Number(ts.seconds) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : undefined;
        }, 100);
        await rec.nextUp(`${r.namespace}/${r.name}`, at, o.timeout);
        const p = profile.stop();
        cpu.push(cpuTotal(p));
        peakRssMiB = Math.max(peakRssMiB, p.peakRssMiB);
        latencies.push(fresh - at);
        log(`event ${e + 1}/${count}: ${r.namespace}/${r.name} first Create after ${fresh - at} ms; ${cpu[cpu.length - 1].toFixed(2)} CPU-s to the end of its update`);
        await sleep(2_000);
      }
      return { orders: have, count: latencies.length, latenciesMs: latencies, medianMs: median(latencies), p95Ms: percentile(latencies, 95),
        cpuSeconds: cpu, medianCpuSeconds: median(cpu), peakRssMiB };
    };
    const runEvents = async () => {
      result.events = await measureEvents(o.events);
      result.integrity = await world.integrity();
      save();
    };

    // Growth to N orders; one steady interval at each size.
    const sizes = [...new Set([o.burst, Math.round((o.burst + o.orders) / 2), o.orders])].filter((s) => s >= o.burst);
    for (const size of sizes) {
      if (result.steady.some((st) => st.orders === size)) continue; // measured before a resume
      if (size > have) {
        await world.createOrders(have, size);
        have = size;
      }
      await until(`${size} orders Ready with ${o.workers} workers`, o.timeout, async () => {
        const ready = await world.readyCount(o.workers);
        return ready >= size ? true : undefined;
      }, 5_000);
      const s = await steadyInterval(rec, world, shim, size, o.interval * 3 + o.timeout, true, STEADY_INTERVALS);
      result.steady.push(s);
      save();
      log(`steady at ${size} orders: pass ${s.passMs} ms, ${s.pulumiProcesses} pulumi processes per interval, ${s.fulfillmentCalls} fulfillment calls, RSS ${s.rssMiB.toFixed(0)} MiB${s.providerHostRssMiB !== undefined ? ` (+ shared provider host ${s.providerHostRssMiB.toFixed(0)} MiB)` : ""} (heap used ${s.heapMiB?.used.toFixed(0)} of ${s.heapMiB?.total.toFixed(0)}, external ${s.heapMiB?.external.toFixed(0)}${s.memoryMiB ? `; ${memorySplitText(s.memoryMiB, s.heapMiB?.total)}` : ""}; trims so far ${s.trims?.count}, ${s.trims?.releasedMiB.toFixed(0)} MiB returned in ${s.trims?.totalMs.toFixed(0)} ms)`);
      // Events at the first size, so a long run has its latencies early (they hardly depend on the size).
      if (!result.events) {
        await runEvents();
        await runNaiveAndRestart();
      }
    }
    // The inline program's side of its comparison, at the last size (the baseline below runs at it too).
    if (!result.eventsLast && result.events) {
      result.eventsLast = await measureEvents(o.events);
      result.integrity = await world.integrity();
      save();
      log(`events at ${have} orders: median ${result.eventsLast.medianMs} ms, ${result.eventsLast.medianCpuSeconds?.toFixed(2)} CPU-s per update`);
    }
    // Restart at the last size: what a pod's restart costs over every order of the run.
    if (!result.restartLast && result.restart) {
      result.restartLast = await restart("reconciler-restarted-last.log");
      save();
    }
    // The resync's cost: the same size with every order due for its resync comparisons in every pass.
    if (!result.steadyResyncing && result.steady.length > 0) {
      await rec.stop();
      rec = new Reconciler({ ...env, BMW_RESYNC_INTERVAL_MS: String(o.interval * 1000) }, o, path.join(o.dir, "reconciler-resyncing.log"));
      stopAtEnd.push(rec);
      await rec.nextPass(0, o.timeout);
      result.steadyResyncing = await steadyInterval(rec, world, shim, have, o.interval * 3 + o.timeout);
      save();
      log(`steady at ${have} orders, every order due for its resync: pass ${result.steadyResyncing.passMs} ms, ${result.steadyResyncing.fulfillmentCalls} fulfillment calls, checks ${JSON.stringify(result.steadyResyncing.checks)}`);
    }
    // Baseline of the settled-order skip: the same size, with a reconciler that observes every order on
    // every pass (BMW_RESYNC_INTERVAL_MS=0), as before settled orders existed.
    if (!result.steadyObservingAll && result.steady.length > 0) {
      await rec.stop();
      rec = new Reconciler({ ...env, BMW_RESYNC_INTERVAL_MS: "0" }, o, path.join(o.dir, "reconciler-observing-all.log"));
      stopAtEnd.push(rec);
      await rec.nextPass(0, o.timeout);
      result.steadyObservingAll = await steadyInterval(rec, world, shim, have, o.interval * 3 + o.timeout, false);
      save();
      log(`steady at ${have} orders, every order observed: pass ${result.steadyObservingAll.passMs} ms, ${result.steadyObservingAll.fulfillmentCalls} fulfillment calls`);
    }
    /** A baseline's events: a new reconciler with `extra` in its environment, the same number of events, integrity after. */
    const eventsOnNewReconciler = async (extra: NodeJS.ProcessEnv, logName: string) => {
      await rec.stop();
      rec = new Reconciler({ ...env, ...extra }, o, path.join(o.dir, logName));
      stopAtEnd.push(rec);
      await rec.nextPass(0, o.timeout);
      const events = await measureEvents(o.events);
      result.integrity = await world.integrity();
      save();
      return events;
    };
    // Baseline of the inline program: the same events with a Node program process per update
    // (BMW_PROGRAM_MODE=process), as every update ran before.
    if (!result.eventsProgramProcess && result.events) {
      result.eventsProgramProcess = await eventsOnNewReconciler({ BMW_PROGRAM_MODE: "process" }, "reconciler-program-process.log");
      log(`events with a program process: median ${result.eventsProgramProcess.medianMs} ms, ${result.eventsProgramProcess.medianCpuSeconds?.toFixed(2)} CPU-s per update`);
    }
    // Baseline of the shared provider host: the same events with a host the engine starts for each update.
    if (!result.eventsHostPerUpdate && result.events) {
      result.eventsHostPerUpdate = await eventsOnNewReconciler({ BMW_PROVIDER_HOST: "per-update" }, "reconciler-host-per-update.log");
      log(`events with a provider host per update: median ${result.eventsHostPerUpdate.medianMs} ms, ${result.eventsHostPerUpdate.medianCpuSeconds?.toFixed(2)} CPU-s per update`);
    }
  } finally {
    for (const r of new Set([rec, ...stopAtEnd])) await r.stop();
    save();
    log(`results: ${jsonFile} (and .md)`);
    await cleanup();
  }
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
