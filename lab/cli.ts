// `lab`: bring the simulated OSAC hub up and down, inspect it, inject fulfillment faults.
//   npm run lab -- up [--dir D] [--timings fast|demo] [--orders N]
//   npm run lab -- status [--output json] | down [--purge] | stats | fault set ... | fault clear
// Exit codes: 0 ok (status: everything running), 1 failure (status: a component is down),
// 2 usage or refused (e.g. a partly running lab), 3 (status) no lab running.
import * as fs from "node:fs";
import * as path from "node:path";
import yargs, { type Argv } from "yargs";
import { hideBin } from "yargs/helpers";
import type { LabFault } from "./labControl";
import type { Lab, LabStatus } from "./index";

interface Common {
  dir?: string;
  output: "text" | "json";
}

function common<T>(y: Argv<T>) {
  return y
    .option("dir", { type: "string", describe: "lab state directory (default $XDG_STATE_HOME or ~/.local/state, /baremetal-workers/lab)" })
    .option("output", { choices: ["text", "json"] as const, default: "text" as const, describe: "output format" });
}

async function labDir(argv: Common): Promise<string> {
  const { defaultLabDir } = await import("./state");
  return argv.dir ?? defaultLabDir();
}

function print(argv: Common, json: unknown, text: string): void {
  process.stdout.write(argv.output === "json" ? `${JSON.stringify(json)}\n` : `${text}\n`);
}

function describeStatus(s: LabStatus): string {
  if (s.state === "absent") return `no lab in ${s.dir}`;
  const rows = s.components.map((c) => `  ${c.name.padEnd(24)} ${(c.alive ? "running" : "DOWN").padEnd(8)} pid ${String(c.pid).padEnd(8)} ${c.address ?? ""}\n` +
    `  ${"".padEnd(24)} log ${c.log}`);
  return [`lab ${s.dir}: ${s.state}${s.mode ? ` (${s.mode})` : ""}`, ...rows].join("\n");
}

function describeLab(lab: Lab, reused: boolean): string {
  return [
    `lab ${reused ? "already running, reused" : "up"}: ${lab.dir}`,
    `  KUBECONFIG=${lab.kubeconfigPath}`,
    `  fulfillment ${lab.fulfillment.address} (${lab.fulfillment.plaintext ? "plaintext" : `TLS, CA ${lab.fulfillment.caFile}`}), admin token file ${lab.fulfillment.tokenFile}`,
    `  assisted-service ${lab.assisted.url} (CA ${lab.assisted.caFile})`,
    `  logs ${lab.logsDir}`,
    ...(lab.postgresUrl ? [`  postgres ${lab.postgresUrl} (baremetal-workers --backend-url '${lab.postgresUrl}')`] : []),
    ...lab.orders.map((o) => `  sample ClusterOrder ${o.namespace}/${o.name} (NodePools ${Object.values(o.nodePools).join(", ")})`),
  ].join("\n");
}

function labSummary(lab: Lab, reused: boolean) {
  return {
    reused, dir: lab.dir, labId: lab.labId, kubeconfig: lab.kubeconfigPath, fulfillment: lab.fulfillment, assisted: lab.assisted,
    ...(lab.postgresUrl ? { postgresUrl: lab.postgresUrl } : {}),
    logsDir: lab.logsDir, timings: lab.timings, orders: lab.orders, status: lab.status(),
  };
}

