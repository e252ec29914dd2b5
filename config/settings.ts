// Every setting of the three processes, parsed and validated here only. The reconciler, the program
// (index.ts, run by `pulumi up` or an admin's `pulumi preview`) and the provider host read the same
// BMW_* variables through the same functions, so a value means the same in each; the reconciler hands
// them on as environment variables (programEnv), which carry file paths and numbers, never a token or a
// passphrase. A bad value stops the process at start-up with the variable's name.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { plannerConfigFromEnv } from "../planner/config";
import type { PlannerConfig } from "../planner/types";
import { type Env, flag, integer, oneOf, optionalInteger, optionalString, requiredString, SettingsError } from "./envValues";

export { type Env, SettingsError } from "./envValues";

/** Where and how to reach the fulfillment-service: file paths only, never a token. */
export interface FulfillmentConnection {
  /** host:port of the private API. */
  address: string;
  /** CA bundle of the service (TLS); system roots when absent. */
  caFile?: string;
  /** File holding the bearer token; read on every call. */
  tokenFile: string;
  /** Loopback labs only. */
  plaintext?: boolean;
}

/** What the program needs to reach the hub and the service (also part of the program digest). */
export interface ProgramSettings {
  kubeconfigPath: string;
  fulfillment: FulfillmentConnection;
  ignitionCaFile?: string;
}

/** What the provider host reads: its connections come from the resources' inputs, not from here. */
export interface ProviderSettings {
  /** Per-call deadline of the fulfillment client (BMW_FULFILLMENT_DEADLINE_MS); the client's own default when unset. */
  fulfillmentDeadlineMs?: number;
  /** The hub's kubeconfig (BMW_KUBECONFIG, else KUBECONFIG), for a Delete whose state records no guard. */
  hubKubeconfigPath?: string;
}

/** The settings of the program side: the program itself, and every client it builds. */
export interface Settings {
  program: ProgramSettings;
  planner: PlannerConfig;
  provider: ProviderSettings;
  /** Bound of every Kubernetes request (BMW_KUBE_TIMEOUT_MS). */
  kubeTimeoutMs: number;
}

/** Flags of the CLI, which win over the environment. */
export interface ReconcilerOverrides {
  stateDir?: string;
  backendUrl?: string;
  passphraseFile?: string;
}

export interface ReconcilerSettings extends Settings {
  /** Directory of the file state backend (also where a local passphrase is generated). */
  stateDir: string;
  /** A Pulumi DIY backend URL instead of the file backend in stateDir. */
  backendUrl?: string;
  /** The state passphrase file (--passphrase-file, else PULUMI_CONFIG_PASSPHRASE_FILE); undefined: generate one locally. */
  passphraseFile?: string;
  /** Where the stacks' Pulumi.yaml and settings files are written (BMW_WORK_DIR); the project root when unset. */
  workDir?: string;
  /** How often an unchanged order's stack is updated with `--refresh` (BMW_REFRESH_INTERVAL_MS). */
  refreshIntervalMs: number;
  /**
   * Longest time a settled order goes without being compared with its hub objects and the inputs nothing
   * watches (BMW_RESYNC_INTERVAL_MS; 0: every timer pass observes every order in full). Watch events and BMI
   * changes end a settled state at once.
   */
  resyncIntervalMs: number;
  /** How often a running update reports progress on the order (BMW_PROGRESS_REPORT_MS; 0: never). */
  progressReportMs: number;
  /**
   * Where the program of the loop's updates runs (BMW_PROGRAM_MODE): `inline`, inside the reconciler, served
   * to each update's CLI; or `process`, a Node program process per update, as an admin's `pulumi up` runs it.
   */
  programMode: ProgramMode;
  /**
   * Which dynamic-provider host the loop's updates use (BMW_PROVIDER_HOST): `shared`, one for all of them, kept
   * running beside the reconciler (stack/sharedProviderHost.ts); or `per-update`, one the engine starts for each.
   */
  providerHost: ProviderHostMode;
  /** History entries kept per stack (BMW_HISTORY_RETENTION). */
  historyRetention: number;
  /** How often the reconciler returns the C heap's free pages to the system (BMW_MEMORY_TRIM_INTERVAL_MS; 0: never; lib/memoryTrim.ts). */
  memoryTrimIntervalMs: number;
  /**
   * How often the BMI cache kept by the service's event stream lists every BMI again (BMW_BMI_RELIST_INTERVAL_MS;
   * io/bmiCache.ts): the longest a lost event can leave it stale. 0: no cache, every timer pass lists the BMIs.
   */
  bmiRelistIntervalMs: number;
}

