// One dynamic-provider host for every pulumi process of a stack manager. Left to itself, the engine starts
// a host per update: a Node process that loads the providers' logic before its first call (a fifth of a
// burst's CPU, and time before the first Create). An engine whose environment has
// PULUMI_DEBUG_PROVIDERS=pulumi-nodejs:<port> attaches to a host already listening there instead, and
// leaves it running when it ends. The SDK's host keeps nothing between calls but the providers it has
// evaluated (by their text, the same for every stack) and the dynamic providers' config, which ours never
// set, so the engines of different stacks can share one. Like every host the engine starts, it listens on
// loopback only.
import { type ChildProcess, spawn } from "node:child_process";
import * as path from "node:path";
import * as readline from "node:readline";
import { NODE_HEAP_FLAGS } from "../lib/nodeHeapFlags";
import { PROJECT_ROOT } from "./toolchain";

export interface SharedProviderHostOptions {
  /** The host script; default providers/hostLaunch.js, the host our pulumi processes' engines start. */
  script?: string;
  cwd: string;
  /** The environment of the stack manager's pulumi processes, which a host the engine started would get. */
  env: () => Promise<Record<string, string>>;
  /** How long the host may take to print its port. */
  startTimeoutMs?: number;
  /** How long updates start their own hosts after a failed start before the next try (default 60 s). */
  retryAfterMs?: number;
  /** Where its stderr, a failed start and its exit are reported (warnings all). */
  log?: (message: string) => void;
}

/** The environment variable through which the engine attaches to a running provider. */
export const ATTACH_ENV = "PULUMI_DEBUG_PROVIDERS";

export class SharedProviderHost {
  private running?: Promise<number>;
  private child?: ChildProcess;
  private closed = false;
  private retryAt = 0;

  constructor(private readonly opts: SharedProviderHostOptions) {}

  /**
   * The environment that makes an engine attach to the host, which is started first when it is not running.
   * Empty when it cannot start: the engine then starts its own host, as without this.
   */
  async attachEnv(): Promise<Record<string, string>> {
    // After a failed start, updates start their own hosts for a while rather than each wait for another try.
    if (this.closed || Date.now() < this.retryAt) return {};
    this.running ??= this.start();
    try {
      return { [ATTACH_ENV]: `pulumi-nodejs:${await this.running}` };
    } catch (err) {
      this.retryAt = Date.now() + (this.opts.retryAfterMs ?? 60_000);
      this.opts.log?.(`the shared provider host did not start; each update starts its own: ${String(err)}`);
      return {};
    }
  }

  /** The host's pid while it runs (tests, the bench's process accounting). */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /** Stops the host; engines attached to it lose their provider, as when a host the engine started is killed. */
  close(): void {
    this.closed = true;
    this.child?.kill("SIGTERM");
    this.child = undefined;
    this.running = undefined;
  }

  private async start(): Promise<number> {
    const env = await this.opts.env();
    // A placeholder for the engine address the SDK's host requires as its argument and never uses.
    const script = this.opts.script ?? path.join(PROJECT_ROOT, "providers", "hostLaunch.js");
    const child = spawn(process.execPath, [...NODE_HEAP_FLAGS, script, "127.0.0.1:0"], {
      cwd: this.opts.cwd, env: { ...env, BMW_SHARED_PROVIDER_HOST: "1" }, stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
    const forget = () => {
      if (this.child !== child) return;
      this.child = undefined;
      this.running = undefined; // the next update starts a new host
    };
    child.on("exit", (code, signal) => {
      if (this.child === child) this.opts.log?.(`the shared provider host exited (${signal ?? `code ${code}`}); the next update starts another`);
      forget();
    });
    // Its stderr is what a host's stderr is to the engine: the providers' own warnings.
    readline.createInterface({ input: child.stderr! }).on("line", (line) => this.opts.log?.(`provider host: ${line}`));
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no port within ${this.opts.startTimeoutMs ?? 30_000} ms`)), this.opts.startTimeoutMs ?? 30_000);
      const lines = readline.createInterface({ input: child.stdout! });
      lines.once("line", (line) => {
        clearTimeout(timer);
        const port = Number(line.trim());
        if (Number.isInteger(port) && port > 0) resolve(port);
        else reject(new Error(`it printed ${JSON.stringify(line.slice(0, 200))} where its port belongs`));
      });
      child.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`it exited (${signal ?? `code ${code}`}) before it listened`));
      });
    }).catch((err: unknown) => {
      forget();
      child.kill("SIGKILL");
      throw err;
    });
    // The host must not keep this process alive, and ends when this process ends (hostLaunch.js: its stdin closes).
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as { unref?: () => void } | null)?.unref?.();
    return port;
  }
}
