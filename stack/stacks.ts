// One Pulumi stack per ClusterOrder, driven through the Automation API's LocalWorkspace on the
// on-disk project (Pulumi.yaml + index.ts at the repository root): the program the reconciler
// applies is exactly the one admins run with `pulumi preview` / `pulumi stack history`. The stack's
// config `clusterOrder` = "namespace/name" tells the program which order it manages; connection
// settings reach the program as BMW_* environment variables.
//
// Work directory. By default the workspace is the repository itself, so Pulumi.<stack>.yaml (config
// and encryption salt) is written next to Pulumi.yaml. A pod's image is read-only, so `workDir` may
// point elsewhere (e.g. the state volume): a Pulumi.yaml copied from the project with `main:` set to
// the program directory is written there, and Pulumi runs the same index.ts.
//
// State on a file backend stays bounded (stack/stateRetention.ts): no checkpoint backup copies, and
// the oldest history entries beyond BMW_HISTORY_RETENTION (default 100) are pruned after each operation.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, Stack } from "@pulumi/pulumi/automation";
import type { OpMap, UpdateKind, UpdateResult } from "@pulumi/pulumi/automation";
import { stackName } from "../planner/names";
import {
  clearStaleLocks, DeploymentStore, forgetLockHolder, LockSweep, PendingOperation, readLocks, recordLockHolder,
  resolvePendingOperations, StaleLockPolicy, stateDirOf,
} from "./locks";
import { DEFAULT_HISTORY_RETENTION, DISABLE_BACKUPS_ENV, prunedCount, pruneStackState, StateSize } from "./stateRetention";
import * as yaml from "js-yaml";
import { NotLeaderError } from "../lib/notLeader";
import { descendants } from "../lib/procfs";
import { programDigest } from "./programDigest";
import { PROJECT_ROOT, pulumiEnv, Toolchain, toolchain } from "./toolchain";

export interface OrderRef {
  namespace: string;
  name: string;
}

export interface StackManagerOptions {
  /** Directory of the program (index.ts; resolves node_modules). Default: the repository root. */
  programDir?: string;
  /** Where Pulumi.yaml and Pulumi.<stack>.yaml live. Default: programDir (the on-disk project). */
  workDir?: string;
  /** Directory of the default file backend (`file://<stateDir>`); created if missing. */
  stateDir?: string;
  /** Any Pulumi DIY backend URL (file://, s3://, ...). Default `file://<stateDir>`. */
  backendUrl?: string;
  /** File holding the secrets passphrase (mounted from a Secret). Default $PULUMI_CONFIG_PASSPHRASE_FILE. */
  passphraseFile?: string;
  /** Environment for the program; only BMW_* keys (and KUBECONFIG, a path) are accepted. */
  envVars?: Record<string, string>;
  /** Engine parallelism for up/refresh/destroy. Default: Pulumi's (4 x cores). */
  parallelism?: number;
  /** Type-check the TypeScript program on every run. Default false (the build type-checks it). */
  typecheck?: boolean;
  /** History entries kept per stack on a file backend. Default: envVars.BMW_HISTORY_RETENTION, else 100. */
  historyRetention?: number;
  toolchain?: Toolchain;
}

/** The leader this process acts for, and how to tell that another leader has stopped acting (run.ts). */
export interface LeaseOwner {
  identity: string;
  isHolderGone: (identity: string) => boolean;
  /** Whether this process leads now (LeaderElector.isLeading); no pulumi process starts while it is false. */
  isLeading: () => boolean;
}

/** Resource changes of an operation, always with the four counts the status and logs use. */
export interface ChangeCounts {
  create: number;
  update: number;
  delete: number;
  replace: number;
  same: number;
}

export interface OperationResult {
  summary: UpdateResult;
  changes: ChangeCounts;
  durationMs: number;
}

export interface UpResult extends OperationResult {
  /** Stack outputs; secret values are replaced by "[secret]". */
  outputs: Record<string, unknown>;
}

export interface RunOptions {
  /** One-line summary of the change, stored as the update message (history shows it). */
  message?: string;
  onOutput?: (chunk: string) => void;
  /** Aborting sends SIGINT: the engine finishes in-flight steps, writes state and unlocks. */
  signal?: AbortSignal;
  /** `up` only: read every resource first (`--refresh`), so drift made outside Pulumi is part of the diff. */
  refresh?: boolean;
}

