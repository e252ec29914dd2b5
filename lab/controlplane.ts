// A real kube-apiserver + etcd on loopback, with TLS, token auth and RBAC, plus kube-controller-manager
// running only the namespace and garbage-collector controllers (so namespaces finish deleting,
// foreground deletes complete and ownerReferences cascade, as on a real hub). Used by the test suite's
// global setup and by `lab up`. Processes are tracked by PID in <dir>/controlplane.json and stopped
// by PID only, never by name.
import { execFileSync, spawn } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as https from "node:https";
import * as net from "node:net";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Toolchain } from "../stack/toolchain";

export interface ExtraUser {
  token: string;
  user: string;
  groups: string[];
}

export interface ControlPlaneOptions {
  dir: string;
  toolchain: Toolchain;
  /** Directories whose *.yaml CustomResourceDefinitions are installed (missing directories are skipped). */
  crdDirs: string[];
  /** Additional bearer-token users (e.g. the reconciler's identity, for RBAC tests). */
  users?: ExtraUser[];
  startTimeoutMs?: number;
}

export interface ControlPlane {
  dir: string;
  server: string;
  caFile: string;
  adminToken: string;
  kubeconfigPath: string;
  etcdPid: number;
  apiserverPid: number;
  controllerManagerPid: number;
  etcdPort: number;
  apiserverPort: number;
  /** Milliseconds from spawn to /readyz ok, and to all CRDs Established. */
  timings: { readyMs: number; crdsMs: number };
}

const STATE_FILE = "controlplane.json";

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address() as net.AddressInfo;
      srv.close(() => resolve(addr.port));
    });
  });
}

function openssl(args: string[]): void {
  execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
}

/** A CA, a serving cert for 127.0.0.1/localhost, and the service-account signing key pair. */
export function makePki(dir: string): { caCrt: string; caKey: string; crt: string; key: string; saKey: string; saPub: string } {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const p = (f: string) => path.join(dir, f);
  openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-subj", "/CN=baremetal-workers-lab-ca",
    "-keyout", p("ca.key"), "-out", p("ca.crt")]);
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kube-apiserver", "-keyout", p("apiserver.key"),
    "-out", p("apiserver.csr")]);
  fs.writeFileSync(p("san.ext"),
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n");
  openssl(["x509", "-req", "-in", p("apiserver.csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"), "-CAcreateserial",
    "-days", "3650", "-extfile", p("san.ext"), "-out", p("apiserver.crt")]);
  openssl(["genrsa", "-out", p("sa.key"), "2048"]);
  openssl(["rsa", "-in", p("sa.key"), "-pubout", "-out", p("sa.pub")]);
  return { caCrt: p("ca.crt"), caKey: p("ca.key"), crt: p("apiserver.crt"), key: p("apiserver.key"), saKey: p("sa.key"), saPub: p("sa.pub") };
}

function spawnDetached(bin: string, args: string[], logFile: string): number {
  const out = fs.openSync(logFile, "a");
  const child = spawn(bin, args, { detached: true, stdio: ["ignore", out, out] });
  fs.closeSync(out);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start ${bin}`);
  return child.pid;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function httpsGet(url: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, timeout: 2000 }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
  });
}

async function waitFor(what: string, deadline: number, probe: () => Promise<boolean>, pids: number[], logs: string[]) {
  for (;;) {
    if (await probe().catch(() => false)) return;
    const dead = pids.filter((p) => !alive(p));
    if (dead.length > 0 || Date.now() > deadline) {
      const tails = logs.map((l) => `--- ${l}\n${tail(l, 30)}`).join("\n");
      throw new Error(`${what} ${dead.length > 0 ? "exited" : "timed out"}\n${tails}`);
    }
    await sleep(100);
  }
}

function tail(file: string, n: number): string {
  try {
    return fs.readFileSync(file, "utf8").split("\n").slice(-n).join("\n");
  } catch {
    return "(no log)";
  }
}

export function kubeconfigYaml(server: string, caFile: string, token: string, user = "admin"): string {
  const ca = fs.readFileSync(caFile).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: lab",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${ca}`,
    "users:",
    `- name: ${user}`,
    "  user:",
    `    token: ${token}`,
    "contexts:",
    "- name: lab",
    `  context: {cluster: lab, user: ${user}, namespace: default}`,
    "current-context: lab",
    "",
  ].join("\n");
}

