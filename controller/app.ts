// Wiring: builds the one Kubernetes access layer, the one fulfillment client and the stack manager from
// flags and environment, and offers the operators' verbs on top of them (the CLI is a thin shell).
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { FulfillmentClient } from "../clients/fulfillment";
import { Kube, loadKubeConfig } from "../clients/kube";
import { plan as makePlan } from "../planner";
import { COND_APPROVAL_REQUIRED, COND_PINNED, COND_PLAN_DIVERGED, COND_WORKER_SPEC_DRIFT } from "../planner/conditions";
import { APPROVED_PLAN_ANNOTATION, describeChanges, type PlannedChange } from "../planner/changeControl";
import type { ClusterOrder, Plan, PlannerConfig, WorkerDrift } from "../planner/types";
import { type Observation, observe, type OrderRef } from "../io/observe";
import { driftReport, type StatusReport, statusRows, updateFailureRows } from "./statusReport";
import { ObserveCache } from "../io/observeCache";
import { listUnwatchedDigests } from "../io/unwatched";
import { listOrderBmiDigests, listOrderBmis } from "../io/orderBmiDigests";
import { BmiCache } from "../io/bmiCache";
import { hubCapped, observeHubInFlight } from "../io/hubInFlight";
import { HubLedger } from "./hubLedger";
import { pinKey, SettledOrders } from "./settledOrders";
import { StateStoreSettled } from "./settledStore";
import { listHubDigests } from "../io/hubDigest";
import {
  reconcileOrder, type OrderMemory, type ReconcileDeps, type ReconcileResult, type StackRunner, type WorkerDurations,
} from "./reconcile";
import { connectionOptions } from "../providers/fulfillmentConnection";
import { formatPin, parsePin } from "../planner/pin";
import { orderProgram } from "../program/orderProgram";
import { programEnv, type ProgramSettings, type ReconcilerSettings, reconcilerSettings } from "../config/settings";
import { Slots } from "./slots";
import { type HistoryEntry, missingUpdateMessage } from "../stack/history";
import { isLockedError } from "../stack/pulumiProcess";
import type { PreviewResult } from "../stack/operations";
import { StackManager } from "../stack/stacks";
import { RefusedError } from "../lib/refused";
import { approveSavedPreview, saveUpdatePreview } from "./savedPreviews";
import type { SavedPreview } from "../planner/savedPreview";
import type { OrderOwnership } from "./ownership";
import { LEASE_BASE, MEMBER_LABEL, shardHolders } from "./shards";

export interface AppOptions {
  stateDir?: string;
  backendUrl?: string;
  passphraseFile?: string;
  /** The environment the settings are read from (config/settings.ts); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Receives the engine's output of updates, refreshes and destroys (the CLI's progress display). */
  onOutput?: (chunk: string) => void;
  /** Told about every fulfillment-service call attempt ("BareMetalInstances/List", "OK"): the reconciler's metrics. */
  onFulfillmentCall?: (method: string, code: string) => void;
  /** Told of the BMI cache's events (by type) and of its being synced or not (the reconciler's metrics). */
  onBmiCacheEvent?: (type: string) => void;
  onBmiCacheSync?: (synced: boolean) => void;
  /** Bounds the pulumi runs (update, destroy, recovery) of this process: the loop's `--concurrency`. */
  updateSlots?: Slots;
  /** Receives workers' provisioning and Agent-correlation durations (the loop's metrics). */
  durations?: WorkerDurations;
  /** Where reconciles log what they decide and cannot report (the loop's logger); nowhere when absent. */
  log?: ReconcileDeps["log"];
}

export { RefusedError };
export * from "./statusReport";

/** The passphrase file: given (flag or environment), or (for a local state dir only) generated once beside it. */
function passphraseFileFor(s: ReconcilerSettings): string {
  if (s.passphraseFile) return s.passphraseFile;
  if (s.backendUrl) throw new RefusedError("a remote backend needs --passphrase-file (or PULUMI_CONFIG_PASSPHRASE_FILE)");
  const file = `${s.stateDir}.passphrase`;
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, crypto.randomBytes(24).toString("base64"), { mode: 0o600 });
  }
  return file;
}

const PIN_KEY = "pin";

/** The desired set is recorded at the start of every update message: "desired compute=3,gpu=1; ...". */
export function parseDesired(message: string): Record<string, number> | undefined {
  const m = /^desired ([^;]*);/.exec(message);
  if (!m) return undefined;
  const out: Record<string, number> = {};
  for (const part of m[1].split(",").filter((p) => p.trim() !== "")) {
    const kv = /^\s*([^=\s]+)=(\d+)\s*$/.exec(part);
    if (!kv) return undefined;
    out[kv[1]] = Number(kv[2]);
  }
  return out;
}