export interface PreviewResult {
  changeSummary: OpMap;
  /** Human-readable diff (`pulumi preview --diff`, no colour). */
  stdout: string;
}

export interface HistoryEntry {
  /** 1 for the first update of the stack, consecutive, stable when old entries are pruned (the DIY backend reports version 0 for all). */
  number: number;
  /** Same as `number` (Pulumi's own version field is always 0 on a DIY backend). */
  version: number;
  kind: UpdateKind;
  result: UpdateResult;
  message: string;
  startTime: Date;
  endTime?: Date;
  resourceChanges: OpMap;
  /** Config at that update; secret values appear as "[secret]". */
  config: Record<string, { value: string; secret: boolean }>;
}

export interface StackState {
  version: number;
  deployment: unknown;
}

export interface RecoveryReport {
  /** Undefined when the backend is not a file backend (locks cannot be inspected). */
  locks?: LockSweep;
  pendingCleared: PendingOperation[];
}

const PROGRAM_ENV_KEY = /^(BMW_[A-Z0-9_]+|KUBECONFIG)$/;
const HISTORY_PAGE = 100;
const MAX_MESSAGE = 1000;

/** Lock contention on any backend (DIY lock files or a service's 409). */
export function isLockedError(e: unknown): boolean {
  const text = e instanceof Error ? `${e.message} ${(e as { commandResult?: { stderr?: string } }).commandResult?.stderr ?? ""}` : String(e);
  return /currently locked by|Another update is currently in progress|\[409\] Conflict/i.test(text);
}

/** Why `rollback --to <update>` finds no such entry: pruned by the history retention, or never made. */
export function missingUpdateMessage(update: number, entries: HistoryEntry[]): string {
  const newest = entries[0]?.number ?? 0;
  const oldest = entries.at(-1)?.number ?? 1;
  if (Number.isInteger(update) && update >= 1 && update < oldest) {
    return `update ${update} was pruned: the stack keeps its last ${entries.length} updates (${oldest}..${newest}; BMW_HISTORY_RETENTION)`;
  }
  return `update ${update} does not exist (the stack has updates ${entries.length ? `${oldest}..${newest}` : "none"})`;
}

/** Keeps the update message to one line of bounded length. */
export function oneLine(message: string): string {
  const flat = message.replace(/\s*[\r\n]+\s*/g, " ").trim();
  return flat.length > MAX_MESSAGE ? `${flat.slice(0, MAX_MESSAGE - 1)}…` : flat;
}

export function changeCounts(m: OpMap | undefined): ChangeCounts {
  const n = (k: keyof OpMap) => m?.[k] ?? 0;
  return { create: n("create"), update: n("update"), delete: n("delete"), replace: n("replace"), same: n("same") };
}

/** Runs functions one at a time per key, in call order. */
class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(fn);
    this.tails.set(key, next);
    try {
      return await next;
    } finally {
      if (this.tails.get(key) === next) this.tails.delete(key);
    }
  }
}

export class StackManager {
  readonly programDir: string;
  readonly workDir: string;
  readonly backendUrl: string;
  readonly projectName: string;
  private readonly env: Record<string, string>;
  private readonly parallelism?: number;
  private readonly tc: Toolchain;
  private command?: Promise<PulumiCommand>;
  private workspace?: Promise<LocalWorkspace>;
  private readonly stacks = new Map<string, Promise<Stack>>();
  private readonly configCache = new Map<string, { mtimeMs: number; values: Map<string, string | undefined> }>();
  /**
   * Stacks recovered by this process whose operations have all succeeded since: nothing of theirs can have
   * been left half-done, so recover() need not export their state again (a pulumi process per update).
   * A failed operation, or a new process, makes the next recover() look again.
   */
  private readonly known = new Set<string>();
  private projectKeys?: Set<string>;
  /** One operation per stack at a time (mutating ones); stack selection is process-wide. */
  private readonly perStack = new KeyedMutex();
  private readonly selection = new KeyedMutex();
  readonly historyRetention: number;
  private readonly stateSize?: StateSize;
  private owner?: LeaseOwner;
  /** Pulumi processes this manager started that are still running (aborted when leadership is lost). */
  private readonly children = new Set<ChildProcess>();

