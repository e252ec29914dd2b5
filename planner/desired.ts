// Builders of what the program declares: the InfraEnv, one BMI per live incarnation, the Agent binding
// (OSAC-2135 §2 steps 3, 8, 11; §11.1, §11.5, §11.9).
import {
  AGENT_BAREMETAL_LABEL, infraEnvName, NODE_SET_LABEL, ORDER_LABEL, OWNER_ANNOTATION, pullSecretName, WORKER_NAME_LABEL,
} from "./names";
import type { CreateInputs } from "./gates";
import type { ClusterOrder, DesiredBinding, DesiredBmi, DesiredInfraEnv, ObservedAgent, Snapshot, WorkerStatus } from "./types";

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
  return `${snapshot.order.metadata.name}-${snapshot.newName()}`;
}

/** The fabric interface of a worker's instance type: the request's override, else the first fabric port. */
export function fabricInterfaceFor(snapshot: Snapshot, nodeSet: string, instanceType: string | undefined): string {
  const req = (snapshot.order.spec.nodeRequests ?? []).find((r) => r.nodeSet === nodeSet);
  const type = instanceType ?? req?.bareMetal?.instanceType;
  return req?.fabricInterface || (type ? snapshot.instanceTypes[type]?.fabricPort : undefined) || "";
}

/**
 * The BMI of an entry's current incarnation. `inputs` are the create inputs of this snapshot; an
 * existing BMI (recorded id) is adopted, so its immutable inputs only matter for a create.
 */
export function desiredBmi(snapshot: Snapshot, entry: WorkerStatus, inputs: CreateInputs | undefined): DesiredBmi {
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
