// The lab: a simulated OSAC hub on loopback — etcd + kube-apiserver (+ namespace/GC controllers) with
// every CRD, the fulfillment-service simulator seeded with a sample world, and the assisted-service
// and HyperShift/CAPI stand-ins — started as detached processes with PIDs and logs in a state
// directory (`lab up`), or in-process for tests. Product code never imports this.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as https from "node:https";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import pino from "pino";
import { PROJECT_ROOT, toolchain } from "../stack/toolchain";
import { FulfillmentClient } from "../clients/fulfillment/client";
import type { ConnectionOptions } from "../clients/fulfillment/connection";
import { freePort, installCrds, startControlPlane, stopControlPlane } from "./controlplane";
import type { AssistedStats, ControllersConfig, RunningControllers } from "./controllers/runtime";
import type { LabStats } from "./fulfillment/labProtos";
import type { RunningSimulator } from "./fulfillment/server";
import { clearFaults, LabFault, setFault, simulatorStats } from "./labControl";
import { postmasterPid, startPostgres, stopPostgres } from "./postgres";
import { createSampleOrder, ensureNamespace, readPullSecretFile, SampleOrder, SampleOrderSpec } from "./orders";
import { ensureLabCa, ensureServingCert } from "./pki";
import { alive, logSize, spawnTs, stopPid, waitForEvent } from "./processes";
import {
  ComponentRecord, controlPlaneComponents, defaultLabDir, LabState, labStatus, LabStatus, readLabState, writeLabState,
} from "./state";
import { LabTimings, resolveTimings, TimingPreset } from "./timings";
import { INSTANCE_TYPE_PORTS, labHosts, labPullSecret, labSeed } from "./world";

export { createSampleOrder, defaultSampleOrders } from "./orders";
export type { SampleNodeRequest, SampleOrder, SampleOrderSpec } from "./orders";
export { defaultLabDir, labStatus } from "./state";
export type { ComponentStatus, LabStatus } from "./state";
export { TIMING_PRESETS } from "./timings";
export type { LabTimings, TimingPreset } from "./timings";
export type { LabFault } from "./labControl";
export type { AssistedStats } from "./controllers/runtime";
export * as world from "./world";

export interface StartLabOptions {
  dir: string;
  /** Reuse this apiserver (e.g. the jest global test plane) instead of starting one. */
  kubeconfig?: string;
  /** Base timings (default `demo`); `timings` overrides single knobs. */
  preset?: TimingPreset;
  timings?: Partial<LabTimings>;
  /** Host inventory size, 3/4 compute and 1/4 gpu (default 16). */
  hosts?: number;
  /** Sample ClusterOrders to create once everything runs. */
  orders?: SampleOrderSpec[];
  /** true (default): every component is its own detached process. false: simulator and controllers run in this process. */
  detached?: boolean;
  /**
   * Which namespaces the controllers act in: "all", or "labelled" (only namespaces carrying
   * lab.namespaceLabels). Default: "all" with the lab's own apiserver, "labelled" on a shared one.
   */
  scope?: "all" | "labelled";
  /** Serve the simulator in plaintext instead of TLS with the lab CA. */
  plaintextFulfillment?: boolean;
  /** Also run a PostgreSQL server (lab/postgres.ts) for the `postgres://` state backend. */
  postgres?: boolean;
}