export async function startControlPlane(opts: ControlPlaneOptions): Promise<ControlPlane> {
  const { dir, toolchain: tc } = opts;
  const existing = readControlPlane(dir);
  if (existing && alive(existing.apiserverPid) && alive(existing.etcdPid)) {
    throw new Error(`a control plane is already running from ${dir} (apiserver pid ${existing.apiserverPid})`);
  }
  for (const [name, bin] of [["kube-apiserver", tc.kubeApiserver], ["kube-controller-manager", tc.kubeControllerManager],
    ["etcd", tc.etcd]] as const) {
    if (!fs.existsSync(bin)) throw new Error(`${name} not found at ${bin}; build it with \`npm run toolchain\``);
  }
  fs.mkdirSync(dir, { recursive: true });
  const pki = makePki(path.join(dir, "pki"));
  const adminToken = crypto.randomBytes(24).toString("hex");
  const users: ExtraUser[] = [{ token: adminToken, user: "admin", groups: ["system:masters"] }, ...(opts.users ?? [])];
  const tokensCsv = path.join(dir, "pki", "tokens.csv");
  fs.writeFileSync(tokensCsv, users.map((u) => `${u.token},${u.user},${u.user},"${u.groups.join(",")}"`).join("\n") + "\n",
    { mode: 0o600 });

  const [etcdPort, peerPort, apiserverPort] = [await freePort(), await freePort(), await freePort()];
  const t0 = Date.now();
  const deadline = t0 + (opts.startTimeoutMs ?? 90_000);
  const etcdLog = path.join(dir, "etcd.log");
  const apiLog = path.join(dir, "kube-apiserver.log");
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const etcdPid = spawnDetached(tc.etcd, [
    "--name=lab", `--data-dir=${path.join(dir, "etcd-data")}`,
    `--listen-client-urls=${etcdUrl}`, `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=lab=http://127.0.0.1:${peerPort}`, "--unsafe-no-fsync=true", "--log-level=warn",
  ], etcdLog);
  writeState(dir, { etcdPid, apiserverPid: 0, controllerManagerPid: 0 });
  await waitFor("etcd", deadline, async () => {
    const res = await fetch(`${etcdUrl}/health`);
    return res.ok;
  }, [etcdPid], [etcdLog]);

  const server = `https://127.0.0.1:${apiserverPort}`;
  const apiserverPid = spawnDetached(tc.kubeApiserver, [
    `--etcd-servers=${etcdUrl}`, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
    `--secure-port=${apiserverPort}`, `--tls-cert-file=${pki.crt}`, `--tls-private-key-file=${pki.key}`,
    `--cert-dir=${path.join(dir, "certs")}`, `--token-auth-file=${tokensCsv}`, "--authorization-mode=RBAC",
    `--service-account-issuer=${server}`, `--service-account-key-file=${pki.saPub}`,
    `--service-account-signing-key-file=${pki.saKey}`, "--service-cluster-ip-range=10.0.0.0/24",
    "--endpoint-reconciler-type=none", "--disable-admission-plugins=ServiceAccount", "--allow-privileged=true",
    "--profiling=false", "--v=1",
  ], apiLog);
  writeState(dir, { etcdPid, apiserverPid, controllerManagerPid: 0 });
  const ca = fs.readFileSync(pki.caCrt);
  await waitFor("kube-apiserver", deadline, async () => {
    const res = await httpsGet(`${server}/readyz`, ca);
    return res.status === 200 && res.body === "ok";
  }, [etcdPid, apiserverPid], [apiLog, etcdLog]);
  const readyMs = Date.now() - t0;

  const kubeconfigPath = path.join(dir, "kubeconfig");
  fs.writeFileSync(kubeconfigPath, kubeconfigYaml(server, pki.caCrt, adminToken), { mode: 0o600 });
  const controllerManagerPid = spawnDetached(tc.kubeControllerManager, [
    `--kubeconfig=${kubeconfigPath}`, "--controllers=namespace,garbagecollector", "--leader-elect=false",
    "--use-service-account-credentials=false", "--secure-port=0", "--v=1",
  ], path.join(dir, "kube-controller-manager.log"));
  writeState(dir, { etcdPid, apiserverPid, controllerManagerPid });
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  await installCrds(kc, opts.crdDirs);
  const cp: ControlPlane = {
    dir, server, caFile: pki.caCrt, adminToken, kubeconfigPath, etcdPid, apiserverPid, controllerManagerPid, etcdPort,
    apiserverPort,
    timings: { readyMs, crdsMs: Date.now() - t0 },
  };
  fs.writeFileSync(path.join(dir, STATE_FILE), JSON.stringify(cp, null, 2), { mode: 0o600 });
  return cp;
}