  constructor(opts: StackManagerOptions = {}) {
    this.tc = opts.toolchain ?? toolchain();
    this.programDir = path.resolve(opts.programDir ?? PROJECT_ROOT);
    this.workDir = path.resolve(opts.workDir ?? this.programDir);
    if (opts.backendUrl) {
      this.backendUrl = opts.backendUrl;
    } else if (opts.stateDir) {
      this.backendUrl = `file://${path.resolve(opts.stateDir)}`;
    } else {
      throw new Error("StackManager needs a stateDir (file backend) or a backendUrl");
    }
    const stateDir = stateDirOf(this.backendUrl);
    if (stateDir) fs.mkdirSync(stateDir, { recursive: true });
    this.historyRetention = opts.historyRetention ?? Number(opts.envVars?.BMW_HISTORY_RETENTION || DEFAULT_HISTORY_RETENTION);
    if (!Number.isInteger(this.historyRetention) || this.historyRetention < 1) {
      throw new Error(`history retention must be a positive integer, got ${opts.historyRetention ?? opts.envVars?.BMW_HISTORY_RETENTION}`);
    }

    const passphraseFile = opts.passphraseFile ?? process.env.PULUMI_CONFIG_PASSPHRASE_FILE;
    if (!passphraseFile && process.env.PULUMI_CONFIG_PASSPHRASE === undefined) {
      throw new Error("no secrets passphrase: set passphraseFile (or PULUMI_CONFIG_PASSPHRASE_FILE)");
    }
    if (passphraseFile && !fs.existsSync(passphraseFile)) throw new Error(`passphrase file ${passphraseFile} does not exist`);

    const extra = opts.envVars ?? {};
    const rejected = Object.keys(extra).filter((k) => !PROGRAM_ENV_KEY.test(k));
    if (rejected.length > 0) throw new Error(`envVars accepts only BMW_* keys and KUBECONFIG; rejected: ${rejected.join(", ")}`);

    this.env = pulumiEnv(this.tc, {
      PULUMI_BACKEND_URL: this.backendUrl,
      ...(passphraseFile ? { PULUMI_CONFIG_PASSPHRASE_FILE: path.resolve(passphraseFile) } : {}),
      PULUMI_NODEJS_TRANSPILE_ONLY: opts.typecheck ? "false" : "true",
      [DISABLE_BACKUPS_ENV]: "true",
      ...extra,
    });
    this.parallelism = opts.parallelism;
    this.projectName = prepareWorkDir(this.programDir, this.workDir);
    if (stateDir) this.stateSize = new StateSize(stateDir, this.projectName);
  }

  /**
   * Makes this process act for a Lease holder: every pulumi process it starts is recorded as that leader's
   * (locks.ts), recover() clears locks of leaders that have lost the Lease at once, and recover, up and
   * destroy refuse (NotLeaderError) unless the owner leads at the moment their pulumi process would start:
   * an update queued for a slot must not run after leadership passed to another replica.
   */
  setLeaseOwner(owner: LeaseOwner | undefined): void {
    this.owner = owner;
  }

  /** Whether this process may run pulumi now: it leads, or acts for no Lease holder (the CLI). */
  leading(): boolean {
    return !this.owner || this.owner.isLeading();
  }

  private assertLeading(what: string, stackName: string): void {
    if (!this.leading()) throw new NotLeaderError(`not the leader: ${what} of stack ${stackName} refused (this replica does not hold the Lease)`);
  }

  /** A failure of an operation during which leadership was lost is the loss of leadership, not the order's failure. */
  private lostLeadership(err: unknown, what: string, stackName: string): unknown {
    if (this.leading() || err instanceof NotLeaderError) return err;
    return new NotLeaderError(`not the leader: ${what} of stack ${stackName} stopped, leadership was lost meanwhile`, { cause: err });
  }

