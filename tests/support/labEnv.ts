// A lab for one test file, sharing the run's kube-apiserver (in-process simulator and controllers, real
// sockets), plus the environment the product reads to reach it.
import * as fs from "node:fs";
import * as path from "node:path";
import { startLab, type Lab, type LabTimings } from "../../lab";
import { runDir } from "./env";

export interface TestLab {
  lab: Lab;
  /** Environment for the product (program, CLI, reconciler) pointing at this lab. */
  env: NodeJS.ProcessEnv;
  stateDir: string;
  stop(): Promise<void>;
}

export function productEnv(lab: Lab, stateDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const passphrase = `${stateDir}.passphrase`;
  fs.mkdirSync(path.dirname(passphrase), { recursive: true });
  if (!fs.existsSync(passphrase)) fs.writeFileSync(passphrase, "test-passphrase-not-secret", { mode: 0o600 });
  return {
    ...process.env,
    ...lab.productSettings(),
    BMW_STATE_DIR: stateDir,
    // Tests keep their stacks' config files out of the repository.
    BMW_WORK_DIR: path.join(stateDir, "project"),
    PULUMI_CONFIG_PASSPHRASE_FILE: passphrase,
    // Lab-speed lifecycle: registration timeout and backoff in seconds, not minutes.
    BMW_AGENT_REGISTRATION_TIMEOUT_MS: "60000",
    BMW_TRANSIENT_BACKOFF_MS: "1000,2000,3000",
    BMW_TRANSIENT_BACKOFF_CAP_MS: "3000",
    BMW_RESOURCE_BACKOFF_MS: "1000,2000,3000",
    BMW_RESOURCE_BACKOFF_CAP_MS: "3000",
    BMW_AGENT_TIMEOUT_BACKOFF_MS: "1000,2000,3000",
    BMW_AGENT_TIMEOUT_BACKOFF_CAP_MS: "3000",
    BMW_IGNITION_POLL_MS: "1000",
    ...extra,
  };
}

export async function startTestLab(name: string, timings: Partial<LabTimings> = {}, opts: { hosts?: number } = {}): Promise<TestLab> {
  const dir = path.join(runDir(), `lab-${name}`);
  const lab = await startLab({ dir, kubeconfig: process.env.KUBECONFIG, preset: "fast", timings, detached: false, ...opts });
  const stateDir = path.join(dir, "state");
  return { lab, env: productEnv(lab, stateDir), stateDir, stop: () => lab.stop() };
}
