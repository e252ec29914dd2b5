// Shared fixtures for the fulfillment tests: a seed, token files, a client and the lab control client.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { FulfillmentClient, FulfillmentClientOptions } from "../../clients/fulfillment";
import type { BareMetalInstance } from "../../clients/fulfillment/types";
import { BootEvent, FulfillmentLabClient, LabStats, loadLabProtos, MethodFault, LifecycleFault, ListFault } from "../../lab/fulfillment/labProtos";
import { spawnSimulator, SimulatorProcess } from "../../lab/fulfillment/process";
import type { SimulatorSeed } from "../../lab/fulfillment/seed";
import { loadFulfillmentProtos } from "../../protos/fulfillment";

export const ADMIN_TOKEN = "admin-token-0123456789";
export const ADMIN_TOKEN_2 = "admin-token-rotated-9876543210";
export const ACME_TOKEN = "acme-token-0123456789";
export const GLOBEX_TOKEN = "globex-token-0123456789";
export const SYSTEM_ITEM = "system-bmi-passthrough";

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `bmw-${prefix}-`));
}

const ports = (fabric: string[]) => [
  { name: "eno1", role: "lifecycle", type: "ethernet", speed: "1G" },
  ...fabric.map((name) => ({ name, role: "fabric", type: "ethernet", speed: "25G" })),
];

export function testSeed(overrides: Partial<SimulatorSeed> = {}): SimulatorSeed {
  return {
    tokens: [
      { token: ADMIN_TOKEN, admin: true }, { token: ADMIN_TOKEN_2, admin: true },
      { token: ACME_TOKEN, tenants: ["acme"] }, { token: GLOBEX_TOKEN, tenants: ["globex"] },
    ],
    tenants: ["acme", "globex"],
    hosts: [
      { name: "compute-0", macs: ["AA:BB:CC:00:00:01", "AA:BB:CC:00:00:02"], labels: { "osac.openshift.io/class": "compute" } },
      { name: "compute-1", macs: ["AA:BB:CC:00:01:01"], labels: { "osac.openshift.io/class": "compute" } },
      { name: "gpu-0", macs: ["aa:bb:cc:00:02:01"], labels: { "osac.openshift.io/class": "gpu" } },
    ],
    instanceTypes: [
      { metadata: { name: "compute" }, spec: {
        hardware: { cpu: { cores: 32, architecture: "x86_64", threads_per_core: 2 }, memory: { total_gb: 256 }, network_ports: ports(["ens1f0", "ens1f1"]) },
        host_label_selector: { match_labels: { "osac.openshift.io/class": "compute" } } } },
      { metadata: { name: "gpu" }, spec: {
        hardware: { cpu: { cores: 64, architecture: "x86_64", threads_per_core: 2 }, memory: { total_gb: 512 }, network_ports: ports(["ens2f0"]) },
        host_label_selector: { match_labels: { "osac.openshift.io/class": "gpu" } } } },
    ],
    catalogItems: [
      { metadata: { name: SYSTEM_ITEM, tenant: "system" }, title: "CaaS pass-through", published: true, tenant: "system" },
      { metadata: { name: "draft-item" }, title: "unpublished", published: false },
      { metadata: { name: "locked-item" }, title: "only user_data", published: true,
        field_definitions: [{ path: "user_data", editable: true }] },
      { metadata: { name: "hosted-item" }, title: "template with a HostType", published: true, template: { id: "tpl.hosted" } },
    ],
    // The HostType has a port no instance type has (ens3f0) and lacks one the compute type has (ens1f1).
    templates: [{ id: "tpl.hosted", metadata: { name: "hosted" }, title: "hosted workers", host_type: "ht-compute" }],
    hostTypes: [{ id: "ht-compute", metadata: { name: "compute-host" }, title: "compute host", interfaces: [
      { name: "eno1", role: "lifecycle" }, { name: "ens1f0", role: "fabric" }, { name: "ens3f0", role: "fabric" }] }],
    diskImages: [
      { id: "di-rhcos-417", metadata: { name: "rhcos-417" }, spec: {
        source_type: "SOURCE_TYPE_REGISTRY", source_ref: "quay.io/openshift/rhcos:4.17", architecture: ["ARCHITECTURE_AMD64"],
        lifecycle: "DISK_IMAGE_LIFECYCLE_AVAILABLE" } },
    ],
    clusterVersions: [
      { id: "cv-4-17-3", metadata: { name: "v4-17-3" }, spec: { image: "quay.io/openshift-release-dev/ocp-release:4.17.3", version: "4.17.3", disk_image: { id: "di-rhcos-417" } } },
      { id: "cv-4-17-4", metadata: { name: "v4-17-4", annotations: { "osac.openshift.io/disk-image": "rhcos-417" } },
        spec: { image: "quay.io/openshift-release-dev/ocp-release:4.17.4", version: "4.17.4" } },
    ],
    clusters: [
      { id: "cluster-1", metadata: { name: "acme-prod", tenant: "acme" }, spec: { version: { id: "cv-4-17-3" } } },
    ],
    timings: { provisionMs: 150, deleteMs: 300 },
    ...overrides,
  };
}