  /**
   * Stops every pulumi process of this manager, for a replica that lost the Lease: SIGINT at once (the engine
   * finishes in-flight steps and unlocks), then the process tree is killed after `killAfterMs`, before the
   * next leader, which waits at least a lease duration (15 s) after our last renewal, may clear our locks.
   * A killed update leaves pending operations that recover() clears; every create is idempotent.
   */
  abortRunning(killAfterMs = 2000): void {
    for (const child of this.children) {
      child.kill("SIGINT");
      const timer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null && child.pid) killTree(child.pid);
      }, killAfterMs);
      timer.unref();
      child.once("close", () => clearTimeout(timer));
    }
  }

  /** Bytes of the file backend's state directory (the bmw_state_bytes gauge); undefined for other backends. */
  stateBytes(): Promise<number> | undefined {
    return this.stateSize?.bytes();
  }

  stackName(ref: OrderRef): string {
    return stackName(ref.namespace, ref.name);
  }

  /** Creates the stack if needed, selects it and records which ClusterOrder it manages. */
  ensureStack(ref: OrderRef): Promise<Stack> {
    const name = this.stackName(ref);
    let s = this.stacks.get(name);
    if (!s) {
      s = this.selection.run("select", async () => {
        const stack = await LocalWorkspace.createOrSelectStack({ stackName: name, workDir: this.workDir }, await this.wsOptions());
        const wanted = `${ref.namespace}/${ref.name}`;
        const current = await stack.getConfig("clusterOrder").then((v) => v.value, () => undefined);
        if (current !== wanted) await stack.setConfig("clusterOrder", { value: wanted });
        return stack;
      });
      this.stacks.set(name, s);
      s.catch(() => this.stacks.delete(name));
    }
    return s;
  }

  async stackExists(ref: OrderRef): Promise<boolean> {
    const name = this.stackName(ref);
    const stateDir = stateDirOf(this.backendUrl);
    if (stateDir) {
      // Look for this stack's checkpoint only: `pulumi stack ls` parses every stack's checkpoint, so one
      // corrupted file would fail the reconcile of every other ClusterOrder too.
      const dirs = [path.join(stateDir, ".pulumi", "stacks", this.projectName), path.join(stateDir, ".pulumi", "stacks")];
      return dirs.some((d) => [".json", ".json.gz"].some((ext) => fs.existsSync(path.join(d, `${name}${ext}`))));
    }
    const ws = await this.ws();
    const list = await ws.listStacks();
    return list.some((s) => s.name === name || s.name.endsWith(`/${name}`));
  }

  /** Sets further stack config (e.g. a pinned desired set); values are plain unless `secret`. */
  async setConfig(ref: OrderRef, values: Record<string, { value: string; secret?: boolean }>): Promise<void> {
    const stack = await this.ensureStack(ref);
    await this.perStack.run(stack.name, () => stack.setAllConfig(
      Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { value: v.value, secret: v.secret ?? false }]))));
    this.configCache.delete(stack.name);
  }

  /**
   * A stack config value. The loop reads the rollback pin on every reconcile, so a plain value is read from
   * the stack's settings file (Pulumi.<stack>.yaml, the documented YAML every `pulumi config set` writes)
   * without a pulumi process; anything else (a secret, a structured value) through `pulumi config get`.
   * Values are cached until the settings file changes.
   */
  async getConfig(ref: OrderRef, key: string): Promise<string | undefined> {
    const name = this.stackName(ref);
    const file = path.join(this.workDir, `Pulumi.${name}.yaml`);
    const mtimeMs = fs.existsSync(file) ? fs.statSync(file).mtimeMs : -1;
    let cached = this.configCache.get(name);
    if (!cached || cached.mtimeMs !== mtimeMs) {
      cached = { mtimeMs, values: new Map() };
      this.configCache.set(name, cached);
    }
    if (cached.values.has(key)) return cached.values.get(key);
    const plain = this.projectDefaults().has(key) ? { known: false } : plainSettingsValue(file, `${this.projectName}:${key}`);
    if (plain.known) {
      cached.values.set(key, plain.value);
      return plain.value;
    }
    const stack = await this.ensureStack(ref);
    const value = await stack.getConfig(key).then((v) => v.value, () => undefined);
    cached.values.set(key, value);
    return value;
  }

  /** Config keys that Pulumi.yaml declares (they may have defaults: read those through the CLI). */
  private projectDefaults(): Set<string> {
    if (!this.projectKeys) {
      const doc = yaml.load(fs.readFileSync(path.join(this.workDir, "Pulumi.yaml"), "utf8")) as { config?: Record<string, unknown> } | null;
      this.projectKeys = new Set(Object.keys(doc?.config ?? {}));
    }
    return this.projectKeys;
  }

  /**
   * `pulumi up` on the order's stack. Run as one CLI process with an engine event log rather than through
   * Stack.up: that also runs `stack output` twice and `stack history` once after every update (measured
   * by `npm run bench`: ~0.9 s and three processes per update), while the event log already holds the
   * change summary and the stack's outputs (secrets masked).
   */
  async up(ref: OrderRef, opts: RunOptions = {}): Promise<UpResult> {
    const stack = await this.ensureStack(ref);
    return this.perStack.run(stack.name, async () => {
      this.assertLeading("up", stack.name);
      const t0 = Date.now();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-up-"));
      const eventLog = path.join(dir, "events.jsonl");
      const args = ["up", "--yes", "--skip-preview", "--color", "never", "--exec-kind", "auto.local", "--event-log", eventLog];
      if (opts.message) args.push("--message", oneLine(opts.message));
      if (opts.refresh) args.push("--refresh");
      if (this.parallelism) args.push("--parallel", String(this.parallelism));
      args.push("--stack", stack.name, "--non-interactive");
      try {
        await this.runCli(stack.name, args, opts);
        const { changes, outputs } = summarizeEventLog(fs.readFileSync(eventLog, "utf8"));
        return { summary: "succeeded", changes: changeCounts(changes), durationMs: Date.now() - t0, outputs };
      } catch (err) {
        this.known.delete(stack.name);
        throw this.lostLeadership(err, "up", stack.name);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
        await this.pruneState(stack.name);
      }
    });
  }

  /** The changes `up` would make, as a readable diff. Takes no lock and writes no state. */
  async preview(ref: OrderRef, opts: { onOutput?: (chunk: string) => void; signal?: AbortSignal } = {}): Promise<PreviewResult> {
    const stack = await this.ensureStack(ref);
    const r = await stack.preview({ diff: true, color: "never", onOutput: opts.onOutput, signal: opts.signal, parallel: this.parallelism });
    return { changeSummary: r.changeSummary, stdout: r.stdout };
  }

  async refresh(ref: OrderRef, opts: RunOptions = {}): Promise<OperationResult> {
    const stack = await this.ensureStack(ref);
    return this.tracked(stack.name, async () => {
      const t0 = Date.now();
      const r = await stack.refresh({
        message: opts.message ? oneLine(opts.message) : undefined, onOutput: opts.onOutput, signal: opts.signal,
        parallel: this.parallelism, color: "never",
      });
      return { summary: r.summary.result, changes: changeCounts(r.summary.resourceChanges), durationMs: Date.now() - t0 };
    });
  }

  /** `pulumi destroy` as one CLI process (like up), so that it is recorded for the Lease holder and abortable. */
  async destroy(ref: OrderRef, opts: RunOptions = {}): Promise<OperationResult> {
    const stack = await this.ensureStack(ref);
    return this.tracked(stack.name, async () => {
      this.assertLeading("destroy", stack.name);
      const t0 = Date.now();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-destroy-"));
      const eventLog = path.join(dir, "events.jsonl");
      const args = ["destroy", "--yes", "--skip-preview", "--color", "never", "--exec-kind", "auto.local", "--event-log", eventLog];
      if (opts.message) args.push("--message", oneLine(opts.message));
      if (this.parallelism) args.push("--parallel", String(this.parallelism));
      args.push("--stack", stack.name, "--non-interactive");
      try {
        await this.runCli(stack.name, args, opts);
        const { changes } = summarizeEventLog(fs.readFileSync(eventLog, "utf8"));
        return { summary: "succeeded" as const, changes: changeCounts(changes), durationMs: Date.now() - t0 };
      } catch (err) {
        throw this.lostLeadership(err, "destroy", stack.name);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
        await this.pruneState(stack.name);
      }
    });
  }

  /**
   * Every retained update of the stack, newest first, numbered from the stack's first update: after pruning,
   * the oldest retained entry keeps its number (pruned + 1).
   */
  async history(ref: OrderRef): Promise<HistoryEntry[]> {
    const stack = await this.ensureStack(ref);
    const stateDir = stateDirOf(this.backendUrl);
    const offset = stateDir ? prunedCount(stateDir, this.projectName, stack.name) : 0;
    const all: Awaited<ReturnType<Stack["history"]>> = [];
    // The CLI pages history 10 at a time unless told otherwise: walk every page.
    for (let page = 1; ; page++) {
      const batch = await stack.history(HISTORY_PAGE, page, false);
      all.push(...batch);
      if (batch.length < HISTORY_PAGE) break;
    }
    return all.map((h, i) => ({
      number: offset + all.length - i,
      version: offset + all.length - i,
      kind: h.kind,
      result: h.result,
      message: h.message,
      startTime: h.startTime,
      endTime: h.endTime,
      resourceChanges: h.resourceChanges ?? {},
      config: Object.fromEntries(Object.entries(h.config ?? {}).map(([k, v]) => [k, { value: String(v.value), secret: v.secret === true }])),
    }));
  }

  async exportStack(ref: OrderRef): Promise<StackState> {
    const stack = await this.ensureStack(ref);
    const d = await stack.exportStack();
    return { version: d.version, deployment: d.deployment as unknown };
  }

  /** Replaces the stack's latest state (takes the stack lock). */
  async importStack(ref: OrderRef, state: StackState): Promise<void> {
    const stack = await this.ensureStack(ref);
    await this.perStack.run(stack.name, async () => {
      try {
        await stack.importStack({ version: state.version, deployment: state.deployment });
      } finally {
        await this.pruneState(stack.name);
      }
    });
  }

  /**
   * Makes a stack usable after its runner died: deletes stale lock files (file backend only; live
   * locks are reported in `locks.held` and left alone) and clears pending operations. Safe to call
   * before every run; it does nothing when nothing is wrong, and does not create a missing stack.
   * See locks.ts for why this never duplicates a BareMetalInstance.
   */
  async recover(ref: OrderRef, policy: StaleLockPolicy = {}): Promise<RecoveryReport> {
    if (this.known.has(this.stackName(ref))) return { pendingCleared: [] };
    if (!this.stacks.has(this.stackName(ref)) && !(await this.stackExists(ref))) return { pendingCleared: [] };
    const stack = await this.ensureStack(ref);
    const owner = this.owner;
    const full: StaleLockPolicy = owner && !policy.isHolderGone ? { ...policy, isHolderGone: owner.isHolderGone } : policy;
    return this.perStack.run(stack.name, async () => {
      this.assertLeading("recovery", stack.name);
      const stateDir = stateDirOf(this.backendUrl);
      const locks = stateDir ? clearStaleLocks(stateDir, this.projectName, stack.name, full) : undefined;
      if (locks && locks.held.length > 0) return { locks, pendingCleared: [] };
      const pendingCleared = await resolvePendingOperations(this.encryptedStore(stack.name));
      if (pendingCleared.length > 0) await this.pruneState(stack.name); // the import added a history entry
      this.known.add(stack.name);
      return { locks, pendingCleared };
    });
  }

  /** Runs a stack operation under the stack's mutex; a failure means the stack must be recovered again. */
  private tracked<T>(name: string, op: () => Promise<T>): Promise<T> {
    return this.perStack.run(name, async () => {
      try {
        return await op();
      } catch (err) {
        this.known.delete(name);
        throw err;
      }
    });
  }

  /** Deletes the stack and its config file; refuses while it has resources unless `force`. */
  async removeStack(ref: OrderRef, opts: { force?: boolean } = {}): Promise<void> {
    const name = this.stackName(ref);
    await this.perStack.run(name, async () => {
      const ws = await this.ws();
      await this.selection.run("select", () => ws.removeStack(name, { force: opts.force }));
      this.stacks.delete(name);
      this.configCache.delete(name);
      this.known.delete(name);
    });
  }

  /**
   * Digest of what an update would run besides the plan: program sources, toolchain versions and the
   * program's parsed settings (stack/programDigest.ts). Reads every program file: callers keep it.
   */
  programDigest(settings: unknown): string {
    return programDigest(this.programDir, this.tc.versions, settings);
  }

  /** The environment every pulumi process gets (for admins' instructions and diagnostics). */
  pulumiEnvironment(): Record<string, string> {
    return { ...this.env };
  }

  private pulumiCommand(): Promise<PulumiCommand> {
    this.command ??= PulumiCommand.get({ root: this.tc.pulumiRoot });
    return this.command;
  }

  /**
   * Export and import of the latest state *without* --show-secrets (the Automation API's export always
   * decrypts): secrets stay ciphertext, through a 0600 file in a 0700 directory that is always removed.
   */
  private encryptedStore(stackName: string): DeploymentStore {
    const run = (args: string[]) => new Promise<void>((resolve, reject) => {
      this.assertLeading(`pulumi ${args.slice(0, 2).join(" ")}`, stackName);
      const child = execFile(path.join(this.tc.pulumiRoot, "bin", "pulumi"), [...args, "--stack", stackName, "--non-interactive"],
        { cwd: this.workDir, env: { ...process.env, ...this.env }, maxBuffer: 256 * 1024 * 1024 },
        (err, _stdout, stderr) => (err ? reject(new Error(`pulumi ${args.slice(0, 2).join(" ")} --stack ${stackName}: ${stderr.trim() || err.message}`)) : resolve()));
      this.track(stackName, child);
    });
    const withFile = async <T>(fn: (file: string) => Promise<T>): Promise<T> => {
      const dir = fs.mkdtempSync(path.join(stateDirOf(this.backendUrl) ?? os.tmpdir(), ".export-"));
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
        return JSON.parse(fs.readFileSync(file, "utf8")) as { version: number; deployment: unknown };
      }),
      importStack: (state) => withFile(async (file) => {
        fs.writeFileSync(file, JSON.stringify(state), { mode: 0o600 });
        await run(["stack", "import", "--file", file]);
      }),
    };
  }

  /** Runs a pulumi command on a stack as a tracked process (see track). */
  private runCli(stackName: string, args: string[], opts: RunOptions): Promise<string> {
    try {
      this.assertLeading(`pulumi ${args[0]}`, stackName);
    } catch (err) {
      return Promise.reject(err);
    }
    return runPulumi(path.join(this.tc.pulumiRoot, "bin", "pulumi"), args, {
      cwd: this.workDir, env: { ...this.env, PULUMI_HOME: this.tc.pulumiHome }, onOutput: opts.onOutput, signal: opts.signal,
      onSpawn: (child) => this.track(stackName, child),
    });
  }

  /**
   * Registers a pulumi process just started: abortable by abortRunning, and, while this process acts for a
   * Lease holder, recorded as that leader's, so that the lock it takes can be judged by the Lease
   * (locks.ts). Written right after the spawn, before the CLI has started far enough to lock.
   */
  private track(stackName: string, child: ChildProcess): void {
    const pid = child.pid;
    if (pid === undefined) return;
    this.children.add(child);
    const stateDir = stateDirOf(this.backendUrl);
    const hostname = os.hostname();
    const owner = this.owner;
    if (stateDir && owner) recordLockHolder(stateDir, { identity: owner.identity, hostname, pid, stack: stackName, startedAt: new Date() });
    child.once("close", () => {
      this.children.delete(child);
      // A killed process leaves its lock: the record stays with it, for the next leader to judge.
      const leftLock = stateDir && readLocks(stateDir, this.projectName, stackName).some((l) => l.pid === pid && l.hostname === hostname);
      if (stateDir && owner && !leftLock) forgetLockHolder(stateDir, hostname, pid);
    });
  }

  /** Applies the history retention after an operation (file backend only) and re-measures the stack's size. */
  private async pruneState(stackName: string): Promise<void> {
    const stateDir = stateDirOf(this.backendUrl);
    if (!stateDir) return;
    try {
      pruneStackState(stateDir, this.projectName, stackName, this.historyRetention);
      await this.stateSize?.stackChanged(stackName);
    } catch (err) {
      // Never fail an operation that ran for the sake of its bookkeeping; the next operation prunes again.
      this.pruneError = err instanceof Error ? err.message : String(err);
    }
  }

  /** The last pruning failure, if any (for diagnostics). */
  pruneError?: string;

  private async wsOptions() {
    return { pulumiCommand: await this.pulumiCommand(), pulumiHome: this.tc.pulumiHome, envVars: this.env };
  }

  private ws(): Promise<LocalWorkspace> {
    this.workspace ??= this.wsOptions().then((o) => LocalWorkspace.create({ workDir: this.workDir, ...o }));
    return this.workspace;
  }
}

