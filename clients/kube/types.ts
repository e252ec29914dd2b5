// Typed views of the unstructured objects the program reads and writes. Only the fields the program
// uses are declared; everything else passes through untouched. ClusterOrder is the planner's type.
export type { ClusterOrder } from "../../planner/types";

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
  creationTimestamp?: string;
  deletionTimestamp?: string;
  generateName?: string;
}

/** A namespaced object's address. */
export interface ObjectRef {
  namespace: string;
  name: string;
}

/** agent-install.openshift.io/v1beta1 Agent. */
export interface AgentObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    approved?: boolean;
    clusterDeploymentName?: { name?: string; namespace?: string } | null;
    role?: string;
    hostname?: string;
  };
  status?: {
    debugInfo?: { state?: string; stateInfo?: string };
    inventory?: {
      hostname?: string;
      interfaces?: { name?: string; macAddress?: string; flags?: string[]; ipV4Addresses?: string[]; ipV6Addresses?: string[] }[];
    };
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    role?: string;
  };
}

/** agent-install.openshift.io/v1beta1 InfraEnv. */
export interface InfraEnvObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    pullSecretRef?: { name: string };
    sshAuthorizedKey?: string;
    clusterRef?: { name: string; namespace: string };
    cpuArchitecture?: string;
  };
  status?: {
    bootArtifacts?: { discoveryIgnitionURL?: string; initrd?: string; kernel?: string; rootfs?: string; ipxeScript?: string };
    isoDownloadURL?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** hypershift.openshift.io/v1beta1 NodePool. */
export interface NodePoolObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    clusterName?: string;
    replicas?: number;
    platform?: { type?: string; agent?: { agentLabelSelector?: { matchLabels?: Record<string, string> } } };
  };
  status?: { replicas?: number; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/** hive.openshift.io/v1 ClusterDeployment. */
export interface ClusterDeploymentObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: { clusterName?: string; baseDomain?: string };
}

/** coordination.k8s.io/v1 Lease; times are RFC 3339 with microseconds (MicroTime). */
export interface LeaseObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** core/v1 Secret as read (data values base64). */
export interface SecretObject {
  metadata: ObjectMeta;
  type?: string;
  data?: Record<string, string>;
}

/** The fields of an Agent the bind patch may set (merge patch; null deletes a label). */
export interface AgentPatch {
  metadata?: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> };
  spec?: { approved?: boolean; clusterDeploymentName?: { name: string; namespace: string } | null };
}

export interface EventInput {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /** A deterministic Event name makes the event idempotent (created once); else a generated name. */
  name?: string;
  /** What the program did (events.k8s.io `action`); defaults to the reason. */
  action?: string;
}

/** The phase of one watch notification. */
export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
