// What a StackManager is configured with, and the defaults and checks it applies to the backend and
// the history retention.
import * as path from "node:path";
import { historyRetention } from "../config/settings";
import type { HandoffSource } from "../io/handoff";
import type { PulumiProgram } from "./inlineProgram";
import type { Toolchain } from "./toolchain";

export interface StackManagerOptions {
  /** Directory of the program (index.ts; resolves node_modules). Default: the repository root. */
  programDir?: string;
  /**
   * Where Pulumi.yaml and Pulumi.<stack>.yaml (config and encryption salt) live. Default: programDir, the
   * on-disk project. A pod's image is read-only, so this may point elsewhere (e.g. the state volume): a
   * Pulumi.yaml copied from the project with `main:` set to the program directory is written there, and
   * Pulumi runs the same index.ts.
   */
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
  /** History entries kept per stack on a file backend. Default: envVars.BMW_HISTORY_RETENTION (config/settings.ts), else 100. */
  historyRetention?: number;
  toolchain?: Toolchain;
  /**
   * The program of `up`, run inside this process and served to the CLI (stack/inlineProgram.ts), given the
   * reconciler's observation. Unset: the CLI runs the on-disk program in a Node process of its own.
   */
  inlineProgram?: (handoff: HandoffSource | undefined) => PulumiProgram;
  /**
   * One dynamic-provider host for all of this manager's updates, previews and destroys
   * (stack/sharedProviderHost.ts) instead of one per pulumi process. Default false; close() stops it.
   */
  sharedProviderHost?: boolean;
  /** Where the shared provider host's stderr and its restarts are reported (warnings). */
  log?: (message: string) => void;
}

/** The backend the options name: backendUrl if given, else the file backend in stateDir. */
export function backendUrlOf(opts: StackManagerOptions): string {
  if (opts.backendUrl) return opts.backendUrl;
  if (opts.stateDir) return `file://${path.resolve(opts.stateDir)}`;
  throw new Error("StackManager needs a stateDir (file backend) or a backendUrl");
}

/** History entries kept per stack: the option, else the program environment's setting; a positive integer. */
export function historyRetentionOf(opts: StackManagerOptions): number {
  const retention = opts.historyRetention ?? historyRetention(opts.envVars ?? {});
  if (!Number.isInteger(retention) || retention < 1) {
    throw new Error(`history retention must be a positive integer, got ${opts.historyRetention}`);
  }
  return retention;
}
