// One Pulumi stack per ClusterOrder, driven through the Automation API's LocalWorkspace on the on-disk
// project (Pulumi.yaml + index.ts at the repository root): the program the reconciler applies is exactly the
// one admins run with `pulumi preview` / `pulumi stack history`. The stack's config `clusterOrder` =
// "namespace/name" names the order; connection settings reach the program as BMW_* environment variables.
// State on a file backend stays bounded (stack/stateRetention.ts): no backup copies, history pruned.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { LocalWorkspace, PulumiCommand, Stack } from "@pulumi/pulumi/automation";
import type { OrderRef } from "../io/observe";
import type { HandoffSource } from "../io/handoff";
import { stackName } from "../planner/names";
import { repairBlobAttrs } from "./blobAttrs";
import { changeCounts, type EngineStep, summarizeEventLog } from "./eventLog";
import { type HistoryEntry, oneLine, readHistory } from "./history";
import { KeyedMutex } from "./keyedMutex";
import { type LeaseOwner, LeaderProcesses } from "./leaderProcesses";
import { backendUrlOf, historyRetentionOf, type StackManagerOptions } from "./managerOptions";
import { checkpointExists, clearStaleLocks, resolvePendingOperations, StaleLockPolicy, storedPendingOperations } from "./locks";
import { stateDirOf, stateStoreOf, type StateStore } from "./stateStore";
import { programOfRun, type PulumiProgram, type RunProgram } from "./inlineProgram";
import { openStack, recordClusterOrder } from "./openStack";
import { StackInitializer } from "./stackInit";
import { OperationTmp } from "./operationTmp";
import { SharedProviderHost } from "./sharedProviderHost";
import { programDigest } from "./programDigest";
import { withProviderBundle } from "./providerBundle";
import type { OperationOptions, OperationResult, PreviewResult, RecoveryReport, StackState } from "./operations";
import { encryptedStore, runPulumi, stackProcessEnv } from "./pulumiProcess";
import { prepareWorkDir, SettingsFileCache } from "./settingsFile";
import { prunedCount, pruneStackState, StateSize } from "./stateRetention";
import { PROJECT_ROOT, Toolchain, toolchain } from "./toolchain";

