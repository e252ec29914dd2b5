// Fixtures of the bad-input and security suites: a bounded pool for reconciles (the machine has two
// cores), hub reads and writes as the admin, Agents and InfraEnv status set by hand, and an HTTPS
// server signed by the lab CA that serves broken discovery ignitions.
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import { Filter, type BareMetalInstanceOut, type FulfillmentClient } from "../../clients/fulfillment";
import { ensureLabCa, ensureServingCert } from "../../lab/pki";
import { ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder, Condition } from "../../planner/types";

/** Runs at most `size` tasks at once (each reconcile may start a pulumi engine). */
export class Pool {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly size: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((r) => this.waiting.push(r));
    this.running++;
    try {
      return await task();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

const ORDERS = { group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders" };
const AGENTS = { group: "agent-install.openshift.io", version: "v1beta1", plural: "agents" };
const INFRAENVS = { group: "agent-install.openshift.io", version: "v1beta1", plural: "infraenvs" };
const NODEPOOLS = { group: "hypershift.openshift.io", version: "v1beta1", plural: "nodepools" };
const CDS = { group: "hive.openshift.io", version: "v1", plural: "clusterdeployments" };
const EVENTS = { group: "events.k8s.io", version: "v1", plural: "events" };
const merge = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
const jsonPatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch);

export interface KubeObject {
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; generation?: number;
    labels?: Record<string, string>; annotations?: Record<string, string>; finalizers?: string[]; deletionTimestamp?: string };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

export interface HubEvent {
  reason?: string;
  type?: string;
  note?: string;
  regarding?: { name?: string; uid?: string };
}

/** The hub as the admin sees it (the test's own view, not the product's client). */
export class Hub {
  readonly custom: k8s.CustomObjectsApi;
  readonly core: k8s.CoreV1Api;
  constructor(readonly kc: k8s.KubeConfig) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
  }

  async order(namespace: string, name: string): Promise<ClusterOrder | undefined> {
    return this.get<ClusterOrder>(ORDERS, namespace, name);
  }

  async patchOrder(namespace: string, name: string, ops: object[]): Promise<void> {
    await this.custom.patchNamespacedCustomObject({ ...ORDERS, namespace, name, body: ops }, jsonPatch);
  }

  async annotateOrder(namespace: string, name: string, annotations: Record<string, string | null>): Promise<void> {
    await this.custom.patchNamespacedCustomObject({ ...ORDERS, namespace, name, body: { metadata: { annotations } } }, merge);
  }

  async deleteOrder(namespace: string, name: string): Promise<void> {
    await this.custom.deleteNamespacedCustomObject({ ...ORDERS, namespace, name });
  }

  async infraEnvs(namespace: string): Promise<KubeObject[]> {
    return this.list(INFRAENVS, namespace);
  }

  async setIgnitionUrl(namespace: string, name: string, url: string): Promise<void> {
    await this.custom.patchNamespacedCustomObjectStatus({ ...INFRAENVS, namespace, name,
      body: { status: { bootArtifacts: { discoveryIgnitionURL: url } } } }, merge);
  }

  async agents(namespace: string): Promise<KubeObject[]> {
    return this.list(AGENTS, namespace);
  }

  async agent(namespace: string, name: string): Promise<KubeObject | undefined> {
    return this.get(AGENTS, namespace, name);
  }

  /** An Agent as a discovery host would register it: labels, and MACs in status.inventory. */
  async createAgent(namespace: string, name: string, labels: Record<string, string>, macs: string[]): Promise<KubeObject> {
    await this.custom.createNamespacedCustomObject({ ...AGENTS, namespace, body: {
      apiVersion: "agent-install.openshift.io/v1beta1", kind: "Agent",
      metadata: { name, namespace, labels }, spec: { approved: false, role: "" },
    } });
    await this.custom.patchNamespacedCustomObjectStatus({ ...AGENTS, namespace, name, body: { status: {
      inventory: { hostname: name, interfaces: macs.map((m, i) => ({ name: `eth${i}`, macAddress: m, flags: ["up"], ipV4Addresses: [], ipV6Addresses: [] })) },
    } } }, merge);
    return (await this.agent(namespace, name))!;
  }

  async nodePools(namespace: string): Promise<KubeObject[]> {
    return this.list(NODEPOOLS, namespace);
  }

  async deleteNodePool(namespace: string, name: string): Promise<void> {
    await this.custom.deleteNamespacedCustomObject({ ...NODEPOOLS, namespace, name });
  }

  async deleteClusterDeployment(namespace: string, name: string): Promise<void> {
    await this.custom.deleteNamespacedCustomObject({ ...CDS, namespace, name });
  }

  async events(namespace: string): Promise<HubEvent[]> {
    return (await this.list(EVENTS, namespace)) as HubEvent[];
  }

  /** Drops the lab's scope label from a namespace, so the lab's controllers leave its objects to the test. */
  async leaveLabScope(namespace: string, labels: Record<string, string>): Promise<void> {
    const body = { metadata: { labels: Object.fromEntries(Object.keys(labels).map((k) => [k, null])) } };
    await this.core.patchNamespace({ name: namespace, body }, merge);
  }

  private async get<T>(gvp: typeof ORDERS, namespace: string, name: string): Promise<T | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({ ...gvp, namespace, name })) as T;
    } catch (e) {
      if ((e as { code?: number }).code === 404) return undefined;
      throw e;
    }
  }

  private async list(gvp: typeof ORDERS, namespace: string): Promise<KubeObject[]> {
    const res = (await this.custom.listNamespacedCustomObject({ ...gvp, namespace })) as { items?: KubeObject[] };
    return res.items ?? [];
  }
}

