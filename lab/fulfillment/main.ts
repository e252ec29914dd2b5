// Runs the fulfillment simulator as its own process:
//   ts-node --transpile-only lab/fulfillment/main.ts --seed seed.json --state-dir DIR [--port N]
//     [--tls-cert FILE --tls-key FILE]
// Prints one JSON line {"event":"listening","port":N} on stdout once it serves; stops on SIGTERM/SIGINT
// after writing its state.
import { parseArgs } from "node:util";
import { readSeed } from "./seed";
import { startSimulator } from "./server";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seed: { type: "string" },
      "state-dir": { type: "string" },
      port: { type: "string", default: "0" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
    },
  });
  if (!values.seed || !values["state-dir"]) throw new Error("usage: main.ts --seed FILE --state-dir DIR [--port N]");
  const tls = values["tls-cert"] && values["tls-key"] ? { certFile: values["tls-cert"], keyFile: values["tls-key"] } : undefined;
  const sim = await startSimulator({ seed: readSeed(values.seed), stateDir: values["state-dir"], port: Number(values.port), tls });
  process.stdout.write(`${JSON.stringify({ event: "listening", port: sim.port, pid: process.pid })}\n`);
  const stop = () => void sim.stop().then(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`fulfillment simulator: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
