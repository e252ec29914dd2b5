// The README's main job: bring up the lab, run the reconciler against it, and walk one ClusterOrder with
// workers in two node sets through Ready, scale-up, scale-down and deletion while printing a live
// progress table. Ends by saying where the state, the logs and the stack history are.
//   npm run demo [-- --dir <lab dir>] [-- --timings fast|demo]
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { hideBin } from "yargs/helpers";
import yargs from "yargs";
import { defaultLabDir, startLab } from "../lab";
import type { ClusterOrder } from "../planner/types";
import { PROJECT_ROOT } from "../stack/toolchain";
import { cliCommand } from "../cli/command";

const NS = "demo";
const NAME = "demo-cluster";

function table(o: ClusterOrder | undefined): string {
  if (!o) return "  (ClusterOrder gone)";
  const s = o.status ?? {};
  const head = `  desired ${s.desiredWorkers ?? "-"}  current ${s.currentWorkers ?? "-"}  ready ${s.readyWorkers ?? "-"}  phase ${s.phase ?? "-"}`;
  const rows = (s.workers ?? []).map((w) => `  ${w.name.padEnd(10)} ${w.nodeSet.padEnd(8)} ${w.phase.padEnd(16)} attempt ${String(w.attemptCount ?? 0).padEnd(3)} ${w.bareMetalInstance?.name ?? ""}` +
    (w.lastFailureReason ? `  (${w.lastFailureReason})` : ""));
  const conds = (s.conditions ?? []).filter((c) => c.status === "True" && c.type !== "InfraEnvReady" && c.type !== "Managed").map((c) => `  ! ${c.type}: ${c.message}`);
  return [head, ...rows, ...conds].join("\n");
}

async function main(): Promise<void> {
  const argv = await yargs(hideBin(process.argv))
    .option("dir", { type: "string", default: defaultLabDir() })
    .option("timings", { choices: ["fast", "demo"] as const, default: "demo" as const })
    .option("timeout", { type: "number", default: 900, describe: "seconds allowed for each stage" })
    .strict().help().parseAsync();
  process.stdout.write(`starting the lab in ${argv.dir} (first start: ~20 s)\n`);
  const lab = await startLab({ dir: argv.dir, preset: argv.timings });
  const stateDir = path.join(lab.dir, "reconciler-state");
  const passphrase = path.join(lab.dir, "reconciler-state.passphrase");
  if (!fs.existsSync(passphrase)) fs.writeFileSync(passphrase, "lab-demo-passphrase", { mode: 0o600 });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...lab.productSettings(),
    BMW_STATE_DIR: stateDir,
    PULUMI_CONFIG_PASSPHRASE_FILE: passphrase,
  };
  const logFile = path.join(lab.logsDir, "reconciler.log");
  const historyFile = path.join(lab.dir, "demo-history.txt");
  const log = fs.openSync(logFile, "a");
  const run = cliCommand(["run", "--interval", "10", "--namespace", NS, "--lease-namespace", NS, "--health-port", "0"]);
  const reconciler = spawn(run.command, run.args, { cwd: PROJECT_ROOT, env, stdio: ["ignore", log, log] });
  process.stdout.write(`reconciler pid ${reconciler.pid}, log ${logFile}\n`);

  const kc = lab.kubeConfig();
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const get = async (): Promise<ClusterOrder | undefined> => {
    try {
      return (await api.getNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", namespace: NS, plural: "clusterorders", name: NAME })) as ClusterOrder;
    } catch {
      return undefined;
    }
  };
  const stage = async (title: string, done: (o: ClusterOrder | undefined) => boolean) => {
    process.stdout.write(`\n== ${title}\n`);
    const deadline = Date.now() + argv.timeout * 1000;
    let last = "";
    for (;;) {
      if (reconciler.exitCode !== null) throw new Error(`the reconciler exited (${reconciler.exitCode}); see ${logFile}`);
      const o = await get();
      const t = table(o);
      if (t !== last) process.stdout.write(`[${new Date().toISOString().slice(11, 19)}]\n${t}\n`);
      last = t;
      if (done(o)) return;
      if (Date.now() > deadline) throw new Error(`stage '${title}' did not finish within ${argv.timeout} s; see ${logFile}`);
      await new Promise((r) => setTimeout(r, 2_000));
    }
  };
  const setCount = (index: number, n: number) => api.patchNamespacedCustomObject({
    group: "osac.openshift.io", version: "v1alpha1", namespace: NS, plural: "clusterorders", name: NAME,
    body: [{ op: "replace", path: `/spec/nodeRequests/${index}/numberOfNodes`, value: n }],
  }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch));
  const settled = (ready: number) => (o: ClusterOrder | undefined) =>
    o?.status?.readyWorkers === ready && (o.status.workers ?? []).length === ready;

  try {
    await lab.createNamespace(NS);
    if (!(await get())) {
      await lab.createSampleOrder({ namespace: NS, name: NAME, nodeRequests: [
        { nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }, { nodeSet: "gpu", numberOfNodes: 1, instanceType: "gpu" }] });
    }
    await stage("ClusterOrder demo/demo-cluster: 2 compute + 1 gpu workers go to Ready", settled(3));
    await setCount(0, 3);
    await stage("scale up: compute 2 -> 3", settled(4));
    await setCount(0, 2);
    await stage("scale down: compute 3 -> 2 (CAPI unbinds one Agent; its worker goes Unbinding -> Deleting)", settled(3));
    // The stack's history (our one-line summary per update), kept in a file: deleting the order removes its stack.
    const h = cliCommand(["history", `${NS}/${NAME}`, "--quiet"]);
    const history = spawnSync(h.command, h.args, { cwd: PROJECT_ROOT, env, encoding: "utf8" });
    fs.writeFileSync(historyFile, history.stdout);
    process.stdout.write(`\n== stack history of ${NS}/${NAME} (also in ${historyFile})\n${history.stdout}`);
    await api.deleteNamespacedCustomObject({ group: "osac.openshift.io", version: "v1alpha1", namespace: NS, plural: "clusterorders", name: NAME });
    await stage("delete the ClusterOrder: the finalizer deletes every BMI, then lets go", (o) => o === undefined);
  } finally {
    reconciler.kill("SIGTERM");
  }
  process.stdout.write([
    "",
    "done.",
    `  stack state (file backend): ${stateDir}`,
    `  reconciler log:             ${logFile}`,
    `  lab logs:                   ${lab.logsDir}`,
    `  stack history:              ${historyFile} (the order's stack was removed with the order; for a live order:`,
    `                              BMW_STATE_DIR=${stateDir} PULUMI_CONFIG_PASSPHRASE_FILE=${passphrase} npm run cli -- history <ns/name>)`,
    `  stop the lab:               npm run lab -- down --dir ${lab.dir}`,
    "",
  ].join("\n"));
}

main().catch((err: Error) => {
  process.stderr.write(`demo failed: ${err.message}\n`);
  process.exit(1);
});