export type { StackManagerOptions } from "./managerOptions";

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
  private readonly settingsFiles: SettingsFileCache;
  /**
   * Stacks recovered by this process whose operations have all succeeded since: nothing of theirs can have
   * been left half-done, so recover() need not export their state again (a pulumi process per update).
   * A failed operation, or a new process, makes the next recover() look again.
   */
  private readonly known = new Set<string>();
  /** One operation per stack at a time (mutating ones); stack selection is process-wide. */
  private readonly perStack = new KeyedMutex();
  private readonly selection = new KeyedMutex();
  private readonly initializer = new StackInitializer();
  readonly historyRetention: number;
  private readonly stateSize?: StateSize;
  /** The backend's blobs (file and postgres:// backends), for locks, retention, size and the loop's settled records. */
  readonly store?: StateStore;
  private readonly processes: LeaderProcesses;
  private readonly inlineProgram?: (handoff: HandoffSource | undefined) => PulumiProgram;
  /** The dynamic-provider host of every update, preview and destroy, when one is shared. */
  readonly providerHost?: SharedProviderHost;
  private readonly operationTmp = new OperationTmp();

  constructor(opts: StackManagerOptions = {}) {
    this.tc = opts.toolchain ?? toolchain();
    this.programDir = path.resolve(opts.programDir ?? PROJECT_ROOT);
    this.workDir = path.resolve(opts.workDir ?? this.programDir);
    this.backendUrl = backendUrlOf(opts);
    const stateDir = stateDirOf(this.backendUrl);
    if (stateDir) fs.mkdirSync(stateDir, { recursive: true });
    this.historyRetention = historyRetentionOf(opts);
    this.env = stackProcessEnv(this.tc, { backendUrl: this.backendUrl, passphraseFile: opts.passphraseFile, typecheck: opts.typecheck,
      programEnv: opts.envVars ?? {} });
    this.parallelism = opts.parallelism;
    this.inlineProgram = opts.inlineProgram;
    this.projectName = prepareWorkDir(this.programDir, this.workDir);
    this.store = stateStoreOf(this.backendUrl);
    this.processes = new LeaderProcesses(this.store, this.projectName);
    this.settingsFiles = new SettingsFileCache(this.workDir, this.projectName);
    if (this.store) this.stateSize = new StateSize(this.store, this.projectName);
    this.providerHost = opts.sharedProviderHost ? new SharedProviderHost({ cwd: this.workDir, log: opts.log,
      env: () => withProviderBundle(this.env, this.tc.cacheDir, this.programDir) }) : undefined;
  }

  /** Stops what this manager keeps running between operations (the shared provider host) and removes its temporary directories. */
  close(): void {
    this.providerHost?.close();
    this.operationTmp.close();
  }

  /**
   * Makes this process act for a Lease holder: every pulumi process it starts is recorded as that holder's
   * (locks.ts), recover() clears locks of holders that have lost the order's Lease at once, and recover, up
   * and destroy refuse (NotLeaderError) unless the owner may act on the order at the moment their pulumi
   * process would start: an update queued for a slot must not run after the order passed to another replica.
   */
  setLeaseOwner(owner: LeaseOwner | undefined): void {
    this.processes.setOwner(owner);
  }

  /**
   * Stops the pulumi processes of this manager (of the orders `which` selects), for a replica that may no
   * longer act on them: SIGINT at once (the engine finishes in-flight steps and unlocks), then the process
   * tree is killed after `killAfterMs`, before the next holder, which waits at least a lease duration (15 s)
   * after our last renewal, may clear our locks. A killed update leaves pending operations that recover()
   * clears; every create is idempotent.
   */
  abortRunning(killAfterMs = 2000, which?: (ref: OrderRef | undefined) => boolean): void {
    this.processes.abortAll(killAfterMs, which);
  }

  /** Forgets that the order's stack was recovered: another replica may have run it since (a shard changed hands). */
  forgetRecovered(ref: OrderRef): void {
    this.known.delete(this.stackName(ref));
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
    this.processes.noteStack(name, ref);
    let s = this.stacks.get(name);
    if (!s) {
      s = this.selection.run("select", async () => {
        const held = this.store ? await checkpointExists(this.store, this.projectName, name) : undefined;
        const stack = await openStack(name, this.workDir, held, () => this.ws(), () => this.wsOptions(), async () => this.store !== undefined &&
          this.initializer.create({ store: this.store, workDir: this.workDir, project: this.projectName, stack: name, env: this.env,
            cliVersion: String((await this.pulumiCommand()).version ?? this.tc.versions.pulumi) }));
        await recordClusterOrder(stack, this.workDir, this.projectName, `${ref.namespace}/${ref.name}`);
        return stack;
      });
      this.stacks.set(name, s);
      s.catch(() => this.stacks.delete(name));
    }
    return s;
  }

  async stackExists(ref: OrderRef): Promise<boolean> {
    const name = this.stackName(ref);
    if (this.store) return checkpointExists(this.store, this.projectName, name);
    const ws = await this.ws();
    const list = await ws.listStacks();
    return list.some((s) => s.name === name || s.name.endsWith(`/${name}`));
  }

  /** Sets further stack config (e.g. a pinned desired set); values are plain unless `secret`. */
  async setConfig(ref: OrderRef, values: Record<string, { value: string; secret?: boolean }>): Promise<void> {
    const stack = await this.ensureStack(ref);
    await this.perStack.run(stack.name, () => stack.setAllConfig(
      Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { value: v.value, secret: v.secret ?? false }]))));
    this.settingsFiles.forget(stack.name);
  }

  /**
   * A stack config value. The loop reads the rollback pin on every reconcile, so a plain value is read from
   * the stack's settings file (Pulumi.<stack>.yaml, the documented YAML every `pulumi config set` writes)
   * without a pulumi process; anything else (a secret, a structured value) through `pulumi config get`.
   * Values are cached until the settings file changes.
   */
  async getConfig(ref: OrderRef, key: string): Promise<string | undefined> {
    const cached = this.settingsFiles.read(this.stackName(ref), key);
    if (cached.known) return cached.value;
    const stack = await this.ensureStack(ref);
    const value = await stack.getConfig(key).then((v) => v.value, () => undefined);
    cached.remember(value);
    return value;
  }

  /**
   * `pulumi up` on the order's stack. Run as one CLI process with an engine event log rather than through
   * Stack.up: that also runs `stack output` twice and `stack history` once after every update (measured
   * by `npm run bench`: ~0.9 s and three processes per update), while the event log already holds the
   * change summary and the stack's outputs (secret values are "[secret]").
   */
  async up(ref: OrderRef, opts: OperationOptions = {}): Promise<OperationResult & { outputs: Record<string, unknown>; steps: EngineStep[] }> {
    const stack = await this.ensureStack(ref);
    return this.perStack.run(stack.name, async () => {
      this.processes.assertLeading("up", stack.name);
      try {
        return await this.runWithEventLog("up", stack.name, opts, ref);
      } catch (err) {
        this.known.delete(stack.name);
        throw err;
      }
    });
  }

  /**
   * What the next `up` would do: `pulumi preview --refresh` of the program `up` runs, as the `--diff` display and
   * as steps. Without an observation the program observes for itself, as in an admin's `pulumi preview`. Writes no state.
   */
  async preview(ref: OrderRef, opts: Pick<OperationOptions, "onOutput" | "signal" | "observation"> = {}): Promise<PreviewResult> {
    const stack = await this.ensureStack(ref);
    const r = await this.runWithEventLog("preview", stack.name, { ...opts, refresh: true }, ref);
    return { changeSummary: r.opMap ?? {}, stdout: r.stdout, steps: r.steps, outputs: r.outputs };
  }

  async refresh(ref: OrderRef, opts: OperationOptions = {}): Promise<OperationResult> {
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
  async destroy(ref: OrderRef, opts: OperationOptions = {}): Promise<OperationResult> {
    const stack = await this.ensureStack(ref);
    return this.tracked(stack.name, async () => {
      this.processes.assertLeading("destroy", stack.name);
      const { summary, changes, durationMs } = await this.runWithEventLog("destroy", stack.name, opts);
      return { summary, changes, durationMs };
    });
  }

  /** `pulumi up|destroy|preview` with an engine event log, which then gives the change summary, the stack's outputs and the steps. */
  private async runWithEventLog(command: "up" | "destroy" | "preview", stackName: string, opts: OperationOptions, ref?: OrderRef) {
    const t0 = Date.now();
    return this.operationTmp.around(async (dir) => {
      const eventLog = path.join(dir, "events.jsonl");
      const args = command === "preview" ? [command, "--diff"] : [command, "--yes", "--skip-preview"];
      args.push("--color", "never", "--event-log", eventLog);
      if (opts.message) args.push("--message", oneLine(opts.message));
      if (command !== "destroy" && opts.refresh) args.push("--refresh");
      if (this.parallelism) args.push("--parallel", String(this.parallelism));
      args.push("--stack", stackName, "--non-interactive");
      let program: RunProgram | undefined;
      try {
        program = await programOfRun({ command, inline: this.inlineProgram, observation: opts.observation, ref, privateDir: dir });
        const run = program;
        const stdout = await run.run((signal) => this.runCli(stackName, [...args, ...run.args], { ...opts, signal }, { ...run.env, TMPDIR: dir }), opts.signal);
        const { changes, outputs, steps } = summarizeEventLog(fs.readFileSync(eventLog, "utf8"));
        return { summary: "succeeded" as const, changes: changeCounts(changes), opMap: changes, durationMs: Date.now() - t0, outputs, steps, stdout };
      } catch (err) {
        throw this.processes.lostLeadership(err, command, stackName);
      } finally {
        program?.close();
        if (command !== "preview") await this.pruneState(stackName);
      }
    });
  }

  /**
   * Every retained update of the stack, newest first, numbered from the stack's first update: after pruning,
   * the oldest retained entry keeps its number (pruned + 1).
   */
  async history(ref: OrderRef): Promise<HistoryEntry[]> {
    const stack = await this.ensureStack(ref);
    const offset = this.store ? await prunedCount(this.store, this.projectName, stack.name) : 0;
    return readHistory(stack, offset);
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
    const holderGone = this.processes.isHolderGone(stack.name);
    const full: StaleLockPolicy = holderGone && !policy.isHolderGone ? { ...policy, isHolderGone: holderGone } : policy;
    return this.perStack.run(stack.name, async () => {
      this.processes.assertLeading("recovery", stack.name);
      const stateDir = stateDirOf(this.backendUrl);
      const attrsRemoved = stateDir ? repairBlobAttrs(stateDir, this.projectName, stack.name) : [];
      const locks = this.store ? await clearStaleLocks(this.store, this.projectName, stack.name, full) : undefined;
      if (locks && locks.held.length > 0) return { locks, pendingCleared: [], attrsRemoved };
      // Read from the checkpoint when it can be: an export through pulumi only when something is pending.
      const stored = this.store ? await storedPendingOperations(this.store, this.projectName, stack.name) : undefined;
      const pendingCleared = stored?.length === 0 ? [] : await resolvePendingOperations(this.encryptedStore(stack.name));
      if (pendingCleared.length > 0) await this.pruneState(stack.name); // the import added a history entry
      this.known.add(stack.name);
      return { locks, pendingCleared, attrsRemoved };
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
      this.settingsFiles.forget(name);
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
  private encryptedStore(stackName: string) {
    return encryptedStore({
      bin: path.join(this.tc.pulumiRoot, "bin", "pulumi"), cwd: this.workDir, env: this.env, stackName,
      tmpParent: stateDirOf(this.backendUrl) ?? os.tmpdir(),
      beforeStart: (what) => this.processes.assertLeading(what, stackName),
      onSpawn: (child) => this.processes.track(stackName, child),
    });
  }

  /** Runs a pulumi command on a stack as a tracked process (see LeaderProcesses.track). */
  private async runCli(stackName: string, args: string[], opts: OperationOptions, programEnv: Record<string, string> = {}): Promise<string> {
    const env = await withProviderBundle(this.env, this.tc.cacheDir, this.programDir);
    const attach = this.providerHost ? await this.providerHost.attachEnv() : {};
    if (args[0] !== "preview") this.processes.assertLeading(`pulumi ${args[0]}`, stackName); // a preview only looks
    return runPulumi(path.join(this.tc.pulumiRoot, "bin", "pulumi"), args, {
      cwd: this.workDir, env: { ...env, ...programEnv, ...attach, PULUMI_HOME: this.tc.pulumiHome }, onOutput: opts.onOutput, signal: opts.signal,
      onSpawn: (child) => this.processes.track(stackName, child),
    }).finally(() => this.processes.settled());
  }

  /** Applies the history retention after an operation (file backend only) and re-measures the stack's size. */
  private async pruneState(stackName: string): Promise<void> {
    if (!this.store) return;
    try {
      await pruneStackState(this.store, this.projectName, stackName, this.historyRetention);
      await this.stateSize?.stackChanged(stackName);
    } catch {
      // Never fail an operation that ran for the sake of its bookkeeping; the next operation prunes again.
    }
  }

  private async wsOptions() {
    const envVars = await withProviderBundle(this.env, this.tc.cacheDir, this.programDir);
    return { pulumiCommand: await this.pulumiCommand(), pulumiHome: this.tc.pulumiHome, envVars };
  }

  private ws(): Promise<LocalWorkspace> {
    this.workspace ??= this.wsOptions().then((o) => LocalWorkspace.create({ workDir: this.workDir, ...o }));
    return this.workspace;
  }
}
