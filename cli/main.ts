// `baremetal-workers`: the operators' verbs. run (the loop), reconcile/preview/status/history/rollback/
// unpin on one ClusterOrder's stack, and the lab. Exit codes: 0 ok, 1 failure, 2 usage or refused.
import yargs, { type Argv } from "yargs";
import { hideBin } from "yargs/helpers";
import { parseOrderRef } from "../io/observe";
import { LOOP_DEFAULTS, loopSettings } from "../config/loopSettings";
import type { App, AppOptions, StatusReport } from "../controller/app";
import { describeChanges } from "../planner/changeControl";
import type { Plan } from "../planner/types";

interface CommonArgs {
  "state-dir"?: string;
  "backend-url"?: string;
  "passphrase-file"?: string;
  output: "table" | "json";
  quiet?: boolean;
}

function appOptions(argv: CommonArgs): AppOptions {
  return {
    stateDir: argv["state-dir"], backendUrl: argv["backend-url"], passphraseFile: argv["passphrase-file"],
    // The engine's own progress lines go to stderr; stdout stays for results.
    onOutput: argv.quiet ? undefined : (chunk: string) => process.stderr.write(chunk),
  };
}

function common<T>(y: Argv<T>) {
  return y
    .option("state-dir", { type: "string", describe: "directory of the file state backend (default $BMW_STATE_DIR or ~/.local/state/baremetal-workers/state)" })
    .option("backend-url", { type: "string", describe: "any Pulumi DIY backend URL instead of the file backend (e.g. s3://bucket)" })
    .option("passphrase-file", { type: "string", describe: "file holding the state passphrase (default $PULUMI_CONFIG_PASSPHRASE_FILE)" })
    .option("output", { choices: ["table", "json"] as const, default: "table" as const, describe: "output format of listing commands" })
    .option("quiet", { type: "boolean", default: false, describe: "no progress output of updates on stderr" });
}

function orderArg<T>(y: Argv<T>) {
  return y.positional("order", { type: "string", demandOption: true, describe: "the ClusterOrder, <namespace>/<name>" });
}

