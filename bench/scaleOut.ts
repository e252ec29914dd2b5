// `npm run bench:scale-out`: the scale-out figures of issue 19, each replica count on a fresh lab and a
// fresh PostgreSQL (the Debian package's server), the reconcilers as real processes (`run --shards R`):
//   burst      B ClusterOrders created at once until every BMI of theirs exists: stacks per minute, with
//              1 replica and with 2 (this machine's 2 cores are shared by every replica: see the report)
//   contention updates refused because another process held the stack's lock (expected 0: one owner per order)
//   recovery   with 2 replicas, kill -9 of one: time until its shard Lease is taken, and until an order of
//              that shard, scaled up after the kill, has its new BMI
//   database   rows and bytes of the state table per stack, for the projection in docs/benchmarks.md
// Results: bench/results/scaleout-<time>.json and .md.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Client } from "pg";
import yargs from "yargs";
import { hideBin } from "yargs/helpers";
import { Filter } from "../clients/fulfillment";
import { Kube } from "../clients/kube";
import { shardLeaseName, shardOf } from "../controller/shards";
import { startLab } from "../lab";
import { startPostgres } from "../lab/postgres";
import { ORDER_LABEL } from "../planner/names";
import { PROJECT_ROOT } from "../stack/toolchain";
import { cliCommand } from "../cli/command";

