// clients/kube/config.ts: the API clients of a loaded kubeconfig share their TLS connections. client-node
// alone opens one per request (a new undici Agent each time).
import * as fs from "node:fs";
import * as https from "node:https";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { loadKubeConfig } from "../../clients/kube";
import { ensureLabCa, ensureServingCert } from "../../lab/pki";

let dir: string;
let server: https.Server;
let connections = 0;
let requests = 0;
let kubeconfigFile: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-kube-conn-"));
  const ca = ensureLabCa(dir);
  const cert = ensureServingCert(dir, ca, "apiserver");
  server = https.createServer({ cert: fs.readFileSync(cert.certFile), key: fs.readFileSync(cert.keyFile) }, (_req, res) => {
    requests++;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "ns1", uid: "u1" } }));
  });
  server.on("secureConnection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  kubeconfigFile = path.join(dir, "kubeconfig");
  fs.writeFileSync(kubeconfigFile, JSON.stringify({
    apiVersion: "v1", kind: "Config", "current-context": "c",
    clusters: [{ name: "c", cluster: { server: `https://127.0.0.1:${port}`, "certificate-authority-data": fs.readFileSync(ca.caFile).toString("base64") } }],
    users: [{ name: "u", user: { token: "t0ken" } }],
    contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
  }));
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  fs.rmSync(dir, { recursive: true, force: true });
});

/** New TLS connections for `n` requests one after the other through two API clients, then for 4 at once. */
async function connectionsFor(kc: k8s.KubeConfig, n: number): Promise<{ sequential: number; concurrent: number }> {
  const c0 = connections;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const other = kc.makeApiClient(k8s.CoreV1Api);
  for (let i = 0; i < n; i++) await (i % 2 ? core : other).readNamespace({ name: "ns1" });
  const c1 = connections;
  await Promise.all(Array.from({ length: 4 }, () => core.readNamespace({ name: "ns1" })));
  return { sequential: c1 - c0, concurrent: connections - c1 };
}

test("sequential and concurrent requests of every API client of a kubeconfig share their connections", async () => {
  const r0 = requests;
  const opened = await connectionsFor(loadKubeConfig(kubeconfigFile), 100);
  expect(opened.sequential).toBeLessThanOrEqual(2); // against 100 without pooling
  expect(opened.concurrent).toBeLessThanOrEqual(4);
  expect(requests - r0).toBe(104);
});

test("client-node's own KubeConfig opens a connection per request (why the layer pools them)", async () => {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigFile);
  expect((await connectionsFor(kc, 20)).sequential).toBe(20);
});