export interface Lab {
  dir: string;
  labId: string;
  mode: LabState["mode"];
  logsDir: string;
  kubeconfigPath: string;
  /** The lab CA (signs the ignition endpoint and the simulator's certificate). */
  caFile: string;
  /** With `postgres`: the `postgres://` backend URL of the lab's PostgreSQL (`--backend-url`). */
  postgresUrl?: string;
  fulfillment: { address: string; caFile?: string; tokenFile: string; tenantTokenFile: string; plaintext: boolean };
  assisted: { url: string; caFile: string };
  /** `token` appears verbatim wherever the pull secret (or an ignition carrying it) leaks: scan for it. */
  pullSecret: { token: string; dockerconfigjson: string };
  /** Labels that put a namespace in the controllers' scope (empty when the scope is all namespaces). */
  namespaceLabels: Record<string, string>;
  timings: LabTimings;
  orders: SampleOrder[];
  kubeConfig(): k8s.KubeConfig;
  /** Connection options for the product's fulfillment client (admin token, TLS with the lab CA). */
  fulfillmentConnection(): ConnectionOptions;
  fulfillmentClient(): FulfillmentClient;
  /** The BMW_* settings that point the product (reconciler, CLI, program) at this lab. */
  productSettings(): Record<string, string>;
  fault(f: LabFault): Promise<void>;
  clearFaults(): Promise<void>;
  stats(): Promise<{ fulfillment: LabStats; assisted: AssistedStats }>;
  /** Creates (or labels) a namespace inside the lab's scope. */
  createNamespace(name: string): Promise<string>;
  createSampleOrder(spec: SampleOrderSpec): Promise<SampleOrder>;
  status(): LabStatus;
  stop(): Promise<void>;
}

/** A refusal (e.g. a partly running lab): the CLI exits 2. */
export class LabError extends Error {
  override name = "LabError";
}

const SCOPE_LABEL = "baremetal-workers.lab/instance";
const START_TIMEOUT_MS = 60_000;

/** Byte-exact copies of the upstream Agent, InfraEnv, NodePool, HostedCluster and ClusterDeployment CRDs (origins in its README). */
export const UPSTREAM_CRDS = path.join(PROJECT_ROOT, "lab", "crds");

/** In-process components by lab directory (detached:false). */
const inProcess = new Map<string, { simulator: RunningSimulator; controllers: RunningControllers }>();

/**
 * The upstream CRDs (BMW_SHARED_CRDS, else the copies vendored in lab/crds) and the project's own.
 * Without the upstream ones the lab would start and then fail on its first NodePool with a bare 404.
 */
export function sharedCrdDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const shared = env.BMW_SHARED_CRDS ?? UPSTREAM_CRDS;
  if (!fs.existsSync(shared)) {
    throw new Error(`the upstream CRDs (Agent, InfraEnv, NodePool, HostedCluster, ClusterDeployment) are not at ${shared}: ` +
      "set BMW_SHARED_CRDS to the directory that holds them");
  }
  return [shared, path.join(PROJECT_ROOT, "deploy", "crds")];
}

const REQUIRED_CRDS = ["agents.agent-install.openshift.io", "infraenvs.agent-install.openshift.io", "nodepools.hypershift.openshift.io",
  "hostedclusters.hypershift.openshift.io", "clusterdeployments.hive.openshift.io", "clusterorders.osac.openshift.io"];

async function ensureCrds(kubeconfigPath: string): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const missing = [];
  for (const name of REQUIRED_CRDS) {
    try {
      await ext.readCustomResourceDefinition({ name });
    } catch {
      missing.push(name);
    }
  }
  if (missing.length === 0) return;
  const dirs = sharedCrdDirs();
  const installed = new Set(await installCrds(kc, dirs));
  const absent = missing.filter((n) => !installed.has(n));
  if (absent.length) throw new Error(`CRDs ${absent.join(", ")} are not in the cluster and not in ${dirs.join(" or ")}`);
}

function readOrCreate(file: string, make: () => string): string {
  if (!fs.existsSync(file)) fs.writeFileSync(file, make(), { mode: 0o600 });
  return fs.readFileSync(file, "utf8");
}

function postgresUrlOf(state: LabState): string | undefined {
  return state.components.find((c) => c.name === "postgres")?.address;
}