export const DEFAULT_KUBE_TIMEOUT_MS = 30_000;
export const DEFAULT_REFRESH_INTERVAL_MS = 3_600_000;
export const DEFAULT_PROGRESS_REPORT_MS = 10_000;
export const DEFAULT_RESYNC_INTERVAL_MS = 600_000;
export const DEFAULT_HISTORY_RETENTION = 100;
export const DEFAULT_MEMORY_TRIM_INTERVAL_MS = 60_000;
export const DEFAULT_BMI_RELIST_INTERVAL_MS = 600_000;
export const PROGRAM_MODES = ["inline", "process"] as const;
export type ProgramMode = (typeof PROGRAM_MODES)[number];
export const PROVIDER_HOST_MODES = ["shared", "per-update"] as const;
export type ProviderHostMode = (typeof PROVIDER_HOST_MODES)[number];

function existing(name: string, file: string): string {
  if (!fs.existsSync(file)) throw new SettingsError(`${name} ${file} does not exist`);
  return file;
}

function kubeconfigOf(env: Env): string | undefined {
  return optionalString(env, "BMW_KUBECONFIG") ?? optionalString(env, "KUBECONFIG");
}

export function programSettings(env: Env = process.env): ProgramSettings {
  const kubeconfigPath = kubeconfigOf(env);
  if (!kubeconfigPath) throw new SettingsError("BMW_KUBECONFIG (or KUBECONFIG) must name the hub's kubeconfig file");
  const tokenFile = existing("BMW_FULFILLMENT_TOKEN_FILE",
    requiredString(env, "BMW_FULFILLMENT_TOKEN_FILE", "the file holding the fulfillment-service token"));
  const plaintext = flag(env, "BMW_FULFILLMENT_PLAINTEXT");
  const caFile = optionalString(env, "BMW_FULFILLMENT_CA_FILE");
  if (!plaintext && !caFile) {
    throw new SettingsError("BMW_FULFILLMENT_CA_FILE must name the CA bundle of the fulfillment-service " +
      "(or set BMW_FULFILLMENT_PLAINTEXT=true for a loopback lab)");
  }
  const address = requiredString(env, "BMW_FULFILLMENT_ADDRESS", "host:port of the fulfillment-service private API");
  existing(env.BMW_KUBECONFIG ? "BMW_KUBECONFIG" : "KUBECONFIG", kubeconfigPath);
  if (caFile) existing("BMW_FULFILLMENT_CA_FILE", caFile);
  const ignitionCaFile = optionalString(env, "BMW_IGNITION_CA_FILE");
  if (ignitionCaFile) existing("BMW_IGNITION_CA_FILE", ignitionCaFile);
  return { kubeconfigPath, fulfillment: { address, tokenFile, caFile, plaintext }, ignitionCaFile };
}

export function providerSettings(env: Env = process.env): ProviderSettings {
  const out: ProviderSettings = {};
  const deadline = optionalInteger(env, "BMW_FULFILLMENT_DEADLINE_MS", 1);
  if (deadline !== undefined) out.fulfillmentDeadlineMs = deadline;
  const kubeconfig = kubeconfigOf(env);
  if (kubeconfig) out.hubKubeconfigPath = kubeconfig;
  return out;
}

export function kubeTimeoutMs(env: Env = process.env): number {
  return integer(env, "BMW_KUBE_TIMEOUT_MS", DEFAULT_KUBE_TIMEOUT_MS, 1);
}

export function historyRetention(env: Env = process.env): number {
  return integer(env, "BMW_HISTORY_RETENTION", DEFAULT_HISTORY_RETENTION, 1);
}

/** The planner's timings and limits (its own table of BMW_* overrides); here too an empty value is unset. */
export function plannerSettings(env: Env = process.env): PlannerConfig {
  return plannerConfigFromEnv(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== "")));
}

/** The program side's settings (index.ts). */
export function settings(env: Env = process.env): Settings {
  return { program: programSettings(env), planner: plannerSettings(env), provider: providerSettings(env), kubeTimeoutMs: kubeTimeoutMs(env) };
}

