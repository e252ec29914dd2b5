// The lab's state directory: lab.json records what runs (PID, address, log of every component) and
// where the lab's endpoints and credentials are; status is computed from it by PID.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { readControlPlane } from "./controlplane";
import { alive } from "./processes";
import type { LabTimings } from "./timings";

export type ComponentName = "etcd" | "kube-apiserver" | "kube-controller-manager" | "fulfillment-simulator" | "lab-controllers" | "postgres";

export interface ComponentRecord {
  name: ComponentName;
  /** 0 once stopped. For an in-process lab, the PID of the process that hosts it. */
  pid: number;
  address?: string;
  log: string;
}

export interface LabState {
  format: 1;
  labId: string;
  dir: string;
  mode: "detached" | "in-process";
  startedAt: string;
  stoppedAt?: string;
  ownsControlPlane: boolean;
  kubeconfigPath: string;
  /** Label selector of the namespaces the lab's controllers act in; absent = all. */
  namespaceSelector?: string;
  timings: LabTimings;
  fulfillment: { address: string; caFile?: string; tokenFile: string; tenantTokenFile: string; plaintext: boolean };
  assisted: { url: string; caFile: string };
  pullSecretFile: string;
  components: ComponentRecord[];
}

export interface ComponentStatus extends ComponentRecord {
  alive: boolean;
}

export interface LabStatus {
  dir: string;
  /** running: every component alive; degraded: some dead; stopped: none alive; absent: no lab here. */
  state: "running" | "degraded" | "stopped" | "absent";
  mode?: LabState["mode"];
  components: ComponentStatus[];
}

export const STATE_FILE = "lab.json";

/** $XDG_STATE_HOME/baremetal-workers/lab, else ~/.local/state/baremetal-workers/lab — outside the repository. */
export function defaultLabDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME || path.join(os.homedir(), ".local", "state");
  return path.join(base, "baremetal-workers", "lab");
}

export function readLabState(dir: string): LabState | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, STATE_FILE), "utf8")) as LabState;
  } catch {
    return undefined;
  }
}

export function writeLabState(state: LabState): void {
  const file = path.join(state.dir, STATE_FILE);
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(state, null, 2), { mode: 0o600 });
  fs.renameSync(`${file}.tmp`, file);
}

export function labStatus(dir: string): LabStatus {
  const state = readLabState(dir);
  if (!state) return { dir, state: "absent", components: [] };
  const components = state.components.map((c) => ({ ...c, alive: alive(c.pid) }));
  const up = components.filter((c) => c.alive).length;
  return {
    dir, mode: state.mode, components,
    state: components.length > 0 && up === components.length ? "running" : up === 0 ? "stopped" : "degraded",
  };
}

/** The control plane's processes as lab components (PIDs from controlplane.json). */
export function controlPlaneComponents(cpDir: string): ComponentRecord[] {
  const cp = readControlPlane(cpDir);
  if (!cp) return [];
  return [
    { name: "etcd", pid: cp.etcdPid, address: `http://127.0.0.1:${cp.etcdPort}`, log: path.join(cpDir, "etcd.log") },
    { name: "kube-apiserver", pid: cp.apiserverPid, address: cp.server, log: path.join(cpDir, "kube-apiserver.log") },
    { name: "kube-controller-manager", pid: cp.controllerManagerPid, log: path.join(cpDir, "kube-controller-manager.log") },
  ];
}