/** A failed pulumi process: the message carries its output, `commandResult` its parts (as the Automation API's errors do). */
export class PulumiCommandError extends Error {
  override name = "PulumiCommandError";
  constructor(readonly commandResult: { code: number; stdout: string; stderr: string }, args: string[]) {
    super(`pulumi ${args[0]} failed with exit code ${commandResult.code}\n stdout: ${commandResult.stdout.slice(-4000)}\n stderr: ${commandResult.stderr.slice(-4000)}`);
  }
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

/**
 * The change summary and the root stack's outputs from an engine event log (one JSON event per line).
 * Secret outputs appear masked in events; they are reported as "[secret]".
 */
export function summarizeEventLog(text: string): { changes: OpMap | undefined; outputs: Record<string, unknown> } {
  let changes: OpMap | undefined;
  const outputs: Record<string, unknown> = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let ev: { summaryEvent?: { resourceChanges?: OpMap }; resOutputsEvent?: { metadata?: { type?: string; new?: { outputs?: Record<string, unknown> } } } };
    try {
      ev = JSON.parse(line);
    } catch {
      continue; // a line cut short by a crash: the exit code already says what happened
    }
    if (ev.summaryEvent) changes = ev.summaryEvent.resourceChanges ?? {};
    const md = ev.resOutputsEvent?.metadata;
    if (md?.type === "pulumi:pulumi:Stack") {
      for (const [k, v] of Object.entries(md.new?.outputs ?? {})) outputs[k] = v === "[secret]" ? "[secret]" : v;
    }
  }
  return { changes, outputs };
}