export class App {
  readonly kube: Kube;
  readonly fulfillment: FulfillmentClient;
  readonly stacks: StackManager;
  /** Every setting of this process, parsed once (config/settings.ts). */
  readonly reconcilerSettings: ReconcilerSettings;
  readonly config: PlannerConfig;
  readonly settings: ProgramSettings;
  /** The program digest, computed once per process (it reads every program file). */
  private digest?: string;
  readonly memory = new Map<string, OrderMemory>();
  readonly observeCache = new ObserveCache();
  /** The hub's order BMIs kept by the service's event stream, for the steady pass (unset: each pass lists them). */
  readonly bmiCache?: BmiCache;
  /** Under a hub-wide cap: every order's creates and deletes in flight (created lazily, once the config is known). */
  private hubLedger?: HubLedger;
  /** Orders a steady timer pass may skip (used by the loop; a reconcile records them). */
  readonly settled: SettledOrders;
  readonly stateDir: string;
  /** A sharded replica's ownership of orders (controller/ownership.ts); unset: this process may act on every order. */
  ownership?: OrderOwnership;
  private readonly onOutput?: (chunk: string) => void;
  private readonly updateSlots?: Slots;
  private readonly durations?: WorkerDurations;
  private readonly log?: ReconcileDeps["log"];

  constructor(opts: AppOptions = {}) {
    const env = opts.env ?? process.env;
    this.env = env;
    const s = reconcilerSettings(env, { stateDir: opts.stateDir, backendUrl: opts.backendUrl, passphraseFile: opts.passphraseFile });
    this.reconcilerSettings = s;
    this.onOutput = opts.onOutput;
    this.updateSlots = opts.updateSlots;
    this.durations = opts.durations;
    this.log = opts.log;
    this.settings = s.program;
    this.config = s.planner;
    this.kube = new Kube(loadKubeConfig(this.settings.kubeconfigPath));
    const onCall = opts.onFulfillmentCall;
    this.fulfillment = new FulfillmentClient({
      ...connectionOptions(this.settings.fulfillment, s.provider),
      // "/osac.private.v1.BareMetalInstances/List" -> "BareMetalInstances/List": a small, fixed label set.
      onCall: onCall && ((method, code) => onCall(method.slice(method.lastIndexOf(".") + 1), code)),
    });
    this.stateDir = s.stateDir;
    this.stacks = this.stackManager({ workDir: s.workDir, stateDir: s.backendUrl ? undefined : this.stateDir, backendUrl: s.backendUrl });
    const store = this.stacks.store;
    // Started by the first pass that asks; a process that never runs the loop never opens the stream.
    this.bmiCache = s.bmiRelistIntervalMs > 0 ? new BmiCache({
      list: () => listOrderBmis(this.fulfillment), events: this.fulfillment.events, relistMs: s.bmiRelistIntervalMs,
      onEvent: opts.onBmiCacheEvent, onSync: opts.onBmiCacheSync,
      ...(opts.log ? { log: opts.log } : {}),
    }) : undefined;
    this.settled = new SettledOrders({
      listBmiDigests: () => (this.bmiCache ? this.bmiCache.digests() : listOrderBmiDigests(this.fulfillment)),
      listHubDigests: () => listHubDigests(this.kube),
      listUnwatchedDigests: () => listUnwatchedDigests({
        listClusterDeployments: () => this.kube.listMetadata("ClusterDeployment"), fulfillment: this.fulfillment, cache: this.observeCache }),
      pinOf: async (ref) => pinKey(await this.runner().pin(ref)),
      resyncMs: s.resyncIntervalMs,
      ...(store ? { store: new StateStoreSettled(store) } : {}),
      context: () => crypto.createHash("sha256")
        .update(JSON.stringify([this.runner().programDigest(), s.resyncIntervalMs, s.refreshIntervalMs])).digest("hex"),
      ...(opts.log ? { log: (msg: string, fields?: Record<string, unknown>) => opts.log?.(msg, fields) } : {}),
    });
  }

  /** The settings and env this process was started with, for a second StackManager (observePreviews). */
  private readonly env: NodeJS.ProcessEnv;