export function condition(order: ClusterOrder | undefined, type: string): Condition | undefined {
  return order?.status?.conditions?.find((c) => c.type === type);
}

/** Every BMI carrying the order's label, deleting ones included. */
export function orderBmis(f: FulfillmentClient, uid: string): Promise<BareMetalInstanceOut[]> {
  return f.bareMetalInstances.listAll(Filter.labelsMatch({ [ORDER_LABEL]: uid }));
}

export interface IgnitionServer {
  /** https://127.0.0.1:<port><path>, signed by the lab CA (trusted by the product through BMW_IGNITION_CA_FILE). */
  https(path: string): string;
  /** http://127.0.0.1:<port><path>, the same routes in plaintext. */
  http(path: string): string;
  /** Requests received per "<scheme> <path>". */
  hits: Map<string, number>;
  close(): Promise<void>;
}

/** A valid discovery-ignition-shaped document carrying `marker`, so a leak of its content can be found. */
export function ignitionDocument(marker: string, padBytes = 0): string {
  return JSON.stringify({ ignition: { version: "3.2.0" }, storage: { files: [{ path: "/etc/marker", contents: { source: `data:,${marker}` } }] },
    pad: "x".repeat(padBytes) });
}

/**
 * Routes: /ok.ign (valid), /big.ign (70 KiB of valid JSON), /redirect (302 to /ok.ign), /slow (headers,
 * then never completes), /garbage (HTML). Every body carries `marker`.
 */
export async function startIgnitionServer(labDir: string, marker: string): Promise<IgnitionServer> {
  const cert = ensureServingCert(labDir, ensureLabCa(labDir), "badinput-ignition");
  const hits = new Map<string, number>();
  const handler = (scheme: string): http.RequestListener => (req, res) => {
    const p = new URL(req.url ?? "/", "https://x").pathname;
    hits.set(`${scheme} ${p}`, (hits.get(`${scheme} ${p}`) ?? 0) + 1);
    switch (p) {
      case "/ok.ign":
        res.writeHead(200, { "content-type": "application/json" }).end(ignitionDocument(marker));
        break;
      case "/big.ign":
        res.writeHead(200, { "content-type": "application/json" }).end(ignitionDocument(marker, 70 * 1024));
        break;
      case "/redirect":
        res.writeHead(302, { location: "/ok.ign" }).end();
        break;
      case "/slow":
        res.writeHead(200, { "content-type": "application/json" });
        res.write(`{"marker":"${marker}",`); // and never finishes
        break;
      case "/garbage":
        res.writeHead(200, { "content-type": "text/html" }).end(`<html><body>${marker}</body></html>`);
        break;
      default:
        res.writeHead(404).end();
    }
  };
  const tlsServer = https.createServer({ cert: fs.readFileSync(cert.certFile), key: fs.readFileSync(cert.keyFile) }, handler("https"));
  const plainServer = http.createServer(handler("http"));
  const sockets = new Set<Duplex>();
  for (const s of [tlsServer, plainServer]) {
    s.on("connection", (c: Duplex) => {
      sockets.add(c);
      c.on("close", () => sockets.delete(c));
    });
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  }
  const port = (s: http.Server) => (s.address() as AddressInfo).port;
  return {
    https: (p) => `https://127.0.0.1:${port(tlsServer)}${p}`,
    http: (p) => `http://127.0.0.1:${port(plainServer)}${p}`,
    hits,
    close: async () => {
      for (const c of sockets) c.destroy();
      await Promise.all([tlsServer, plainServer].map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}