export interface Harness {
  sim: SimulatorProcess;
  dir: string;
  tokenFile: string;
  client(opts?: Partial<FulfillmentClientOptions>): FulfillmentClient;
  lab: FulfillmentLabClient;
  /** Stops the simulator and closes clients. */
  close(): Promise<void>;
}

export async function startHarness(seed: SimulatorSeed = testSeed(), dir = tempDir("sim")): Promise<Harness> {
  const sim = await spawnSimulator({ seed, stateDir: dir });
  return harnessFor(sim, dir);
}

export function harnessFor(sim: SimulatorProcess, dir: string): Harness {
  const tokenFile = path.join(dir, "token");
  if (!fs.existsSync(tokenFile)) fs.writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  const clients: FulfillmentClient[] = [];
  const Lab = loadLabProtos().bmwlab.v1.FulfillmentLab;
  const lab = new Lab(sim.address, grpc.credentials.createInsecure());
  return {
    sim, dir, tokenFile, lab,
    client: (opts = {}) => {
      const c = new FulfillmentClient({
        address: sim.address, transport: { kind: "plaintext" }, tokenFile, deadlineMs: 5_000,
        retry: { initialDelayMs: 20, maxDelayMs: 100 }, ...opts,
      });
      clients.push(c);
      return c;
    },
    close: async () => {
      clients.forEach((c) => c.close());
      lab.close();
      await sim.stop();
    },
  };
}

export function setFault(lab: FulfillmentLabClient,
  fault: { method?: MethodFault | Partial<MethodFault>; lifecycle?: Partial<LifecycleFault>; list?: Partial<ListFault> }): Promise<void> {
  const req = fault.method ? { method: fault.method } : fault.list ? { list: fault.list } : { lifecycle: fault.lifecycle };
  return new Promise((resolve, reject) => lab.SetFault(req, (err) => (err ? reject(err) : resolve())));
}

export function clearFaults(lab: FulfillmentLabClient): Promise<void> {
  return new Promise((resolve, reject) => lab.ClearFaults({}, (err) => (err ? reject(err) : resolve())));
}

export function stats(lab: FulfillmentLabClient): Promise<LabStats> {
  return new Promise((resolve, reject) => lab.Stats({}, (err, res) => (err || !res ? reject(err) : resolve(res))));
}

/** Collects boot events until `count` arrived; fails after timeoutMs. */
export function nextBoots(lab: FulfillmentLabClient, count: number, replay = false, timeoutMs = 10_000): Promise<BootEvent[]> {
  return new Promise((resolve, reject) => {
    const got: BootEvent[] = [];
    const stream = lab.WatchBoots({ replay });
    const timer = setTimeout(() => {
      stream.cancel();
      reject(new Error(`only ${got.length} of ${count} boots within ${timeoutMs} ms`));
    }, timeoutMs);
    stream.on("data", (e: BootEvent) => {
      got.push(e);
      if (got.length === count) {
        clearTimeout(timer);
        stream.cancel();
        resolve(got);
      }
    });
    stream.on("error", (err: grpc.ServiceError) => {
      if (err.code !== grpc.status.CANCELLED) reject(err);
    });
  });
}

/** A BMI the way the program builds one. */
export function workerBmi(name: string, extra: Partial<BareMetalInstance> = {}): BareMetalInstance {
  return {
    metadata: {
      name, labels: { "osac.openshift.io/cluster-order": "order-1", "osac.openshift.io/instance-type": "compute" },
      annotations: { "osac.openshift.io/owner-reference": "ClusterOrder/order-1" },
    },
    spec: {
      catalog_item: { name: SYSTEM_ITEM }, user_data: '{"ignition":{"version":"3.4.0"}}', instance_type: "compute",
      network_attachments: [{ subnet: { name: "tenant-subnet" }, interface: "ens1f0", primary: true }],
    },
    ...extra,
  };
}

export { eventually } from "../support/eventually";

/** A raw osac.private.v1 stub, to send what the product client never sends (no tenant, bad filters…). */
export function rawCall<Req, Res>(address: string, service: "BareMetalInstances" | "BareMetalInstanceCatalogItems",
  method: "List" | "Create" | "Get", request: Req, token?: string): Promise<Res> {
  const v1 = loadFulfillmentProtos().grpc.osac.private.v1;
  const def = v1[service].service[method] as unknown as { path: string; requestSerialize: (r: Req) => Buffer; responseDeserialize: (b: Buffer) => Res };
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  if (token) md.set("authorization", `Bearer ${token}`);
  return new Promise<Res>((resolve, reject) => {
    client.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, md, { deadline: Date.now() + 5_000 },
      (err, res) => {
        client.close();
        if (err || res === undefined) reject(err);
        else resolve(res);
      });
  });
}
