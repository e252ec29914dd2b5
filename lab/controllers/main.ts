// The lab controllers as their own process:
//   ts-node --transpile-only lab/controllers/main.ts --config <dir>/controllers.json
// Logs JSON lines to stdout (the lab points it at <dir>/logs/controllers.log), prints
// {"event":"ready",...} once the ignition endpoint listens, stops on SIGTERM/SIGINT.
import * as fs from "node:fs";
import { parseArgs } from "node:util";
import pino from "pino";
import { ControllersConfig, startControllers } from "./runtime";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { config: { type: "string" } } });
  if (!values.config) throw new Error("usage: main.ts --config FILE");
  const cfg = JSON.parse(fs.readFileSync(values.config, "utf8")) as ControllersConfig;
  const log = pino({ base: { component: "lab-controllers" } });
  const running = await startControllers(cfg, log);
  process.stdout.write(`${JSON.stringify({ event: "ready", assisted: running.assistedUrl, pid: process.pid })}\n`);
  const stop = () => void running.stop().then(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`lab controllers: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
