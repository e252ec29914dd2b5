// `baremetal-workers lab ...` hands over to the lab's own CLI (and the demo script) as a child process:
// product code never imports the lab, it only starts it.
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { PROJECT_ROOT } from "../stack/toolchain";

export interface LabCommandOptions {
  dir?: string;
  timings?: "fast" | "demo";
  output?: "table" | "json";
}

export async function labCommand(action: "up" | "down" | "status" | "demo", opts: LabCommandOptions): Promise<void> {
  const script = action === "demo" ? path.join(PROJECT_ROOT, "scripts", "demo.ts") : path.join(PROJECT_ROOT, "lab", "cli.ts");
  const args: string[] = action === "demo" ? [] : [action];
  if (opts.dir) args.push("--dir", opts.dir);
  if (opts.timings && action !== "down" && action !== "status") args.push("--timings", opts.timings);
  if (opts.output === "json" && action === "status") args.push("--output", "json");
  const r = spawnSync(process.execPath, ["-r", "ts-node/register/transpile-only", script, ...args], { cwd: PROJECT_ROOT, stdio: "inherit" });
  if (r.status !== 0) process.exitCode = r.status ?? 1;
}
