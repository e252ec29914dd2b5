// One-off comparison on a running lab (e.g. a bench run's, kept with --keep or still running): the
// Agents one reconcile reads, listed for the whole namespace (before 2026-12-03) or by the order's
// labels (`listOrderAgents`), alternating over the lab's orders, in one process.
//   node -r ts-node/register/transpile-only bench/orderAgents.ts <lab dir> [orders]
import { listOrderAgents } from "../io/observe";
import { programSettings } from "../config/settings";
import { Kube, loadKubeConfig } from "../clients/kube";
import { openLab } from "../lab";
import type { ClusterOrder } from "../planner/types";
import { median } from "./stats";

async function main(): Promise<void> {
  const lab = openLab(process.argv[2]);
  const kube = new Kube(loadKubeConfig(programSettings({ ...process.env, ...lab.productSettings() }).kubeconfigPath));
  const orders: ClusterOrder[] = (await kube.listClusterOrders()).slice(0, Number(process.argv[3] ?? 40));
  const namespace = { ms: [] as number[], agents: [] as number[], bytes: [] as number[] };
  const labelled = { ms: [] as number[], agents: [] as number[], bytes: [] as number[] };
  for (const o of orders) {
    for (const [into, read] of [[namespace, () => kube.listAgents(o.metadata.namespace)], [labelled, () => listOrderAgents(kube, o)]] as const) {
      const t0 = performance.now();
      const agents = await read();
      into.ms.push(performance.now() - t0);
      into.agents.push(agents.length);
      into.bytes.push(JSON.stringify(agents).length);
    }
  }
  const row = (name: string, r: typeof namespace) =>
    `| ${name} | ${median(r.ms).toFixed(1)} ms | ${median(r.agents)} | ${(median(r.bytes) / 1024).toFixed(0)} KiB |`;
  process.stdout.write([`${orders.length} orders; medians per reconcile:`, "", "| Agents read | wall time | Agents | JSON |", "|---|---|---|---|",
    row("whole namespace", namespace), row("by the order's labels", labelled), "",
    `ratio of wall time: ${(median(labelled.ms) / median(namespace.ms)).toFixed(2)}×`, ""].join("\n"));
}

main().then(() => process.exit(0), (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