  private stackManager(where: { workDir?: string; stateDir?: string; backendUrl?: string }): StackManager {
    const s = this.reconcilerSettings;
    const env = this.env;
    return new StackManager({
      // Stack config files (Pulumi.<stack>.yaml) go beside Pulumi.yaml, so `pulumi preview` works from the
      // repository root; a pod, whose image is read-only, points BMW_WORK_DIR at its state volume.
      ...where,
      passphraseFile: passphraseFileFor(s),
      envVars: programEnv(this.settings, env),
      historyRetention: s.historyRetention,
      // The program of the loop's updates runs here, with the settings a program process would get and the
      // reconciler's own clients (the same settings made them).
      sharedProviderHost: s.providerHost === "shared",
      log: (message) => this.log?.(message),
      ...(s.programMode === "inline" ? { inlineProgram: (handoff) => orderProgram({ env: programEnv(this.settings, env), handoff,
        clients: { kube: this.kube, fulfillment: this.fulfillment } }) } : {}),
    });
  }

  /**
   * Observe mode's previews run on stacks of their own, in a file backend beside the state directory (or
   * the temporary directory for a remote backend): the backend this controller acts on once switched on
   * gets no stack before its first update, which then adopts the incumbent's workers.
   */
  observePreviews(): StackManager {
    const dir = this.reconcilerSettings.backendUrl ? path.join(os.tmpdir(), "baremetal-workers-observe") : `${this.stateDir}-observe`;
    this.previewStacks ??= this.stackManager({ workDir: path.join(dir, "project"), stateDir: path.join(dir, "state") });
    return this.previewStacks;
  }

  private previewStacks?: StackManager;

  /** Observe mode's preview of the update a plan would run (controller/observeOnly.ts), in an update slot like an update. */
  observePreview(ref: OrderRef, observation: Observation): Promise<PreviewResult> {
    const run = () => this.observePreviews().preview(ref, { observation });
    return this.updateSlots ? this.updateSlots.run(run) : run();
  }

  runner(): StackRunner {
    const stacks = this.stacks;
    const onOutput = this.onOutput;
    const slots = this.updateSlots;
    const inSlot = <T>(fn: () => Promise<T>) => (slots ? slots.run(fn) : fn());
    const recover = async (ref: OrderRef) => {
      const r = await stacks.recover(ref);
      for (const a of r.locks?.cleared ?? []) this.log?.("stale stack lock cleared", { order: `${ref.namespace}/${ref.name}`, reason: a.reason });
      if (r.pendingCleared.length > 0) this.log?.("pending operations of a stopped run cleared", { order: `${ref.namespace}/${ref.name}`,
        pending: r.pendingCleared.map((p) => `${p.type} ${p.urn}`) });
    };
    return {
      up: (ref, o) => inSlot(async () => {
        o.onStart?.();
        await recover(ref);
        return stacks.up(ref, { message: o.message, onOutput, refresh: o.refresh, observation: o.observation });
      }),
      preview: (ref, o) => inSlot(() => stacks.preview(ref, { observation: o.observation })),
      destroy: (ref) => inSlot(async () => {
        await recover(ref);
        await stacks.destroy(ref, { message: "destroy: the ClusterOrder is being deleted", onOutput });
      }),
      async removeStack(ref) {
        await stacks.removeStack(ref);
      },
      // The settings the program parses (config/settings.ts, the planner's config), not the raw environment.
      programDigest: () => (this.digest ??= stacks.programDigest({ settings: this.settings, planner: this.config })),
      stackExists: (ref) => stacks.stackExists(ref),
      async pin(ref) {
        if (!(await stacks.stackExists(ref))) return undefined; // never create a stack just to read config
        const raw = await stacks.getConfig(ref, PIN_KEY);
        if (!raw || raw === "null") return undefined;
        return parsePin(raw);
      },
    };
  }

  reconcileDeps(): ReconcileDeps {
    return {
      kube: this.kube, fulfillment: this.fulfillment, stacks: this.runner(), config: this.config,
      ignitionCaFile: this.settings.ignitionCaFile, memory: this.memory, observeCache: this.observeCache, settled: this.settled,
      ...(hubCapped(this.config) ? { hub: this.hubLedger ??= new HubLedger({ observe: this.hubInFlight, maxAgeMs: this.config.ignitionPollMs,
        ...(this.log ? { log: (m: string, f: Record<string, unknown>) => this.log?.(m, f) } : {}) }) } : {}),
      refreshIntervalMs: this.reconcilerSettings.refreshIntervalMs,
      progressReportMs: this.reconcilerSettings.progressReportMs,
      durations: this.durations,
      ...(this.log ? { log: this.log } : {}),
      ...(this.ownership ? { ownership: this.ownership } : {}),
    };
  }