export function defaultStateDir(env: Env = process.env): string {
  return optionalString(env, "BMW_STATE_DIR")
    ?? path.join(optionalString(env, "XDG_STATE_HOME") ?? path.join(os.homedir(), ".local", "state"), "baremetal-workers", "state");
}

/**
 * BMW_BACKEND_URL_FILE: a file holding the backend URL (a Secret's: a postgres:// URL carries the database
 * password), read once; the URL reaches pulumi in its environment, never on a command line or in a log.
 */
function backendUrlFromFile(env: Env): string | undefined {
  const file = optionalString(env, "BMW_BACKEND_URL_FILE");
  if (!file) return undefined;
  const url = fs.readFileSync(existing("BMW_BACKEND_URL_FILE", file), "utf8").trim();
  if (url === "") throw new SettingsError(`BMW_BACKEND_URL_FILE ${file} is empty`);
  return url;
}

/** The reconciler's settings (and the CLI's): the program side's, where its stacks live, and its timings. */
export function reconcilerSettings(env: Env = process.env, flags: ReconcilerOverrides = {}): ReconcilerSettings {
  const passphraseFile = flags.passphraseFile || optionalString(env, "PULUMI_CONFIG_PASSPHRASE_FILE");
  if (passphraseFile) existing(flags.passphraseFile ? "--passphrase-file" : "PULUMI_CONFIG_PASSPHRASE_FILE", passphraseFile);
  return {
    ...settings(env),
    stateDir: flags.stateDir ?? defaultStateDir(env),
    backendUrl: flags.backendUrl || backendUrlFromFile(env),
    passphraseFile,
    workDir: optionalString(env, "BMW_WORK_DIR"),
    refreshIntervalMs: integer(env, "BMW_REFRESH_INTERVAL_MS", DEFAULT_REFRESH_INTERVAL_MS, 0),
    progressReportMs: integer(env, "BMW_PROGRESS_REPORT_MS", DEFAULT_PROGRESS_REPORT_MS, 0),
    resyncIntervalMs: integer(env, "BMW_RESYNC_INTERVAL_MS", DEFAULT_RESYNC_INTERVAL_MS, 0),
    programMode: oneOf(env, "BMW_PROGRAM_MODE", PROGRAM_MODES, "inline"),
    providerHost: oneOf(env, "BMW_PROVIDER_HOST", PROVIDER_HOST_MODES, "shared"),
    historyRetention: historyRetention(env),
    memoryTrimIntervalMs: integer(env, "BMW_MEMORY_TRIM_INTERVAL_MS", DEFAULT_MEMORY_TRIM_INTERVAL_MS, 0),
    bmiRelistIntervalMs: integer(env, "BMW_BMI_RELIST_INTERVAL_MS", DEFAULT_BMI_RELIST_INTERVAL_MS, 0),
  };
}

/**
 * The environment every pulumi process of a stack gets: every BMW_* variable (paths and numbers, never
 * secrets), so the program and its providers parse the same values, and the kubeconfig as an absolute path.
 */
export function programEnv(program: ProgramSettings, env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (/^BMW_[A-Z0-9_]+$/.test(k) && v !== undefined && v !== "") out[k] = v;
  out.BMW_KUBECONFIG = path.resolve(program.kubeconfigPath);
  // The Kubernetes provider finds the hub through KUBECONFIG (components/clusterWorkers.ts).
  out.KUBECONFIG = out.BMW_KUBECONFIG;
  return out;
}

/**
 * Refuses a program whose Kubernetes provider would reach another hub than the program observes. The
 * provider is given no kubeconfig (a kubeconfig given to it is copied, credentials and all, into a
 * temporary file at every run), so it loads the pulumi process's KUBECONFIG; the program reads
 * BMW_KUBECONFIG, else KUBECONFIG. The two must name the same file.
 */
export function checkProviderKubeconfig(program: ProgramSettings, env: Env): void {
  const ambient = optionalString(env, "KUBECONFIG");
  if (ambient !== undefined && path.resolve(ambient) === path.resolve(program.kubeconfigPath)) return;
  throw new SettingsError(`KUBECONFIG (${ambient ?? "unset"}) must name the hub's kubeconfig the program reads ` +
    `(${program.kubeconfigPath}): the Kubernetes provider of the stack reads KUBECONFIG`);
}
