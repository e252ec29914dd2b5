// Starts the simulator as a child process (main.ts under ts-node) and stops it by its PID.
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { SimulatorSeed } from "./seed";

export interface SimulatorProcess {
  port: number;
  address: string;
  pid: number;
  /** SIGTERM, then wait for the exit (state is written before it). */
  stop(): Promise<void>;
}

export interface SpawnOptions {
  seed: SimulatorSeed;
  /** Holds seed.json and the state; reuse it to restart with the same state. */
  stateDir: string;
  port?: number;
  tls?: { certFile: string; keyFile: string };
  startTimeoutMs?: number;
}

export async function spawnSimulator(opts: SpawnOptions): Promise<SimulatorProcess> {
  fs.mkdirSync(opts.stateDir, { recursive: true });
  const seedFile = path.join(opts.stateDir, "seed.json");
  fs.writeFileSync(seedFile, JSON.stringify(opts.seed, null, 1));
  const args = ["-r", "ts-node/register/transpile-only", path.join(__dirname, "main.ts"),
    "--seed", seedFile, "--state-dir", opts.stateDir, "--port", String(opts.port ?? 0)];
  if (opts.tls) args.push("--tls-cert", opts.tls.certFile, "--tls-key", opts.tls.keyFile);
  const child = spawn(process.execPath, args, { cwd: path.resolve(__dirname, "..", ".."), stdio: ["ignore", "pipe", "pipe"] });
  const port = await waitForPort(child, opts.startTimeoutMs ?? 30_000);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    port, address: `127.0.0.1:${port}`, pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGTERM");
      await exited;
    },
  };
}

function waitForPort(child: ChildProcess, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      process.kill(child.pid!, "SIGKILL");
      reject(new Error(`simulator did not start within ${timeoutMs} ms: ${err}`));
    }, timeoutMs);
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n").find((l) => l.includes('"listening"'));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { port: number }).port);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`simulator exited with ${code} before listening: ${err}`));
    });
  });
}