  /** Drops what this process remembers of the order: another replica may have acted on it since. */
  forgetOrder(ref: OrderRef): void {
    this.memory.delete(`${ref.namespace}/${ref.name}`);
    this.settled.forget(ref);
    this.stacks.forgetRecovered(ref);
  }

  async reconcile(ref: OrderRef, progress: (m: string) => void = () => undefined): Promise<ReconcileResult> {
    const r = await reconcileOrder(this.reconcileDeps(), ref);
    progress(`${ref.namespace}/${ref.name}: ${r.action}`);
    return r;
  }

  /**
   * The engine's preview of the next update, and the plan behind it: its changes by kind, what waits for
   * approval or the cap. `save` records it on the order (planner/savedPreview.ts) for `approve --plan <id>`.
   */
  async preview(ref: OrderRef, opts: { save?: boolean } = {}): Promise<PreviewResult & { plan: Plan; saved?: SavedPreview }> {
    await this.mustExist(ref);
    if (opts.save) return saveUpdatePreview({ kube: this.kube, stacks: this.stacks, observe: (r) => this.observeAndPlan(r) }, ref);
    const plan = await this.currentPlan(ref);
    // A plan that waits for approval is not applied by any update (the program refuses it): there is nothing to preview.
    if (plan.approval) return { changeSummary: {}, stdout: "no update runs while the plan waits for approval (preview --save shows it as approved)\n", steps: [], outputs: {}, plan };
    return { ...(await this.stacks.preview(ref)), plan };
  }

  /** The plan a reconcile would make now (rollback pin included), from a read-only observation. */
  async currentPlan(ref: OrderRef): Promise<Plan> {
    return (await this.observeAndPlan(ref)).plan;
  }

  async observeAndPlan(ref: OrderRef): Promise<{ observation: Observation; plan: Plan }> {
    const pin = await this.runner().pin(ref);
    const observation = await observe({ kube: this.kube, fulfillment: this.fulfillment, config: this.config,
      ignitionCaFile: this.settings.ignitionCaFile, cache: this.observeCache, createCatalogItem: false, hubInFlight: this.hubInFlight }, ref);
    return { observation, plan: makePlan({ ...observation.snapshot, ...(pin ? { pin } : {}) }) };
  }

  /**
   * Approves exactly the changes that wait, named by the fingerprint the operator saw (its first 12
   * characters or more, as preview, status and the ApprovalRequired condition show it). Refused when
   * nothing waits, or when what waits now is something else (it changed since it was looked at).
   */
  async approve(ref: OrderRef, fingerprint: string): Promise<{ fingerprint: string; changes: PlannedChange[] } | { saved: SavedPreview }> {
    const order = await this.mustExist(ref);
    const saved = await approveSavedPreview(this.kube, ref, order, fingerprint);
    if (saved) return { saved };
    const waiting = (await this.currentPlan(ref)).approval;
    if (!waiting) throw new RefusedError(`no planned change of ${ref.namespace}/${ref.name} waits for approval`);
    const named = fingerprint.trim();
    if (named.length < 12 || !waiting.fingerprint.startsWith(named)) {
      throw new RefusedError(`the plan that waits now (${waiting.fingerprint.slice(0, 12)}: ${describeChanges(waiting.changes)}) is not plan ` +
        `${named.slice(0, 12)}; nothing was approved: look at it again (preview, status) and approve it by its fingerprint`);
    }
    await this.kube.patchClusterOrderMetadata(ref, { annotations: { [APPROVED_PLAN_ANNOTATION]: waiting.fingerprint } });
    return waiting;
  }

  /** `leaseNamespace`: where the reconcilers' Leases are; their shard Leases, if any, are reported (who acts on which shard). */
  async status(ref?: OrderRef, opts: { leaseNamespace?: string } = {}): Promise<StatusReport> {
    const orders = ref ? [await this.mustExist(ref)] : await this.kube.listClusterOrders();
    const shards = opts.leaseNamespace
      ? shardHolders(LEASE_BASE, await this.kube.listLeases(opts.leaseNamespace, `${MEMBER_LABEL}=${LEASE_BASE}`).catch(() => []))
      : [];
    const name = (o: (typeof orders)[number]) => `${o.metadata.namespace}/${o.metadata.name}`;
    const drifting = orders.filter((o) => (o.status?.conditions ?? []).some((c) => c.type === COND_WORKER_SPEC_DRIFT && c.status === "True"));
    return {
      workers: orders.flatMap((o) => statusRows(name(o), o.status?.workers ?? [])),
      updateFailures: orders.flatMap((o) => updateFailureRows(name(o), o.status?.conditions)),
      approvals: orders.flatMap((o) => updateFailureRows(name(o), o.status?.conditions, COND_APPROVAL_REQUIRED)),
      pinned: orders.flatMap((o) => updateFailureRows(name(o), o.status?.conditions, COND_PINNED)),
      diverged: orders.flatMap((o) => updateFailureRows(name(o), o.status?.conditions, COND_PLAN_DIVERGED)),
      ...(await driftReport(drifting, (o) => this.driftOf(o))),
      ...(shards.length > 0 ? { shards } : {}),
    };
  }

