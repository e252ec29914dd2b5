// A tiny snapshot builder for the planner's pure tests: one order with a sensible, fully "green"
// default world (InfraEnv with ignition, DiskImage, instance type, ClusterDeployment, NodePool), and
// small constructors for entries, BMIs and Agents. Everything is overridable.
import { defaultPlannerConfig } from "../../planner/config";
import {
  AGENT_BAREMETAL_LABEL, INFRAENV_AGENT_LABEL, NODE_SET_LABEL, ORDER_LABEL, WORKER_NAME_LABEL,
} from "../../planner/names";
import { plan } from "../../planner/plan";
import type {
  ClusterOrder, NodeRequest, ObservedAgent, ObservedBmi, Plan, PlannerConfig, Snapshot, WorkerStatus,
} from "../../planner/types";

export const T0 = new Date("2026-12-01T10:00:00Z");
export const NS = "tenant-a";
export const ORDER = "co1";
export const UID = "uid-co1";
export const IGNITION = JSON.stringify({ ignition: { version: "3.2.0" }, passwd: {} });

export function at(offsetMs: number): Date {
  return new Date(T0.getTime() + offsetMs);
}

export function iso(offsetMs: number): string {
  return new Date(T0.getTime() + offsetMs).toISOString().replace(".000Z", "Z");
}

export const SEC = 1000;
export const MIN = 60 * SEC;

/** Deterministic opaque names: n1, n2, ... */
export function counterNames(prefix = "n"): () => string {
  let i = 0;
  return () => `${prefix}${++i}`;
}

export function bmRequest(nodeSet: string, numberOfNodes: number, instanceType = "bm.small", fabricInterface?: string): NodeRequest {
  return { nodeSet, numberOfNodes, bareMetal: { instanceType }, ...(fabricInterface ? { fabricInterface } : {}) };
}

export interface SnapOptions extends Partial<Omit<Snapshot, "order">> {
  nodeRequests?: NodeRequest[];
  workers?: WorkerStatus[];
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  orderPatch?: (o: ClusterOrder) => void;
  configPatch?: Partial<PlannerConfig>;
}

export function makeOrder(o: SnapOptions = {}): ClusterOrder {
  const order: ClusterOrder = {
    apiVersion: "osac.openshift.io/v1alpha1",
    kind: "ClusterOrder",
    metadata: {
      name: ORDER, namespace: NS, uid: UID, resourceVersion: "100", generation: 3,
      ...(o.annotations ? { annotations: o.annotations } : {}),
      ...(o.deletionTimestamp ? { deletionTimestamp: o.deletionTimestamp } : {}),
    },
    spec: {
      templateID: "ocp_small",
      sshPublicKey: "ssh-ed25519 AAAAtest",
      networkAttachment: { subnetRef: "subnet-1", securityGroupRefs: ["sg-1", "sg-2"] },
      nodeRequests: o.nodeRequests ?? [bmRequest("compute", 2)],
    },
    status: {
      clusterReference: { namespace: NS, hostedClusterName: ORDER },
      workers: o.workers ?? [],
      conditions: [],
    },
  };
  o.orderPatch?.(order);
  return order;
}

/**
 * What the observer's Get of every recorded id missing from the List answers in a consistent world:
 * NOT_FOUND for each. A test of a List fault (an item left out) passes `goneBmiIds` itself.
 */
export function confirmedGoneIds(order: ClusterOrder, bmis: readonly ObservedBmi[] | undefined): string[] | undefined {
  if (bmis === undefined) return undefined;
  const listed = new Set(bmis.map((b) => b.id));
  return (order.status?.workers ?? []).map((w) => w.bareMetalInstance?.id).filter((id): id is string => Boolean(id) && !listed.has(id!));
}

