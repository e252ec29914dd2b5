// The shapes of the upstream custom resources the lab's controllers read and write, limited to the
// fields they use (names as in the CRDs in shared/crds).
import type { KubeObject, LabelSelector } from "../kube";

export interface AgentInterface {
  name: string;
  macAddress: string;
  flags: string[];
  ipV4Addresses: string[];
  ipV6Addresses: string[];
  hasCarrier?: boolean;
  mtu?: number;
  speedMbps?: number;
  vendor?: string;
  product?: string;
  biosDevName?: string;
}

export interface AgentCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface AgentSpec {
  approved: boolean;
  role: string;
  clusterDeploymentName?: { name?: string; namespace?: string } | null;
  hostname?: string;
}

export interface AgentStatus {
  debugInfo?: { state?: string; stateInfo?: string; eventsURL?: string; logsURL?: string };
  inventory?: {
    hostname?: string;
    interfaces?: AgentInterface[];
    cpu?: { architecture?: string; count?: number; modelName?: string; clockMegahertz?: number; flags?: string[] };
    memory?: { physicalBytes?: number; usableBytes?: number };
    disks?: { id: string; name?: string; path?: string; driveType?: string; sizeBytes?: number; bootable?: boolean;
      installationEligibility?: { eligible?: boolean; notEligibleReasons: string[] } }[];
    systemVendor?: { manufacturer?: string; productName?: string; serialNumber?: string; virtual?: boolean };
    bmcAddress?: string;
    boot?: { currentBootMode?: string };
    reportTime?: string;
  };
  conditions?: AgentCondition[];
  progress?: { currentStage?: string; stageStartTime?: string; stageUpdateTime?: string; installationPercentage?: number };
  role?: string;
  bootstrap?: boolean;
}

export type Agent = KubeObject<AgentSpec, AgentStatus>;

export interface InfraEnvSpec {
  pullSecretRef?: { name?: string };
  sshAuthorizedKey?: string;
  agentLabels?: Record<string, string>;
  agentApproval?: { autoApprove?: boolean };
  clusterRef?: { name?: string; namespace?: string };
}

export interface InfraEnvStatus {
  bootArtifacts?: { discoveryIgnitionURL?: string };
  agentLabelSelector?: LabelSelector;
  createdTime?: string;
  conditions?: AgentCondition[];
  debugInfo?: { eventsURL?: string };
}

export type InfraEnv = KubeObject<InfraEnvSpec, InfraEnvStatus>;

export interface NodePoolSpec {
  clusterName: string;
  replicas?: number;
  platform: { type: string; agent?: { agentLabelSelector?: LabelSelector } };
}

export interface NodePoolStatus {
  replicas?: number;
  conditions?: { type: string; status: string; reason?: string; message?: string; lastTransitionTime: string; observedGeneration?: number }[];
}

export type NodePool = KubeObject<NodePoolSpec, NodePoolStatus>;

export type HostedCluster = KubeObject<{ platform?: { type?: string; agent?: { agentNamespace?: string } } }, unknown>;

export type ClusterDeployment = KubeObject<{ clusterName?: string }, unknown>;
