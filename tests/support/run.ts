// Runs a TypeScript entry point in a child Node process (same Node as the tests) and parses its JSON line.
import { execFile } from "node:child_process";
import * as path from "node:path";
import { PROJECT_ROOT } from "../../stack/toolchain";

export interface ChildResult {
  stdout: string;
  stderr: string;
  code: number;
}

export function runTs(script: string, args: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 240_000): Promise<ChildResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["-r", "ts-node/register/transpile-only", path.resolve(PROJECT_ROOT, script), ...args],
      { cwd: PROJECT_ROOT, env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? 1) : 0;
        resolve({ stdout, stderr, code: typeof code === "number" ? code : 1 });
      },
    );
  });
}

export async function runTsJson<T>(script: string, args: string[], env?: NodeJS.ProcessEnv): Promise<T> {
  const r = await runTs(script, args, env);
  if (r.code !== 0) throw new Error(`${script} ${args[0] ?? ""} exited ${r.code}\n${r.stderr}\n${r.stdout}`);
  const last = r.stdout.trim().split("\n").pop() ?? "";
  return JSON.parse(last) as T;
}
