// The pulumi CLI as a child process: run with streamed output and SIGINT on abort, kill a process tree,
// tell lock contention from other failures, and export/import state without decrypting secrets.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { DeploymentStore } from "./locks";
import { DISABLE_BACKUPS_ENV } from "./stateRetention";
import { pulumiEnv, type Toolchain } from "./toolchain";
import { descendants } from "../lib/procfs";

/** The program's environment: its BMW_* settings and a kubeconfig path, never a credential. */
const PROGRAM_ENV_KEY = /^(BMW_[A-Z0-9_]+|KUBECONFIG)$/;

/**
 * The environment of every pulumi process of a stack manager: the toolchain, the backend, the passphrase
 * file (default $PULUMI_CONFIG_PASSPHRASE_FILE), the engine's switches and the program's settings.
 */
export function stackProcessEnv(tc: Toolchain, o: {
  backendUrl: string; passphraseFile?: string; typecheck?: boolean; programEnv: Record<string, string>;
}): Record<string, string> {
  const passphraseFile = o.passphraseFile ?? process.env.PULUMI_CONFIG_PASSPHRASE_FILE;
  if (!passphraseFile && process.env.PULUMI_CONFIG_PASSPHRASE === undefined) {
    throw new Error("no secrets passphrase: set passphraseFile (or PULUMI_CONFIG_PASSPHRASE_FILE)");
  }
  if (passphraseFile && !fs.existsSync(passphraseFile)) throw new Error(`passphrase file ${passphraseFile} does not exist`);
  const rejected = Object.keys(o.programEnv).filter((k) => !PROGRAM_ENV_KEY.test(k));
  if (rejected.length > 0) throw new Error(`envVars accepts only BMW_* keys and KUBECONFIG; rejected: ${rejected.join(", ")}`);
  return pulumiEnv(tc, {
    PULUMI_BACKEND_URL: o.backendUrl,
    ...(passphraseFile ? { PULUMI_CONFIG_PASSPHRASE_FILE: path.resolve(passphraseFile) } : {}),
    PULUMI_NODEJS_TRANSPILE_ONLY: o.typecheck ? "false" : "true",
    [DISABLE_BACKUPS_ENV]: "true",
    ...o.programEnv,
  });
}

/** A failed pulumi process: the message carries its output, `commandResult` its parts (as the Automation API's errors do). */
export class PulumiCommandError extends Error {
  override name = "PulumiCommandError";
  constructor(readonly commandResult: { code: number; stdout: string; stderr: string }, args: string[]) {
    super(`pulumi ${args[0]} failed with exit code ${commandResult.code}\n stdout: ${commandResult.stdout.slice(-4000)}\n stderr: ${commandResult.stderr.slice(-4000)}`);
  }
}

/** Lock contention on any backend (DIY lock files or a service's 409). */
export function isLockedError(e: unknown): boolean {
  const text = e instanceof Error ? `${e.message} ${(e as { commandResult?: { stderr?: string } }).commandResult?.stderr ?? ""}` : String(e);
  return /currently locked by|Another update is currently in progress|\[409\] Conflict/i.test(text);
}

/** Runs the pulumi CLI; output is streamed to onOutput; aborting sends SIGINT (the engine finishes in-flight steps). */
export function runPulumi(bin: string, args: string[], o: {
  cwd: string; env: Record<string, string>; onOutput?: (chunk: string) => void; signal?: AbortSignal; onSpawn?: (child: ChildProcess) => void;
}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      cwd: o.cwd, env: { ...o.env, PULUMI_AUTOMATION_API: "true", PULUMI_DEBUG_COMMANDS: "true" }, stdio: ["ignore", "pipe", "pipe"],
    });
    o.onSpawn?.(child);
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      o.onOutput?.(d);
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const abort = () => child.kill("SIGINT");
    o.signal?.addEventListener("abort", abort, { once: true });
    child.on("error", reject);
    child.on("close", (code) => {
      o.signal?.removeEventListener("abort", abort);
      if (code === 0) resolve(stdout);
      else reject(new PulumiCommandError({ code: code ?? -1, stdout, stderr }, args));
    });
  });
}

/** SIGKILLs a process and every descendant (the language host and provider plugins of a pulumi CLI). */
export function killTree(pid: number): void {
  for (const p of descendants(pid)) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

export interface EncryptedStoreOptions {
  bin: string;
  cwd: string;
  env: Record<string, string>;
  stackName: string;
  /** Where the transient state file's directory is made (the state directory keeps it on the same disk). */
  tmpParent: string;
  /** Called before each pulumi process starts; throws to refuse it. */
  beforeStart: (what: string) => void;
  onSpawn: (child: ChildProcess) => void;
}

/**
 * Export and import of the latest state *without* --show-secrets (the Automation API's export always
 * decrypts): secrets stay ciphertext, through a 0600 file in a 0700 directory that is always removed.
 */
export function encryptedStore(o: EncryptedStoreOptions): DeploymentStore {
  const run = (args: string[]) => new Promise<void>((resolve, reject) => {
    const what = `pulumi ${args.slice(0, 2).join(" ")}`;
    o.beforeStart(what);
    const child = execFile(o.bin, [...args, "--stack", o.stackName, "--non-interactive"],
      { cwd: o.cwd, env: { ...process.env, ...o.env }, maxBuffer: 256 * 1024 * 1024 },
      (err, _stdout, stderr) => (err ? reject(new Error(`${what} --stack ${o.stackName}: ${stderr.trim() || err.message}`)) : resolve()));
    o.onSpawn(child);
  });
  const withFile = async <T>(fn: (file: string) => Promise<T>): Promise<T> => {
    const dir = fs.mkdtempSync(path.join(o.tmpParent, ".export-"));
    try {
      return await fn(path.join(dir, "state.json"));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  return {
    exportStack: () => withFile(async (file) => {
      await run(["stack", "export", "--file", file]);
      fs.chmodSync(file, 0o600);
      const state: unknown = JSON.parse(fs.readFileSync(file, "utf8"));
      if (typeof state !== "object" || state === null || !("version" in state) || typeof state.version !== "number" || !("deployment" in state)) {
        throw new Error(`pulumi stack export --stack ${o.stackName} wrote no {version, deployment} document`);
      }
      return { version: state.version, deployment: state.deployment };
    }),
    importStack: (state) => withFile(async (file) => {
      fs.writeFileSync(file, JSON.stringify(state), { mode: 0o600 });
      await run(["stack", "import", "--file", file]);
    }),
  };
}