const log = (m: string) => process.stderr.write(`[scale-out bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NS = "bench-so";

async function until<T>(what: string, timeoutS: number, probe: () => Promise<T | undefined>, everyMs = 1_000): Promise<T> {
  const end = Date.now() + timeoutS * 1000;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutS} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

interface RunFigures {
  replicas: number;
  orders: number;
  bmis: number;
  allBmisMs: number;
  stacksPerMinute: number;
  lockContention: number;
  stateRows: number;
  stateBytes: number;
  bytesPerStack: number;
  recovery?: { leaseMoveMs: number; scaleUpMs: number; leaseSeconds: number; timeline: TimelineEntry[] };
}

/** A line of the surviving replica's log after the kill, at ms since the kill. */
interface TimelineEntry {
  atMs: number;
  msg: string;
  order?: string;
  action?: string;
  upMs?: number;
}

/** Where the recovery's time went: the survivor's shard, lock and pass lines, and its reconciles of the scaled order. */
function recoveryTimeline(logFile: string, killedAt: number, order: string, untilMs: number): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  for (const text of fs.readFileSync(logFile, "utf8").split("\n")) {
    let l: { time?: string; msg?: string; order?: string; action?: string; upMs?: number };
    try {
      l = JSON.parse(text) as typeof l;
    } catch {
      continue;
    }
    const at = Date.parse(l.time ?? "") - killedAt;
    if (!(at >= 0 && at <= untilMs) || !l.msg) continue;
    if (l.order === order || /shard|lock|pass complete/.test(l.msg)) out.push({ atMs: at, msg: l.msg, order: l.order, action: l.action, upMs: l.upMs });
  }
  return out;
}

function startReplica(env: NodeJS.ProcessEnv, id: string, replicas: number, o: { lease: number; concurrency: number }, url: string, logFile: string): ChildProcess {
  const fd = fs.openSync(logFile, "a");
  const run = cliCommand(["run", "--interval", "30", "--concurrency", String(o.concurrency), "--namespace", NS, "--lease-namespace", NS,
    "--identity", id, "--health-port", "0", "--shards", String(replicas), "--lease-duration", String(o.lease), "--backend-url", url]);
  const child = spawn(run.command, run.args, { cwd: PROJECT_ROOT, env, stdio: ["ignore", fd, fd], detached: true });
  fs.closeSync(fd);
  return child;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // gone
  }
}

async function runWith(replicas: number, o: { burst: number; workers: number; lease: number; concurrency: number; dir: string }): Promise<RunFigures> {
  const dir = path.join(o.dir, `replicas-${replicas}`);
  fs.mkdirSync(dir, { recursive: true });
  const lab = await startLab({ dir: path.join(dir, "lab"), preset: "fast", hosts: o.burst * o.workers + 16 });
  const pg = await startPostgres(path.join(dir, "postgres"));
  const f = lab.fulfillmentClient();
  const kube = new Kube(lab.kubeConfig());
  const children: ChildProcess[] = [];
  try {
    await lab.createNamespace(NS);
    const passphrase = path.join(dir, "passphrase");
    fs.writeFileSync(passphrase, "bench-passphrase", { mode: 0o600 });
    const envOf = (id: string): NodeJS.ProcessEnv => ({ ...process.env, ...lab.productSettings(), BMW_STATE_DIR: path.join(dir, id, "state"),
      BMW_WORK_DIR: path.join(dir, id, "project"), PULUMI_CONFIG_PASSPHRASE_FILE: passphrase, BMW_LOG_LEVEL: "info" });
    const ids = Array.from({ length: replicas }, (_, i) => `replica-${i}`);
    const logs = ids.map((id) => path.join(dir, `${id}.log`));
    ids.forEach((id, i) => children.push(startReplica(envOf(id), id, replicas, o, pg.url, logs[i])));
    const holder = async (s: number) => (await kube.getLease(NS, shardLeaseName("baremetal-workers", s, replicas)))?.spec?.holderIdentity ?? "";
    await until("every shard held", 120, async () => {
      const hs = await Promise.all(Array.from({ length: replicas }, (_, s) => holder(s)));
      return hs.every((h) => h !== "") && new Set(hs).size === replicas ? true : undefined;
    });

    log(`${replicas} replica(s): creating ${o.burst} orders of ${o.workers} worker(s)`);
    const t0 = Date.now();
    const uids = new Map<string, string>();
    for (let k = 0; k < o.burst; k += 10) {
      await Promise.all(Array.from({ length: Math.min(10, o.burst - k) }, async (_, j) => {
        const name = `order-${String(k + j).padStart(3, "0")}`;
        uids.set(name, (await lab.createSampleOrder({ namespace: NS, name, nodeRequests: [{ nodeSet: "compute", numberOfNodes: o.workers, instanceType: "compute" }] })).uid);
      }));
    }
    const live = async () => {
      const by = new Map<string, number>();
      for (const b of await f.bareMetalInstances.listAll(Filter.tenantEquals("system"))) {
        const uid = b.metadata?.labels?.[ORDER_LABEL];
        if (uid && !b.metadata?.deletion_timestamp) by.set(uid, (by.get(uid) ?? 0) + 1);
      }
      return by;
    };
    // A List whose total moves between pages (BMIs being created) is refused by the client: probe again.
    const settledLive = () => live().catch(() => undefined);
    await until("every BMI of the burst", 3_600, async () => {
      const by = await settledLive();
      if (!by) return undefined;
      return [...uids.values()].every((u) => (by.get(u) ?? 0) >= o.workers) ? true : undefined;
    }, 2_000);
    const allBmisMs = Date.now() - t0;
    log(`${replicas} replica(s): every BMI after ${(allBmisMs / 1000).toFixed(0)} s`);

    let recovery: RunFigures["recovery"];
    if (replicas > 1) {
      // kill -9 of replica-0 (its process group: pulumi and plugins with it), then an order of one of its shards is scaled up.
      let victim: [string, string] | undefined;
      for (const [n, u] of uids) if (!victim && (await holder(shardOf(u, replicas))) === "replica-0") victim = [n, u];
      if (!victim) throw new Error("no order on replica-0's shards");
      const [name, uid] = victim;
      const shard = shardOf(uid, replicas);
      killGroup(children[0], "SIGKILL");
      const killed = Date.now();
      await until("the killed replica's shard taken", 120, async () => ((await holder(shard)) !== "replica-0" && (await holder(shard)) !== "" ? true : undefined), 100);
      const leaseMoveMs = Date.now() - killed;
      const before = (await until("a consistent List", 60, settledLive)).get(uid) ?? 0;
      const api = lab.kubeConfig();
      const k8s = await import("@kubernetes/client-node");
      await api.makeApiClient(k8s.CustomObjectsApi).patchNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders",
        namespace: NS, name, body: [{ op: "replace", path: "/spec/nodeRequests/0/numberOfNodes", value: o.workers + 1 }] },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch));
      await until("the scaled order's new BMI", 600, async () => (((await settledLive())?.get(uid) ?? 0) > before ? true : undefined), 500);
      const scaleUpMs = Date.now() - killed;
      recovery = { leaseMoveMs, scaleUpMs, leaseSeconds: o.lease, timeline: recoveryTimeline(logs[1], killed, `${NS}/${name}`, scaleUpMs) };
      log(`recovery: shard ${shard} taken ${leaseMoveMs} ms after the kill; the scaled order's BMI ${scaleUpMs} ms after it`);
      for (const e of recovery.timeline) log(`  +${(e.atMs / 1000).toFixed(1)} s ${e.msg}${e.order ? ` ${e.order}` : ""}${e.action ? ` ${e.action}` : ""}${e.upMs ? ` (up ${e.upMs} ms)` : ""}`);
    }

    const lockContention = logs.map((l) => fs.readFileSync(l, "utf8").split("\n").filter((x) => /currently locked/.test(x)).length).reduce((a, b) => a + b, 0);
    const db = new Client({ connectionString: pg.url });
    await db.connect();
    const row = (await db.query<{ rows: string; bytes: string }>("SELECT count(*) AS rows, coalesce(sum(octet_length(data::text)), 0) AS bytes FROM pulumi_state")).rows[0];
    await db.end();
    return {
      replicas, orders: o.burst, bmis: o.burst * o.workers, allBmisMs, stacksPerMinute: o.burst / (allBmisMs / 60_000), lockContention,
      stateRows: Number(row.rows), stateBytes: Number(row.bytes), bytesPerStack: Number(row.bytes) / o.burst, ...(recovery ? { recovery } : {}),
    };
  } finally {
    for (const c of children) killGroup(c, "SIGTERM");
    await sleep(3_000);
    for (const c of children) killGroup(c, "SIGKILL");
    f.close();
    await pg.stop();
    await lab.stop();
  }
}