/**
 * A config value as written in a stack settings file: known when the file is absent or parses and the
 * key is missing (no value) or a plain string; unknown (ask the CLI) for secrets, objects or bad YAML.
 */
function plainSettingsValue(file: string, fullKey: string): { known: boolean; value?: string } {
  if (!fs.existsSync(file)) return { known: true };
  let doc: unknown;
  try {
    doc = yaml.load(fs.readFileSync(file, "utf8"));
  } catch {
    return { known: false };
  }
  // A stack settings file that imports an environment gets values from elsewhere too.
  if ((doc as { environment?: unknown } | null)?.environment !== undefined) return { known: false };
  const config = (doc as { config?: unknown } | null)?.config;
  if (config === undefined || config === null) return { known: true };
  if (typeof config !== "object") return { known: false };
  const v = (config as Record<string, unknown>)[fullKey];
  if (v === undefined) return { known: true };
  return typeof v === "string" ? { known: true, value: v } : { known: false };
}

/**
 * Makes workDir a Pulumi project whose program is in programDir and returns the project name.
 * When they are the same directory the on-disk project is used as is.
 */
function prepareWorkDir(programDir: string, workDir: string): string {
  const source = fs.readFileSync(path.join(programDir, "Pulumi.yaml"), "utf8");
  const name = /^name:\s*(\S+)\s*$/m.exec(source)?.[1];
  if (!name) throw new Error(`${programDir}/Pulumi.yaml has no project name`);
  if (workDir !== programDir) {
    fs.mkdirSync(workDir, { recursive: true });
    const withoutMain = source.split("\n").filter((l) => !/^main:/.test(l)).join("\n").trimEnd();
    const text = `${withoutMain}\n# Generated by the reconciler: the program is the on-disk project at main.\nmain: ${programDir}\n`;
    const target = path.join(workDir, "Pulumi.yaml");
    if (!fs.existsSync(target) || fs.readFileSync(target, "utf8") !== text) fs.writeFileSync(target, text);
  }
  return name;
}