function writeState(dir: string, pids: { etcdPid: number; apiserverPid: number; controllerManagerPid: number }): void {
  fs.writeFileSync(path.join(dir, STATE_FILE), JSON.stringify({ dir, ...pids }), { mode: 0o600 });
}

export function readControlPlane(dir: string): ControlPlane | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, STATE_FILE), "utf8")) as ControlPlane;
  } catch {
    return undefined;
  }
}

/** Stops controller-manager, apiserver, then etcd by PID: SIGTERM, then SIGKILL after a grace period. */
export async function stopControlPlane(dir: string, graceMs = 10_000): Promise<void> {
  const cp = readControlPlane(dir);
  if (!cp) return;
  for (const pid of [cp.controllerManagerPid, cp.apiserverPid, cp.etcdPid]) {
    if (!pid || !alive(pid)) continue;
    process.kill(pid, "SIGTERM");
    const until = Date.now() + graceMs;
    while (alive(pid) && Date.now() < until) await sleep(50);
    if (alive(pid)) process.kill(pid, "SIGKILL");
  }
  fs.rmSync(path.join(dir, STATE_FILE), { force: true });
}

export async function installCrds(kc: k8s.KubeConfig, dirs: string[]): Promise<string[]> {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const names: string[] = [];
  for (const dir of dirs) {
    if (!fs.existsSync(dir)) continue;
    for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()) {
      for (const doc of k8s.loadAllYaml(fs.readFileSync(path.join(dir, f), "utf8"))) {
        const crd = doc as k8s.V1CustomResourceDefinition;
        if (crd?.kind !== "CustomResourceDefinition") continue;
        try {
          await ext.createCustomResourceDefinition({ body: crd });
        } catch (e) {
          if ((e as { code?: number }).code !== 409) {
            throw new Error(`installing CRD ${crd.metadata?.name} from ${f}: ${(e as Error).message}`);
          }
        }
        names.push(crd.metadata!.name!);
      }
    }
  }
  for (const name of names) {
    for (let i = 0; ; i++) {
      const c = await ext.readCustomResourceDefinition({ name });
      if (c.status?.conditions?.some((x) => x.type === "Established" && x.status === "True")) break;
      if (i > 600) throw new Error(`CRD ${name} not Established after 60 s`);
      await sleep(100);
    }
  }
  return names;
}

/**
 * Restarts the kube-apiserver of a running control plane in place (same binary, flags, port, data):
 * SIGKILL, `downMs` of outage, then the same command line again until /readyz answers. For tests of
 * clients that must ride out an apiserver restart. Updates controlplane.json with the new PID.
 */
export async function restartApiserver(dir: string, downMs = 0, timeoutMs = 60_000): Promise<number> {
  const cp = readControlPlane(dir);
  if (!cp || !cp.apiserverPid || !alive(cp.apiserverPid)) throw new Error(`no running kube-apiserver in ${dir}`);
  const argv = fs.readFileSync(`/proc/${cp.apiserverPid}/cmdline`, "utf8").split("\0").filter((a) => a !== "");
  process.kill(cp.apiserverPid, "SIGKILL");
  while (alive(cp.apiserverPid)) await sleep(20);
  await sleep(downMs);
  const apiLog = path.join(dir, "kube-apiserver.log");
  const pid = spawnDetached(argv[0], argv.slice(1), apiLog);
  const ca = fs.readFileSync(cp.caFile);
  await waitFor("kube-apiserver (restarted)", Date.now() + timeoutMs, async () => {
    const res = await httpsGet(`${cp.server}/readyz`, ca);
    return res.status === 200 && res.body === "ok";
  }, [pid], [apiLog]);
  fs.writeFileSync(path.join(dir, STATE_FILE), JSON.stringify({ ...cp, apiserverPid: pid }, null, 2), { mode: 0o600 });
  return pid;
}
