// The reconciler as a real child process (`baremetal-workers run`), in its own process group so a test
// can kill it (and its pulumi children) with SIGKILL the way a node failure would.
import { spawn, type ChildProcess, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT_ROOT } from "../../stack/toolchain";
import { runTs, type ChildResult } from "./run";
import { cliCommand } from "../../cli/command";

export interface ReconcilerProcess {
  child: ChildProcess;
  pid: number;
  logFile: string;
  /** SIGKILL to the whole process group (reconciler, pulumi, language host, providers). */
  kill9(): void;
  stop(): Promise<void>;
  exited(): boolean;
}

/** Whether this process may give a child a host name of its own (a UTS namespace: root, or CAP_SYS_ADMIN). */
export function canSetHostname(): boolean {
  try {
    execFileSync("unshare", ["--uts", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * `hostname`: the reconciler (and its pulumi) sees this host name, as a pod of its own would (needs
 * canSetHostname()); the pid stays the child's (unshare and sh exec).
 */
export function startReconciler(env: NodeJS.ProcessEnv, args: string[], logFile: string, opts: { hostname?: string } = {}): ReconcilerProcess {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const fd = fs.openSync(logFile, "a");
  const run = cliCommand(["run", "--health-port", "0", ...args]);
  const command = [run.command, ...run.args];
  const argv = opts.hostname ? ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', opts.hostname, ...command] : command;
  const child = spawn(argv[0], argv.slice(1), { cwd: PROJECT_ROOT, env, stdio: ["ignore", fd, fd], detached: true });
  fs.closeSync(fd);
  const pid = child.pid!;
  let exited = false;
  child.on("exit", () => (exited = true));
  return {
    child, pid, logFile,
    kill9: () => {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // already gone
      }
    },
    stop: async () => {
      if (exited) return;
      try {
        process.kill(-pid, "SIGTERM");
      } catch {
        return;
      }
      const deadline = Date.now() + 60_000;
      while (!exited && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      if (!exited) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // gone
        }
      }
    },
    exited: () => exited,
  };
}

/** PIDs of `pulumi` processes in a process group (an update in flight). */
export function pulumiPids(pgid: number): number[] {
  try {
    const out = execFileSync("ps", ["-o", "pid=,pgid=,comm=", "-e"], { encoding: "utf8" });
    return out.split("\n").map((l) => l.trim().split(/\s+/)).filter((f) => f.length >= 3 && Number(f[1]) === pgid && f[2] === "pulumi").map((f) => Number(f[0]));
  } catch {
    return [];
  }
}

/** Runs one CLI command (`baremetal-workers <args>`) to completion. */
export function cli(env: NodeJS.ProcessEnv, args: string[], timeoutMs = 240_000): Promise<ChildResult> {
  return runTs("cli/main.ts", args, env, timeoutMs);
}