/** Progress of long operations on stderr, so stdout stays machine-readable. */
function progress(msg: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

async function withApp<R>(argv: CommonArgs, fn: (app: import("../controller/app").App) => Promise<R>): Promise<R> {
  const { createApp } = await import("../controller/app");
  const app = await createApp(appOptions(argv));
  try {
    return await fn(app);
  } finally {
    app.close();
  }
}

type Cli = ReturnType<typeof common<object>>;

/** `run`: the reconciler's loop; its flags are validated by config/loopSettings.ts. */
function runCommand(cli: Cli): Cli {
  return cli
    .command("run", "run the reconciliation loop (timer + watches, leader election, /metrics, /healthz, /readyz)",
      (y) => y
        .option("namespace", { type: "string", array: true, describe: "only ClusterOrders of these namespaces" })
        .option("interval", { type: "number", default: LOOP_DEFAULTS.intervalSeconds, describe: "seconds between timer ticks" })
        .option("concurrency", { type: "number", default: LOOP_DEFAULTS.concurrency, describe: "stacks updated in parallel (pulumi runs)" })
        .option("reconcile-concurrency", { type: "number",
          describe: `orders observed and planned in parallel (default ${LOOP_DEFAULTS.reconcileConcurrency}); at most --concurrency of them run pulumi at once` })
        .option("health-port", { type: "number", default: LOOP_DEFAULTS.healthPort, describe: "port of /metrics, /healthz, /readyz (loopback unless --health-host)" })
        .option("health-host", { type: "string", default: LOOP_DEFAULTS.healthHost })
        .option("lease-namespace", { type: "string", default: LOOP_DEFAULTS.leaseNamespace, describe: "namespace of the leader-election Lease" })
        .option("identity", { type: "string", describe: "this replica's identity in the Lease (default: POD_NAME, else hostname_pid)" })
        .option("lease-duration", { type: "number", default: LOOP_DEFAULTS.leaseDurationSeconds,
          describe: "seconds a Lease holds without renewal; a replica stops acting 2/3 of it after its last renewal" })
        .option("shards", { type: "number",
          describe: "split the orders into this many shards, one Lease each, shared by every replica started with the same count (default: one Lease, one acting replica)" })
        .option("mode", { type: "string", choices: ["act", "observe"], default: "act",
          describe: "observe: plan and report per order where the plan differs from the recorded workers, and change nothing" }),
      async (argv) => {
        const { runLoop } = await import("../controller/run");
        const loop = loopSettings({ namespace: argv.namespace, interval: argv.interval, concurrency: argv.concurrency,
          reconcileConcurrency: argv["reconcile-concurrency"], healthPort: argv["health-port"], healthHost: argv["health-host"],
          leaseNamespace: argv["lease-namespace"], identity: argv.identity, mode: argv.mode, shards: argv.shards,
          leaseDuration: argv["lease-duration"] });
        await runLoop({ ...appOptions(argv), onOutput: undefined, ...loop });
      });
}

/** The verbs on one ClusterOrder's stack, and `status`. */
function orderCommands(cli: Cli): Cli {
  return cli
    .command("reconcile <order>", "reconcile one ClusterOrder once (observe, plan, pulumi up if needed, report)",
      (y) => orderArg(y),
      (argv) => withApp(argv, async (app) => {
        const ref = parseOrderRef(argv.order);
        progress(`reconciling ${argv.order}`);
        const r = await app.reconcile(ref, progress);
        if (argv.output === "json") console.log(JSON.stringify({ action: r.action, message: r.message, changes: r.up?.changes }));
        else console.log(`${argv.order}: ${r.action}${r.message ? ` (${r.message})` : ""}` +
          (r.up ? `; changes ${JSON.stringify(r.up.changes)} in ${Math.round(r.up.durationMs / 1000)} s` : ""));
      }))
    .command("preview <order>", "refresh, then show what the next `pulumi up` of the order's stack does (writes nothing, unless --save)",
      (y) => orderArg(y).option("save", { type: "boolean", default: false,
        describe: "record this preview on the order; once approved (approve --plan <id>) the next update makes exactly its steps or none" }),
      (argv) => withApp(argv, (app) => previewCommand(app, argv)))
    .command("status [order]", "table of workers (phase, attempts, next retry) and failing stack updates; who holds each shard",
      (y) => y.positional("order", { type: "string" })
        .option("lease-namespace", { type: "string", default: LOOP_DEFAULTS.leaseNamespace, describe: "namespace of the reconcilers' Leases" }),
      (argv) => withApp(argv, async (app) => {
        const report = await app.status(argv.order ? parseOrderRef(argv.order) : undefined, { leaseNamespace: argv["lease-namespace"] });
        if (argv.output === "json") console.log(JSON.stringify(report));
        else console.log(formatStatus(report));
      }))
    .command("history <order>", "the stack's updates with our one-line summary of each", (y) => orderArg(y),
      (argv) => withApp(argv, async (app) => {
        const h = await app.history(parseOrderRef(argv.order));
        if (argv.output === "json") console.log(JSON.stringify(h));
        else console.log(formatTable(h.map((e) => ({ update: e.number, kind: e.kind, result: e.result, started: new Date(e.startTime).toISOString().slice(0, 19).replace("T", " "), summary: e.message }))));
      }))
    .command("rollback <order>", "re-apply the desired worker set recorded with an earlier update and pin it until `unpin`",
      (y) => orderArg(y).option("to", { type: "number", demandOption: true, describe: "the update number (see `history`)" }),
      (argv) => withApp(argv, async (app) => {
        const r = await app.rollback(parseOrderRef(argv.order), argv.to, progress);
        console.log(`${argv.order}: pinned to update ${argv.to} (${Object.entries(r.pin).map(([k, v]) => `${k}=${v}`).join(", ")}); ` +
          `run \`baremetal-workers unpin ${argv.order}\` to follow the ClusterOrder again`);
      }))
    .command("approve <order>", "approve exactly the changes that wait for approval, by the fingerprint you saw; changes that moved since are refused",
      (y) => orderArg(y).option("plan", { type: "string", demandOption: true,
        describe: "the fingerprint preview, status or the ApprovalRequired condition shows (12+ characters)" }),
      (argv) => withApp(argv, async (app) => {
        const approved = await app.approve(parseOrderRef(argv.order), argv.plan);
        if (argv.output === "json") console.log(JSON.stringify(approved));
        else if ("saved" in approved) {
          console.log(`${argv.order}: saved preview ${approved.saved.id.slice(0, 12)} approved (${approved.saved.steps.length} step(s)); ` +
            "the next update makes exactly those steps, or none (PlanDiverged)");
        } else {
          console.log(`${argv.order}: changes ${approved.fingerprint.slice(0, 12)} approved: ${describeChanges(approved.changes)}; the next reconcile applies them`);
        }
      }))
    .command("unpin <order>", "drop a rollback pin: the stack follows the ClusterOrder's requests again", (y) => orderArg(y),
      (argv) => withApp(argv, async (app) => {
        await app.unpin(parseOrderRef(argv.order), progress);
        console.log(`${argv.order}: unpinned`);
      }));
}

export function buildCli(args: string[]) {
  const cli = common(yargs(args))
    .scriptName("baremetal-workers")
    .usage("$0 <command>\n\nProvisions bare-metal workers of OSAC ClusterOrders as Pulumi resources.");
  return orderCommands(runCommand(cli))
    .command("lab <action>", "the embedded lab: up | down | status | demo", (y) => y
      .positional("action", { choices: ["up", "down", "status", "demo"] as const, demandOption: true })
      .option("dir", { type: "string", describe: "lab state directory (default ~/.local/state/baremetal-workers/lab)" })
      .option("timings", { choices: ["fast", "demo"] as const, default: "demo" as const }),
    async (argv) => {
      const { labCommand } = await import("./labCommand");
      await labCommand(argv.action, { dir: argv.dir, timings: argv.timings, output: argv.output });
    })
    .demandCommand(1, "name a command; --help lists them")
    .strict()
    .fail((msg, err, y) => {
      if (err) {
        process.stderr.write(`error: ${err.message}\n`);
        process.exit(err.name === "RefusedError" ? 2 : 1);
      }
      process.stderr.write(`${y.help()}\n\n${msg}\n`);
      process.exit(2);
    })
    .help();
}

async function previewCommand(app: App, argv: CommonArgs & { order: string; save: boolean }): Promise<void> {
  progress(`previewing ${argv.order}`);
  const p = await app.preview(parseOrderRef(argv.order), { save: argv.save });
  if (argv.output === "json") {
    console.log(JSON.stringify({ changes: p.changeSummary, steps: p.steps, planFingerprint: p.outputs.fingerprint,
      planned: p.plan.changes ?? [], waiting: p.plan.approval, createsDeferred: p.plan.createsDeferred ?? 0,
      deletesDeferred: p.plan.deletesDeferred ?? 0, saved: p.saved }));
    return;
  }
  process.stdout.write(formatPlanned(argv.order, p.plan) + p.stdout);
  if (p.saved) {
    process.stdout.write(`\nsaved preview ${p.saved.id.slice(0, 12)} (${p.saved.steps.length} step(s)); ` +
      `approve it with: baremetal-workers approve ${argv.order} --plan ${p.saved.id.slice(0, 12)}\n`);
  }
}

/** What `preview` prints above the engine's diff: the plan's changes by kind, what waits for approval and for the cap. */
export function formatPlanned(order: string, plan: Plan): string {
  const lines = [`planned changes: ${plan.changes?.length ? describeChanges(plan.changes) : "none"}`];
  if (plan.approval) {
    lines.push(`waiting for approval (changes ${plan.approval.fingerprint.slice(0, 12)}): ${describeChanges(plan.approval.changes)}`,
      `  nothing below is applied until: baremetal-workers approve ${order} --plan ${plan.approval.fingerprint.slice(0, 12)}`);
  }
  if (plan.createsDeferred) lines.push(`${plan.createsDeferred} more create(s) wait for the in-flight caps (BMW_MAX_CREATES_IN_FLIGHT, BMW_HUB_MAX_CREATES_IN_FLIGHT)`);
  if (plan.deletesDeferred) lines.push(`${plan.deletesDeferred} delete(s) wait for the in-flight caps (BMW_MAX_DELETES_IN_FLIGHT, BMW_HUB_MAX_DELETES_IN_FLIGHT)`);
  return lines.join("\n") + "\n\n";
}

/** The workers table, then the orders whose updates fail, whose changes wait for approval, that are pinned or held by a saved preview; drift. */
export function formatStatus(report: StatusReport): string {
  const out = [formatTable(report.workers.map((r) => ({ ...r })))];
  if (report.updateFailures.length > 0) {
    out.push("", "UPDATE FAILED", formatTable(report.updateFailures.map((f) => ({ order: f.order, since: f.since, reason: f.reason, message: f.message }))));
  }
  if (report.drift.length > 0) {
    out.push("", "CREATE-ONLY DRIFT (live BMIs kept; new incarnations get the requested value)",
      formatTable(report.drift.map((d) => ({ order: d.order, worker: d.slot, bmi: d.bmiName, field: d.field, live: d.live, requested: d.requested }))));
  }
  if (report.driftUnknown?.length) {
    out.push("", "DRIFT UNKNOWN", formatTable(report.driftUnknown.map((u) => ({ order: u.order, reason: u.message }))));
  }
  if (report.approvals?.length) out.push("", "WAITING FOR APPROVAL", formatTable(report.approvals.map((a) => ({ order: a.order, since: a.since, waiting: a.message }))));
  if (report.pinned?.length) out.push("", "PINNED BY A ROLLBACK", formatTable(report.pinned.map((a) => ({ order: a.order, since: a.since, pin: a.message }))));
  if (report.diverged?.length) {
    out.push("", "HELD: THE PLAN DIVERGED FROM ITS APPROVED SAVED PREVIEW", formatTable(report.diverged.map((a) => ({ order: a.order, since: a.since, why: a.message }))));
  }
  if (report.shards?.length) {
    out.push("", "SHARDS (replica acting on each)", ...report.shards.map((s) => `shard ${s.shard}/${s.shards}: ${s.holder || "(released)"}` +
      (s.renewTime ? `, renewed ${s.renewTime}` : "")));
  }
  return out.join("\n");
}

export function formatTable(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return "(none)";
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown) => (v === undefined || v === null ? "-" : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i])).join("  ").trimEnd();
  return [line(cols.map((c) => c.toUpperCase())), ...rows.map((r) => line(cols.map((c) => cell(r[c]))))].join("\n");
}

/** Runs the CLI on `argv` (node, script, arguments...); cli/launch.js calls it from the prebuilt bundle. */
export function main(argv: string[] = process.argv): void {
  void buildCli(hideBin(argv)).parseAsync();
}

if (require.main === module) main();
