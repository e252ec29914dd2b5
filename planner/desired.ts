// Builders of what the program declares: the InfraEnv, one BMI per live incarnation, the Agent binding
// (OSAC-2135 §2 steps 3, 8, 11; §11.1, §11.5, §11.9).
import {
  AGENT_BAREMETAL_LABEL, bmiName, infraEnvName, NODE_SET_LABEL, ORDER_LABEL, OWNER_ANNOTATION, pullSecretName, WORKER_NAME_LABEL,
} from "./names";
import type { CreateInputs } from "./gates";
import type {
  ClusterOrder, DesiredBinding, DesiredBmi, DesiredInfraEnv, ObservedAgent, ObservedBmi, Snapshot, WorkerStatus,
} from "./types";

export const CLUSTER_ORDER_API_VERSION = "osac.openshift.io/v1alpha1";

export function desiredInfraEnv(order: ClusterOrder): DesiredInfraEnv {
  return {
    name: infraEnvName(order.metadata.name),
    namespace: order.metadata.namespace,
    pullSecretName: pullSecretName(order.metadata.name),
    ...(order.spec.sshPublicKey ? { sshAuthorizedKey: order.spec.sshPublicKey } : {}),
    owner: { apiVersion: order.apiVersion ?? CLUSTER_ORDER_API_VERSION, kind: "ClusterOrder", name: order.metadata.name, uid: order.metadata.uid },
  };
}

/** A fresh BMI name for a new incarnation: a deleted BMI's name stays reserved on the service. */
export function newBmiName(snapshot: Snapshot): string {
  return bmiName(snapshot.order.metadata.name, snapshot.newName());
}

/** The live BMI of an entry's current incarnation, by recorded id, else by name. */
export function observedBmiOf(snapshot: Snapshot, entry: WorkerStatus): ObservedBmi | undefined {
  const bmis = snapshot.bmis ?? [];
  const id = entry.bareMetalInstance?.id;
  if (id) return bmis.find((b) => b.id === id);
  const name = entry.bareMetalInstance?.name;
  return name ? bmis.find((b) => b.name === name) : undefined;
}

/** The fabric interface of a worker's instance type: the request's override, else the first fabric port. */
export function fabricInterfaceFor(snapshot: Snapshot, nodeSet: string, instanceType: string | undefined): string {
  const req = (snapshot.order.spec.nodeRequests ?? []).find((r) => r.nodeSet === nodeSet);
  const type = instanceType ?? req?.bareMetal?.instanceType;
  return req?.fabricInterface || (type ? snapshot.instanceTypes[type]?.fabricPort : undefined) || "";
}

/**
 * The BMI of an entry's current incarnation. `inputs` are the create inputs of this snapshot; an
 * existing BMI (recorded id) is adopted. A live BMI whose spec is observed is declared with its own
 * create-only inputs, so an edited order never shows the stack a difference on an existing BMI (I2);
 * the request only shapes new incarnations, and a difference is reported as drift (drift.ts).
 */
export function desiredBmi(snapshot: Snapshot, entry: WorkerStatus, inputs: CreateInputs | undefined): DesiredBmi {
  const bmi = requestedBmi(snapshot, entry, inputs);
  const live = observedBmiOf(snapshot, entry)?.spec;
  if (!live) return bmi;
  return {
    ...bmi,
    catalogItem: live.catalogItem,
    instanceType: live.instanceType,
    networkAttachment: live.networkAttachment
      ? { ...live.networkAttachment, securityGroups: [...live.networkAttachment.securityGroups], primary: true }
      : bmi.networkAttachment,
  };
}

/**
 * The BMI as the request and the entry describe it. For a BMI that is not observed (not listed this
 * time) this is also what earlier plans declared for it unless the order was edited since; an edit
 * of a create-only input shows as a difference the BMI provider ignores for an existing BMI.
 */
function requestedBmi(snapshot: Snapshot, entry: WorkerStatus, inputs: CreateInputs | undefined): DesiredBmi {
  const order = snapshot.order;
  const uid = order.metadata.uid;
  const network = order.spec.networkAttachment ?? order.spec.networkAttachments?.[0];
  const id = entry.bareMetalInstance?.id;
  return {
    name: entry.bareMetalInstance?.name ?? "",
    tenant: "system",
    labels: { [ORDER_LABEL]: uid },
    annotations: { [OWNER_ANNOTATION]: `ClusterOrder/${uid}` },
    catalogItem: snapshot.catalogItem,
    instanceType: entry.instanceType ?? "",
    diskImage: inputs?.diskImageId ?? "",
    userData: inputs?.userData ?? "",
    networkAttachment: {
      subnet: inputs?.subnet ?? network?.subnetRef ?? "",
      securityGroups: [...(inputs?.securityGroups ?? network?.securityGroupRefs ?? [])],
      interface: fabricInterfaceFor(snapshot, entry.nodeSet, entry.instanceType),
      primary: true,
    },
    ...(id ? { adoptId: id } : {}),
  };
}

export function desiredBinding(snapshot: Snapshot, entry: WorkerStatus, agent: ObservedAgent): DesiredBinding | undefined {
  const cd = snapshot.clusterDeployment;
  if (!cd) return undefined;
  return {
    agentName: agent.name,
    agentNamespace: agent.namespace,
    agentUid: agent.uid,
    clusterDeploymentName: { name: cd.name, namespace: cd.namespace },
    labels: {
      [AGENT_BAREMETAL_LABEL]: "true",
      [WORKER_NAME_LABEL]: entry.name,
      [NODE_SET_LABEL]: entry.nodeSet,
      [ORDER_LABEL]: snapshot.order.metadata.uid,
    },
  };
}
