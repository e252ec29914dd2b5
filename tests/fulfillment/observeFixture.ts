// observe() against the in-process simulator and a stand-in hub: an order whose status records BMIs,
// the lab control client to switch faults, and the simulator's call counters.
import * as fs from "node:fs";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { observe, type ObserveDeps, type Observation } from "../../io/observe";
import { FulfillmentClient, type BareMetalInstanceOut } from "../../clients/fulfillment";
import type { HubReader, NodePoolObject } from "../../clients/kube";
import { type FulfillmentLabClient, loadLabProtos } from "../../lab/fulfillment/labProtos";
import type { SimulatorSeed } from "../../lab/fulfillment/seed";
import { type RunningSimulator, startSimulator } from "../../lab/fulfillment/server";
import { defaultPlannerConfig } from "../../planner/config";
import type { ClusterOrder } from "../../planner/types";
import { ADMIN_TOKEN, tempDir, testSeed, workerBmi } from "./helpers";

export const ORDER_UID = "order-1"; // the owner label workerBmi() sets

type Recorded = { id: string; name?: string; metadata?: { name: string } | null };

export function orderRecording(bmis: Recorded[], extra: Partial<ClusterOrder["spec"]> = {}): ClusterOrder {
  return {
    metadata: { name: "demo", namespace: "ns", uid: ORDER_UID },
    spec: { nodeRequests: [{ nodeSet: "compute", numberOfNodes: bmis.length, bareMetal: { instanceType: "compute" } }], ...extra },
    status: {
      workers: bmis.map((b, i) => ({
        name: `w${i}`, nodeSet: "compute", kind: "BareMetalInstance", phase: "Ready",
        bareMetalInstance: { name: b.name ?? b.metadata?.name ?? "", id: b.id }, instanceType: "compute",
      })),
    },
  };
}

export function hubWith(order: ClusterOrder, nodePools: NodePoolObject[] = []): HubReader {
  return {
    getClusterOrder: async () => order,
    listInfraEnvs: async () => [],
    listAgents: async () => [],
    listNodePools: async () => nodePools,
    listClusterDeployments: async () => [],
  };
}

export interface ObserveFixture {
  sim: RunningSimulator;
  client: FulfillmentClient;
  lab: FulfillmentLabClient;
  tokenFile: string;
  createBmis(n: number, prefix?: string): Promise<BareMetalInstanceOut[]>;
  /** Observes as a preview or `status` does (looks only), or with `opts` as an update or the reconciler does. */
  observeOrder(order: ClusterOrder, client?: FulfillmentClient, opts?: Partial<ObserveDeps>): Promise<Observation>;
  calls(method: string): number;
  close(): Promise<void>;
}

export async function startObserveFixture(seed: SimulatorSeed = testSeed()): Promise<ObserveFixture> {
  const dir = tempDir("observe");
  const sim = await startSimulator({ seed, stateDir: dir });
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  const client = new FulfillmentClient({ address: sim.address, transport: { kind: "plaintext" }, tokenFile, deadlineMs: 5_000,
    retry: { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 2 } });
  const Lab = loadLabProtos().bmwlab.v1.FulfillmentLab;
  const lab = new Lab(sim.address, grpc.credentials.createInsecure());
  return {
    sim, client, lab, tokenFile,
    createBmis: async (n, prefix = "w") => {
      const out: BareMetalInstanceOut[] = [];
      for (let i = 0; i < n; i++) out.push(await client.bareMetalInstances.create(workerBmi(`${prefix}-${i}`)));
      return out;
    },
    observeOrder: (order, c = client, opts = {}) => observe({ kube: hubWith(order), fulfillment: c, config: defaultPlannerConfig(), ...opts },
      { namespace: order.metadata.namespace, name: order.metadata.name }),
    calls: (method) => sim.engine.calls.get(method) ?? 0,
    close: async () => {
      client.close();
      lab.close();
      await sim.stop();
    },
  };
}