function makeLab(state: LabState, orders: SampleOrder[]): Lab {
  const ps = readPullSecretFile(state.pullSecretFile);
  const namespaceLabels: Record<string, string> = {};
  if (state.namespaceSelector) {
    const [k, v] = state.namespaceSelector.split("=");
    namespaceLabels[k] = v;
  }
  const ep = { address: state.fulfillment.address, caFile: state.fulfillment.caFile, plaintext: state.fulfillment.plaintext };
  const lab: Lab = {
    dir: state.dir, labId: state.labId, mode: state.mode, logsDir: path.join(state.dir, "logs"),
    kubeconfigPath: state.kubeconfigPath, caFile: state.assisted.caFile, fulfillment: { ...state.fulfillment },
    ...(postgresUrlOf(state) ? { postgresUrl: postgresUrlOf(state) } : {}),
    assisted: { ...state.assisted }, pullSecret: ps, namespaceLabels, timings: state.timings, orders,
    kubeConfig: () => {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(state.kubeconfigPath);
      return kc;
    },
    fulfillmentConnection: () => ({
      address: state.fulfillment.address, tokenFile: state.fulfillment.tokenFile,
      // The certificate also names localhost; using it as the TLS server name avoids Node's warning about IP server names.
      transport: state.fulfillment.plaintext ? { kind: "plaintext" } : { kind: "tls", caFile: state.fulfillment.caFile, serverNameOverride: "localhost" },
    }),
    fulfillmentClient: () => new FulfillmentClient(lab.fulfillmentConnection()),
    productSettings: () => ({
      BMW_KUBECONFIG: state.kubeconfigPath,
      BMW_FULFILLMENT_ADDRESS: state.fulfillment.address,
      BMW_FULFILLMENT_TOKEN_FILE: state.fulfillment.tokenFile,
      ...(state.fulfillment.plaintext ? { BMW_FULFILLMENT_PLAINTEXT: "true" } : { BMW_FULFILLMENT_CA_FILE: state.fulfillment.caFile ?? "" }),
      BMW_IGNITION_CA_FILE: state.assisted.caFile,
    }),
    fault: (f) => setFault(ep, f),
    clearFaults: () => clearFaults(ep),
    stats: async () => ({ fulfillment: await simulatorStats(ep), assisted: await assistedStats(state.assisted) }),
    createNamespace: async (name) => {
      await ensureNamespace(lab.kubeConfig(), name, namespaceLabels);
      return name;
    },
    createSampleOrder: (spec) => createSampleOrder(lab, spec),
    status: () => labStatus(state.dir),
    stop: () => stopLab(state.dir),
  };
  return lab;
}

function assistedStats(a: { url: string; caFile: string }): Promise<AssistedStats> {
  return new Promise((resolve, reject) => {
    https.get(`${a.url}/lab/v1/stats`, { ca: fs.readFileSync(a.caFile), timeout: 5_000 }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => {
        try {
          resolve(JSON.parse(body) as AssistedStats);
        } catch (e) {
          reject(e);
        }
      });
    }).on("error", reject);
  });
}

/** A handle on the lab already running from `dir` (e.g. for `lab fault`). */
export function openLab(dir: string = defaultLabDir()): Lab {
  const state = readLabState(path.resolve(dir));
  if (!state) throw new LabError(`no lab in ${dir}`);
  const ordersFile = path.join(state.dir, "orders.json");
  const orders = fs.existsSync(ordersFile) ? (JSON.parse(fs.readFileSync(ordersFile, "utf8")) as SampleOrder[]) : [];
  return makeLab(state, orders);
}

/**
 * Starts the lab in `opts.dir`. If a lab is already running there it is reused; if only part of it is
 * running, it refuses (stop it first). A lab whose components all stopped starts again on its data.
 */