export function snap(o: SnapOptions = {}): Snapshot {
  const { nodeRequests: _n, workers: _w, annotations: _a, deletionTimestamp: _d, orderPatch: _p, configPatch, ...rest } = o;
  void _n; void _w; void _a; void _d; void _p;
  const order = makeOrder(o);
  const bmis = "bmis" in o ? o.bmis : [];
  return {
    now: T0,
    order,
    goneBmiIds: "goneBmiIds" in o ? o.goneBmiIds : confirmedGoneIds(order, bmis),
    infraEnv: { name: `${ORDER}-infraenv`, uid: "ie-1", ignitionUrl: "https://assisted.example/ignition" },
    recordedInfraEnvUid: "ie-1",
    ignition: { ok: true, content: IGNITION, bytes: Buffer.byteLength(IGNITION) },
    diskImage: { ok: true, id: "di-419", name: "rhcos-4.19" },
    instanceTypes: { "bm.small": { name: "bm.small", fabricPort: "eth1" }, "bm.gpu": { name: "bm.gpu", fabricPort: "ens3f0" } },
    catalogItem: "cat-system",
    bmis: [],
    agents: [],
    nodePools: [{ name: "np-compute", namespace: NS, nodeSet: "compute", replicas: 2, statusReplicas: 2 }],
    clusterDeployment: { name: ORDER, namespace: NS },
    fulfillmentErrors: 0,
    config: { ...defaultPlannerConfig(), ...configPatch },
    newName: counterNames(),
    ...rest,
  };
}

/** A status entry; defaults describe a created (id known) Provisioning worker of node set compute. */
export function entry(name: string, o: Partial<WorkerStatus> = {}): WorkerStatus {
  return {
    name, nodeSet: "compute", instanceType: "bm.small", kind: "BareMetalInstance",
    bareMetalInstance: { name: `${ORDER}-b-${name}`, id: `id-${name}` },
    bmiCreateState: "Attempted", phase: "Provisioning", attemptCount: 1,
    attemptStartedAt: iso(-5 * MIN), creationTimestamp: iso(-5 * MIN),
    ...o,
  };
}

export function macOf(name: string, nic = 0): string {
  const hex = Buffer.from(name).toString("hex").padEnd(8, "0").slice(0, 8);
  return `0a:${nic.toString(16).padStart(2, "0")}:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}:${hex.slice(6, 8)}`;
}

/** The observed BMI of an entry built by `entry(name)`. */
export function bmiFor(name: string, o: Partial<ObservedBmi> = {}): ObservedBmi {
  return {
    id: `id-${name}`, name: `${ORDER}-b-${name}`, state: "Running", deleting: false,
    macs: [macOf(name, 0), macOf(name, 1)], labels: { [ORDER_LABEL]: UID }, ...o,
  };
}

/** An unbound Agent of our InfraEnv whose NIC matches `bmiFor(host)`. */
export function agentFor(host: string, o: Partial<ObservedAgent> = {}): ObservedAgent {
  return {
    name: `agent-${host}`, namespace: NS, uid: `auid-${host}`, resourceVersion: "1",
    labels: { [INFRAENV_AGENT_LABEL]: `${ORDER}-infraenv` },
    macs: [macOf(host, 1).toUpperCase()], approved: false, state: "known-unbound", ...o,
  };
}

/** The same Agent after our binding patch (labels, CD) in state `state`. */
export function boundAgent(host: string, slot: string, state = "installing", o: Partial<ObservedAgent> = {}): ObservedAgent {
  return agentFor(host, {
    labels: {
      [INFRAENV_AGENT_LABEL]: `${ORDER}-infraenv`, [AGENT_BAREMETAL_LABEL]: "true", [WORKER_NAME_LABEL]: slot,
      [NODE_SET_LABEL]: "compute", [ORDER_LABEL]: UID,
    },
    clusterDeploymentName: { name: ORDER, namespace: NS }, approved: true, state, ...o,
  });
}

export function planOf(o: SnapOptions = {}): Plan {
  return plan(snap(o));
}

export function statusOf(p: Plan, name: string): WorkerStatus | undefined {
  return p.status.workers.find((w) => w.name === name);
}

export function conditionOf(p: Plan, type: string) {
  return p.status.conditions.find((c) => c.type === type);
}

export function reasons(p: Plan): string[] {
  return p.events.map((e) => e.reason);
}