  /**
   * Per worker, which create-only field differs and how: observed and planned now. Reads only: the
   * observation creates nothing (not even a missing system catalog item).
   */
  private async driftOf(order: ClusterOrder): Promise<WorkerDrift[]> {
    const { snapshot, fulfillmentError } = await observe({ kube: this.kube, fulfillment: this.fulfillment, config: this.config,
      ignitionCaFile: this.settings.ignitionCaFile, cache: this.observeCache, createCatalogItem: false },
    { namespace: order.metadata.namespace, name: order.metadata.name });
    // Without the BMIs there is no drift to compute: say so rather than report none.
    if (snapshot.bmis === undefined) throw new Error(`the fulfillment-service could not be read (${fulfillmentError})`);
    return makePlan(snapshot).drift ?? [];
  }

  async history(ref: OrderRef): Promise<HistoryEntry[]> {
    if (!(await this.stacks.stackExists(ref))) throw new RefusedError(`no stack for ${ref.namespace}/${ref.name} yet`);
    return this.stacks.history(ref);
  }

  async rollback(ref: OrderRef, update: number, progress: (m: string) => void = () => undefined): Promise<{ pin: Record<string, number>; result: ReconcileResult }> {
    const entries = await this.history(ref);
    const entry = entries.find((e) => e.number === update);
    if (!entry) throw new RefusedError(missingUpdateMessage(update, entries));
    if (entry.kind !== "update") throw new RefusedError(`update ${update} is a ${entry.kind}, not an update: nothing to restore`);
    const pin = parseDesired(entry.message);
    if (!pin) throw new RefusedError(`update ${update} carries no recorded desired worker set (message: '${entry.message}')`);
    const order = await this.mustExist(ref);
    const sets = new Set((order.spec.nodeRequests ?? []).map((r) => r.nodeSet));
    const unknown = Object.keys(pin).filter((s) => !sets.has(s));
    if (unknown.length) throw new RefusedError(`update ${update} names node sets the ClusterOrder no longer has: ${unknown.join(", ")}`);
    progress(`pinning ${ref.namespace}/${ref.name} to ${JSON.stringify(pin)}`);
    await this.stacks.setConfig(ref, { [PIN_KEY]: { value: formatPin({ counts: pin, update }) } });
    return { pin, result: await this.applyNow(ref, progress) };
  }

  async unpin(ref: OrderRef, progress: (m: string) => void = () => undefined): Promise<ReconcileResult> {
    await this.stacks.setConfig(ref, { [PIN_KEY]: { value: "null" } });
    return this.applyNow(ref, progress);
  }

  /** Reconciles at once, unless a running reconciler holds the stack: it applies the change itself. */
  private async applyNow(ref: OrderRef, progress: (m: string) => void): Promise<ReconcileResult> {
    this.memory.delete(`${ref.namespace}/${ref.name}`);
    try {
      return await this.reconcile(ref, progress);
    } catch (err) {
      if (!isLockedError(err)) throw err;
      const message = "the stack is being updated by a running reconciler, which applies the change on its next pass";
      progress(message);
      return { action: "requeue", message };
    }
  }

  private readonly hubInFlight = () => observeHubInFlight(this.kube, this.fulfillment, this.config.hubNamespaces);

  private async mustExist(ref: OrderRef) {
    const o = await this.kube.getClusterOrder(ref.namespace, ref.name);
    if (!o) throw new RefusedError(`ClusterOrder ${ref.namespace}/${ref.name} does not exist`);
    return o;
  }

  close(): void {
    this.bmiCache?.close();
    this.stacks.close();
    this.previewStacks?.close();
    this.fulfillment.close();
  }
}

export async function createApp(opts: AppOptions = {}): Promise<App> {
  return new App(opts);
}