function markdown(r: { startedAt: string; options: Record<string, unknown>; machine: Record<string, unknown>; runs: RunFigures[] }): string {
  const [one, two] = r.runs;
  const out = [`# Scale-out bench, ${r.startedAt}`, "", `Machine: ${JSON.stringify(r.machine)}`, "", `Options: ${JSON.stringify(r.options)}`, "",
    "| measure | value | baseline in the same run | ratio |", "|---|---|---|---|"];
  for (const x of r.runs) {
    out.push(`| burst of ${x.orders} orders (${x.bmis} BMIs), ${x.replicas} replica(s) | ${x.stacksPerMinute.toFixed(1)} stacks/min (${(x.allBmisMs / 1000).toFixed(0)} s) | ` +
      `${one === x ? "—" : `1 replica: ${one.stacksPerMinute.toFixed(1)}`} | ${one === x ? "—" : `${(x.stacksPerMinute / one.stacksPerMinute).toFixed(2)}×`} |`);
  }
  for (const x of r.runs) out.push(`| lock contention, ${x.replicas} replica(s) | ${x.lockContention} update(s) refused for a held lock | expected 0 | — |`);
  if (two?.recovery) {
    out.push(`| killed replica: its shard taken | ${(two.recovery.leaseMoveMs / 1000).toFixed(1)} s | Lease ${two.recovery.leaseSeconds} s (bound 2×) | ${(two.recovery.leaseMoveMs / 1000 / two.recovery.leaseSeconds).toFixed(2)}× |`,
      `| killed replica: an order of its shard, scaled up after the kill, has its new BMI | ${(two.recovery.scaleUpMs / 1000).toFixed(1)} s | — | — |`);
  }
  for (const x of r.runs) out.push(`| state in PostgreSQL, ${x.replicas} replica(s) | ${x.stateRows} rows, ${(x.stateBytes / 1024).toFixed(0)} KiB (${(x.bytesPerStack / 1024).toFixed(1)} KiB per stack) | — | — |`);
  return `${out.join("\n")}\n`;
}

async function main(): Promise<void> {
  const a = await yargs(hideBin(process.argv))
    .option("burst", { type: "number", default: 20, describe: "ClusterOrders created at once" })
    .option("workers", { type: "number", default: 1, describe: "workers per order" })
    .option("concurrency", { type: "number", default: 4, describe: "--concurrency (pulumi slots) of each replica" })
    .option("lease", { type: "number", default: 9, describe: "--lease-duration of the replicas (seconds)" })
    .option("replicas", { type: "string", default: "1,2", describe: "replica counts to run, each on a fresh lab" })
    .option("dir", { type: "string", default: path.join(os.tmpdir(), `bmw-bench-scaleout-${process.pid}`) })
    .option("keep", { type: "boolean", default: false, describe: "keep --dir (the labs, the replicas' logs) afterwards" })
    .option("out", { type: "string", default: path.join(PROJECT_ROOT, "bench", "results") })
    .strict().parseAsync();
  const startedAt = new Date().toISOString();
  const runs: RunFigures[] = [];
  for (const r of a.replicas.split(",").map(Number)) runs.push(await runWith(r, { burst: a.burst, workers: a.workers, lease: a.lease, concurrency: a.concurrency, dir: a.dir }));
  const result = { startedAt, options: { burst: a.burst, workers: a.workers, lease: a.lease, concurrency: a.concurrency, replicas: a.replicas },
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? "unknown", memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version }, runs };
  fs.mkdirSync(a.out, { recursive: true });
  const file = path.join(a.out, `scaleout-${startedAt.replace(/[:.]/g, "-")}`);
  fs.writeFileSync(`${file}.json`, `${JSON.stringify(result, null, 2)}\n`);
  fs.writeFileSync(`${file}.md`, markdown(result));
  process.stdout.write(markdown(result));
  if (a.keep) log(`kept ${a.dir}`);
  else fs.rmSync(a.dir, { recursive: true, force: true });
}

main().catch((e) => {
  process.stderr.write(`${String((e as Error)?.stack ?? e)}\n`);
  process.exit(1);
});