export async function startLab(opts: StartLabOptions): Promise<Lab> {
  const dir = path.resolve(opts.dir);
  const status = labStatus(dir);
  if (status.state === "running") return openLab(dir);
  if (status.state === "degraded") {
    const dead = status.components.filter((c) => !c.alive).map((c) => c.name).join(", ");
    throw new LabError(`the lab in ${dir} is only partly running (not alive: ${dead}); run \`lab down --dir ${dir}\` first`);
  }
  fs.mkdirSync(path.join(dir, "logs"), { recursive: true, mode: 0o700 });
  const previous = readLabState(dir);
  const detached = opts.detached ?? true;
  const timings = resolveTimings(opts.preset, opts.timings);
  const labId = previous?.labId ?? crypto.randomBytes(4).toString("hex");
  const scope = opts.scope ?? (opts.kubeconfig ? "labelled" : "all");
  const namespaceSelector = scope === "labelled" ? `${SCOPE_LABEL}=${labId}` : undefined;
  const ca = ensureLabCa(dir);
  const components: ComponentRecord[] = [];
  const ownsControlPlane = !opts.kubeconfig;
  const cpDir = path.join(dir, "controlplane");
  let sim: RunningSimulator | undefined;
  let controllers: RunningControllers | undefined;
  const state: LabState = {
    format: 1, labId, dir, mode: detached ? "detached" : "in-process", startedAt: new Date().toISOString(), ownsControlPlane,
    kubeconfigPath: "", namespaceSelector, timings,
    fulfillment: { address: "", tokenFile: "", tenantTokenFile: "", plaintext: opts.plaintextFulfillment === true },
    assisted: { url: "", caFile: ca.caFile }, pullSecretFile: path.join(dir, "pull-secret.json"), components,
  };
  try {
    // 1. The hub's Kubernetes API.
    if (opts.kubeconfig) {
      state.kubeconfigPath = path.resolve(opts.kubeconfig);
      await ensureCrds(state.kubeconfigPath);
    } else {
      const cp = await startControlPlane({ dir: cpDir, toolchain: toolchain(), crdDirs: sharedCrdDirs() });
      state.kubeconfigPath = cp.kubeconfigPath;
      components.push(...controlPlaneComponents(cpDir));
    }
    writeLabState(state);

    // 2. Credentials of the lab.
    const fdir = path.join(dir, "fulfillment");
    fs.mkdirSync(fdir, { recursive: true, mode: 0o700 });
    state.fulfillment.tokenFile = path.join(fdir, "admin.token");
    state.fulfillment.tenantTokenFile = path.join(fdir, "tenant.token");
    const adminToken = readOrCreate(state.fulfillment.tokenFile, () => crypto.randomBytes(24).toString("hex")).trim();
    const tenantToken = readOrCreate(state.fulfillment.tenantTokenFile, () => crypto.randomBytes(24).toString("hex")).trim();
    readOrCreate(state.pullSecretFile, () => JSON.stringify(labPullSecret()));

    // 3. The fulfillment simulator.
    const seed = labSeed({ adminToken, tenantToken, hosts: opts.hosts, timings });
    const tls = state.fulfillment.plaintext ? undefined : (() => {
      const c = ensureServingCert(dir, ca, "fulfillment");
      return { certFile: c.certFile, keyFile: c.keyFile };
    })();
    state.fulfillment.caFile = tls ? ca.caFile : undefined;
    const simLog = path.join(dir, "logs", "fulfillment-simulator.log");
    const simState = path.join(fdir, "state");
    if (detached) {
      const port = await freePort();
      fs.mkdirSync(simState, { recursive: true });
      const seedFile = path.join(fdir, "seed.json");
      fs.writeFileSync(seedFile, JSON.stringify(seed, null, 1), { mode: 0o600 });
      const args = ["--seed", seedFile, "--state-dir", simState, "--port", String(port)];
      if (tls) args.push("--tls-cert", tls.certFile, "--tls-key", tls.keyFile);
      const offset = logSize(simLog);
      const pid = spawnTs("lab/fulfillment/main.ts", args, simLog);
      state.fulfillment.address = `127.0.0.1:${port}`;
      components.push({ name: "fulfillment-simulator", pid, address: state.fulfillment.address, log: simLog });
      writeLabState(state);
      await waitForEvent(simLog, offset, "listening", pid, START_TIMEOUT_MS);
    } else {
      const { startSimulator } = await import("./fulfillment/server");
      sim = await startSimulator({ seed, stateDir: simState, tls });
      state.fulfillment.address = sim.address;
      components.push({ name: "fulfillment-simulator", pid: process.pid, address: sim.address, log: simLog });
    }

    // 4. The assisted-service and HyperShift/CAPI stand-ins.
    const assistedCert = ensureServingCert(dir, ca, "assisted");
    const cfg: ControllersConfig = {
      labId, stateDir: path.join(dir, "controllers"), kubeconfigPath: state.kubeconfigPath, namespaceSelector, timings,
      assisted: { port: await freePort(), certFile: assistedCert.certFile, keyFile: assistedCert.keyFile, caFile: ca.caFile },
      fulfillment: { address: state.fulfillment.address, caFile: state.fulfillment.caFile, plaintext: state.fulfillment.plaintext },
      hosts: labHosts(opts.hosts ?? 16), instanceTypePorts: INSTANCE_TYPE_PORTS,
    };
    const ctlLog = path.join(dir, "logs", "lab-controllers.log");
    state.assisted.url = `https://127.0.0.1:${cfg.assisted.port}`;
    if (detached) {
      const cfgFile = path.join(dir, "controllers.json");
      fs.writeFileSync(cfgFile, JSON.stringify(cfg, null, 1), { mode: 0o600 });
      const offset = logSize(ctlLog);
      const pid = spawnTs("lab/controllers/main.ts", ["--config", cfgFile], ctlLog);
      components.push({ name: "lab-controllers", pid, address: state.assisted.url, log: ctlLog });
      writeLabState(state);
      await waitForEvent(ctlLog, offset, "ready", pid, START_TIMEOUT_MS);
    } else {
      const { startControllers } = await import("./controllers/runtime");
      const log = pino({ base: { component: "lab-controllers" } }, pino.destination({ dest: ctlLog, sync: true, mkdir: true }));
      controllers = await startControllers(cfg, log);
      components.push({ name: "lab-controllers", pid: process.pid, address: state.assisted.url, log: ctlLog });
      inProcess.set(dir, { simulator: sim!, controllers });
    }
    if (opts.postgres) {
      const pg = await startPostgres(path.join(dir, "postgres"));
      components.push({ name: "postgres", pid: postmasterPid(path.join(dir, "postgres")), address: pg.url, log: pg.logFile });
    }
    delete state.stoppedAt;
    writeLabState(state);
  } catch (err) {
    await controllers?.stop().catch(() => undefined);
    await sim?.stop().catch(() => undefined);
    inProcess.delete(dir);
    for (const c of components) if (c.pid !== process.pid) await stopPid(c.pid, 5_000);
    if (ownsControlPlane) await stopControlPlane(cpDir).catch(() => undefined);
    for (const c of components) c.pid = 0;
    state.stoppedAt = new Date().toISOString();
    writeLabState(state);
    throw err;
  }

  const lab = makeLab(state, []);
  for (const spec of opts.orders ?? []) lab.orders.push(await createSampleOrder(lab, spec));
  fs.writeFileSync(path.join(dir, "orders.json"), JSON.stringify(lab.orders, null, 1));
  return lab;
}