export function buildLabCli(args: string[]) {
  // `--no-macs` is a flag of its own, not the negation of `--macs`.
  return common(yargs(args).parserConfiguration({ "boolean-negation": false }))
    .scriptName("lab")
    .usage("$0 <command>\n\nThe simulated OSAC hub on loopback: kube-apiserver + etcd, the fulfillment-service " +
      "simulator, the assisted-service and HyperShift/CAPI stand-ins.")
    .command("up", "start every component as a detached process (reuses a running lab, refuses a partly running one)",
      (y) => y
        .option("timings", { choices: ["fast", "demo"] as const, default: "demo" as const, describe: "how long boots, installs and unbinds take" })
        .option("orders", { type: "number", default: 0, describe: "sample ClusterOrders to create (order-1..N)" })
        .option("hosts", { type: "number", default: 16, describe: "hosts in the inventory (3/4 compute, 1/4 gpu)" })
        .option("kubeconfig", { type: "string", describe: "use this apiserver instead of starting one" })
        .option("postgres", { type: "boolean", default: false, describe: "also run PostgreSQL (Debian package) for the postgres:// state backend" }),
      async (argv) => {
        const { startLab, defaultSampleOrders, labStatus } = await import("./index");
        const dir = await labDir(argv);
        const reused = labStatus(dir).state === "running";
        const lab = await startLab({
          dir, preset: argv.timings, hosts: argv.hosts, kubeconfig: argv.kubeconfig, postgres: argv.postgres,
          orders: reused ? [] : defaultSampleOrders(argv.orders),
        });
        print(argv, labSummary(lab, reused), describeLab(lab, reused));
      })
    .command("down", "stop every component by PID (data stays unless --purge)",
      (y) => y.option("purge", { type: "boolean", default: false, describe: "also delete the state directory" }),
      async (argv) => {
        const { stopLab } = await import("./index");
        const dir = await labDir(argv);
        await stopLab(dir);
        if (argv.purge) {
          // As root, the PostgreSQL cluster may live outside the lab's directory (lab/postgres.ts clusterDir).
          const { clusterDir } = await import("./postgres");
          fs.rmSync(clusterDir(path.join(dir, "postgres")), { recursive: true, force: true });
          fs.rmSync(dir, { recursive: true, force: true });
        }
        print(argv, { dir, stopped: true, purged: argv.purge }, `lab stopped: ${dir}${argv.purge ? " (purged)" : ""}`);
      })
    .command("status", "every component: PID alive?, address, log", (y) => y, async (argv) => {
      const { labStatus } = await import("./state");
      const s = labStatus(await labDir(argv));
      print(argv, s, describeStatus(s));
      process.exitCode = s.state === "running" ? 0 : s.state === "degraded" ? 1 : 3;
    })
    .command("stats", "counters of the simulator and the stand-ins", (y) => y, async (argv) => {
      const { openLab } = await import("./index");
      const stats = await openLab(await labDir(argv)).stats();
      print(argv, stats, JSON.stringify(stats, null, 2));
    })
    .command("fault <action>", "inject or clear fulfillment-service faults", (y) => y
      .positional("action", { choices: ["set", "clear"] as const, demandOption: true })
      .option("method", { type: "string", describe: "<Service>/<Method>, e.g. BareMetalInstances/Create, or *" })
      .option("code", { type: "string", describe: "gRPC status name to fail with, e.g. UNAVAILABLE" })
      .option("rate", { type: "number", describe: "probability of failing in [0, 1] (default 1 with --code)" })
      .option("latency", { type: "number", describe: "milliseconds added to each call" })
      .option("times", { type: "number", describe: "apply to the next N calls only" })
      .option("commit-then-drop", { type: "boolean", describe: "perform the call, then answer UNAVAILABLE" })
      .option("stuck-deleting", { type: "boolean", describe: "BMI deletes never complete" })
      .option("no-macs", { type: "boolean", describe: "BMIs reach RUNNING without MACs in status" })
      .option("prefix", { type: "string", default: "", describe: "BMI name prefix for --stuck-deleting/--no-macs (empty = all)" })
      .check((a) => {
        if (a.action === "clear") return true;
        const lifecycle = a["stuck-deleting"] || a["no-macs"];
        if (!a.method && !lifecycle) throw new Error("fault set needs --method, --stuck-deleting or --no-macs");
        if (a.method && lifecycle) throw new Error("--method and --stuck-deleting/--no-macs are separate faults");
        return true;
      }),
    async (argv) => {
      const { openLab } = await import("./index");
      const lab = openLab(await labDir(argv));
      if (argv.action === "clear") {
        await lab.clearFaults();
        return print(argv, { cleared: true }, "faults cleared");
      }
      const fault: LabFault = argv.method
        ? { method: argv.method, code: argv.code, rate: argv.rate, latencyMs: argv.latency, commitThenDrop: argv["commit-then-drop"], times: argv.times }
        : { namePrefix: argv.prefix, stuckDeleting: argv["stuck-deleting"], withholdMacs: argv["no-macs"] };
      await lab.fault(fault);
      print(argv, { set: fault }, `fault set: ${JSON.stringify(fault)}`);
    })
    .demandCommand(1, "name a command: up, down, status, stats or fault")
    .strict()
    .help()
    .fail((msg, err, y) => {
      if (err) {
        process.stderr.write(`lab: ${err.message}\n`);
        process.exit(err.name === "LabError" ? 2 : 1);
      }
      y.showHelp((s: string) => process.stderr.write(`${s}\n\n`));
      process.stderr.write(`${msg}\n`);
      process.exit(2);
    });
}

if (require.main === module) {
  void buildLabCli(hideBin(process.argv)).parseAsync();
}
