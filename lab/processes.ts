// Detached child processes of the lab: TypeScript entry points run with the project's Node under
// ts-node, each with its own log file; liveness and stopping by PID only (never by name).
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT_ROOT } from "../stack/toolchain";

export function alive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (exited, not yet reaped by its parent) answers kill(0) but is dead.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}

/** Starts `node -r ts-node/register/transpile-only <entry> ...args` in its own session, output appended to logFile. */
export function spawnTs(entry: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = process.env): number {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const out = fs.openSync(logFile, "a");
  const child = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", path.join(PROJECT_ROOT, entry), ...args], {
    cwd: PROJECT_ROOT, detached: true, stdio: ["ignore", out, out], env,
  });
  fs.closeSync(out);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start ${entry}`);
  return child.pid;
}

export function tail(file: string, lines = 30): string {
  try {
    return fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** Waits for a JSON line with this `event` in logFile (written after `offset`); fails if pid exits first. */
export async function waitForEvent(logFile: string, offset: number, event: string, pid: number, timeoutMs: number): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let text = "";
    try {
      text = fs.readFileSync(logFile, "utf8").slice(offset);
    } catch {
      // not created yet
    }
    for (const line of text.split("\n")) {
      if (!line.includes(`"event":"${event}"`)) continue;
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        // a partial line; read again
      }
    }
    if (!alive(pid)) throw new Error(`process ${pid} exited before '${event}'; log ${logFile}:\n${tail(logFile)}`);
    if (Date.now() > deadline) throw new Error(`process ${pid} not '${event}' within ${timeoutMs} ms; log ${logFile}:\n${tail(logFile)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function logSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** SIGTERM, then SIGKILL after graceMs; resolves once the process is gone. */
export async function stopPid(pid: number | undefined, graceMs = 10_000): Promise<void> {
  if (!pid || !alive(pid)) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const until = Date.now() + graceMs;
  while (alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  if (alive(pid)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  while (alive(pid) && Date.now() < until + 5_000) await new Promise((r) => setTimeout(r, 50));
}