/** Stops every component of the lab in `dir` by PID (controllers, simulator, then the control plane); keeps its data. */
export async function stopLab(dir: string = defaultLabDir()): Promise<void> {
  const abs = path.resolve(dir);
  const state = readLabState(abs);
  if (!state) return;
  const local = inProcess.get(abs);
  if (local) {
    inProcess.delete(abs);
    await local.controllers.stop();
    await local.simulator.stop();
  } else if (state.mode === "in-process" && state.components.some((c) => c.pid !== process.pid && alive(c.pid))) {
    throw new LabError(`the lab in ${abs} runs inside process ${state.components[0]?.pid}; stop it there`);
  }
  // Dependents first; the control plane last, as stopControlPlane orders it. Stopped here by PID
  // (zombie-aware: an orphan's exit may not be reaped at once), then its state file goes.
  if (state.components.some((c) => c.name === "postgres" && alive(c.pid))) await stopPostgres(path.join(abs, "postgres"));
  const order: ComponentRecord["name"][] = ["lab-controllers", "fulfillment-simulator", "kube-controller-manager", "kube-apiserver", "etcd"];
  for (const name of order) {
    const c = state.components.find((x) => x.name === name);
    if (c && c.pid !== process.pid) await stopPid(c.pid);
  }
  if (state.ownsControlPlane) fs.rmSync(path.join(abs, "controlplane", "controlplane.json"), { force: true });
  for (const c of state.components) c.pid = 0;
  state.stoppedAt = new Date().toISOString();
  writeLabState(state);
}
