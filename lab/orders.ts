// A sample ClusterOrder with the world around it, as AAP and the fulfillment controller leave it on a
// hub before the bare-metal worker flow starts (OSAC-2135 §2 step 2): the namespace, the cluster's
// pull secret, HostedCluster (platform Agent), one NodePool per node set at 0 replicas, the
// ClusterDeployment in the hosted control plane namespace, the fulfillment-service Cluster, and the
// ClusterOrder with status.clusterReference. Re-running it for the same order adopts what exists.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as k8s from "@kubernetes/client-node";
import { Connection } from "../clients/fulfillment/connection";
import { loadFulfillmentProtos } from "../protos/fulfillment";
import type { ClusterOut } from "../clients/fulfillment/types";
import { httpStatus, Kube, RESOURCES } from "./kube";
import type { FulfillmentEndpoint } from "./labControl";
import { CLUSTER_VERSION_ID, INSTANCE_TYPE_PORTS, LAB_SECURITY_GROUPS, LAB_SUBNET, LAB_TENANT, labSshPublicKey, RELEASE_IMAGE } from "./world";

export interface SampleNodeRequest {
  nodeSet: string;
  /** At least 1 (the ClusterOrder CRD's minimum). */
  numberOfNodes: number;
  /** BareMetalInstanceType name: `compute` or `gpu` in the lab's world. */
  instanceType: string;
}

export interface SampleOrderSpec {
  namespace: string;
  name: string;
  nodeRequests: SampleNodeRequest[];
  /** ClusterVersion id of the simulator's Cluster; default the one whose DiskImage exists. */
  clusterVersionId?: string;
}

export interface SampleOrder {
  namespace: string;
  name: string;
  uid: string;
  /** The fulfillment-service Cluster id (label osac.openshift.io/clusterorder-uuid on the order). */
  clusterId: string;
  pullSecretName: string;
  hostedCluster: { namespace: string; name: string };
  /** NodePool name per node set. */
  nodePools: Record<string, string>;
  clusterDeployment: { namespace: string; name: string };
  /** Where HyperShift runs the hosted control plane (holds the ClusterDeployment). */
  controlPlaneNamespace: string;
}

/** What createSampleOrder needs of a lab. */
export interface SampleOrderContext {
  kubeconfigPath: string;
  fulfillment: FulfillmentEndpoint & { tokenFile: string };
  /** Labels that put a namespace in the lab controllers' scope. */
  namespaceLabels: Record<string, string>;
  pullSecret: { dockerconfigjson: string };
}

export const ORDER_UUID_LABEL = "osac.openshift.io/clusterorder-uuid";
export const TENANT_ANNOTATION = "osac.openshift.io/tenant";
export const CLUSTERORDER_LABEL = "osac.openshift.io/clusterorder";
export const NODE_SET_LABEL = "osac.openshift.io/node-set";

async function ignoreExists<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    if (httpStatus(e) === 409) return undefined;
    throw e;
  }
}

export async function ensureNamespace(kc: k8s.KubeConfig, name: string, labels: Record<string, string>): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name, labels } } });
  } catch (e) {
    if (httpStatus(e) !== 409) throw e;
    if (Object.keys(labels).length > 0) {
      await core.patchNamespace({ name, body: { metadata: { labels } } }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    }
  }
}

/** Names of the simulator Cluster: unique per (namespace, order) and a valid RFC 1123 label. */
function clusterName(namespace: string, name: string): string {
  const full = `${namespace}-${name}`;
  if (full.length <= 63) return full;
  return `${full.slice(0, 54)}-${crypto.createHash("sha256").update(full).digest("hex").slice(0, 8)}`;
}

async function ensureSimulatorCluster(ctx: SampleOrderContext, spec: SampleOrderSpec, secretName: string, sshKey: string): Promise<ClusterOut> {
  const v1 = loadFulfillmentProtos().grpc.osac.private.v1;
  const conn = new Connection({
    address: ctx.fulfillment.address, tokenFile: ctx.fulfillment.tokenFile,
    transport: ctx.fulfillment.plaintext ? { kind: "plaintext" } : { kind: "tls", caFile: ctx.fulfillment.caFile, serverNameOverride: "localhost" },
  });
  const methods = v1.Clusters.service;
  const name = clusterName(spec.namespace, spec.name);
  try {
    const existing = await conn.unary(methods.List, { filter: `this.metadata.name == "${name}"`, limit: 1 }, { idempotent: true });
    if (existing.items[0]) return existing.items[0];
    const nodeSets: Record<string, object> = {};
    for (const r of spec.nodeRequests) {
      const fabric = INSTANCE_TYPE_PORTS[r.instanceType]?.find((p) => p !== "eno1") ?? "";
      // Field 1 carries the BareMetalInstanceType reference in the redesigned ClusterNodeSet.
      nodeSets[r.nodeSet] = { host_type: { name: r.instanceType }, size: r.numberOfNodes, fabric_interface: fabric };
    }
    const res = await conn.unary(methods.Create, {
      object: {
        metadata: { name, tenant: LAB_TENANT },
        spec: {
          node_sets: nodeSets, version: { id: spec.clusterVersionId ?? CLUSTER_VERSION_ID }, ssh_public_key: sshKey,
          network_attachment: { subnet: { name: LAB_SUBNET }, security_groups: LAB_SECURITY_GROUPS.map((g) => ({ name: g })) },
          pull_secret_secret: { name: secretName },
        },
      },
    }, { idempotent: false });
    if (!res.object) throw new Error("Clusters/Create returned no object");
    return res.object;
  } finally {
    conn.close();
  }
}

export async function createSampleOrder(ctx: SampleOrderContext, spec: SampleOrderSpec): Promise<SampleOrder> {
  if (spec.nodeRequests.length === 0) throw new Error("a sample order needs at least one node request");
  for (const r of spec.nodeRequests) {
    if (!Number.isInteger(r.numberOfNodes) || r.numberOfNodes < 1) throw new Error(`node set ${r.nodeSet}: numberOfNodes must be ≥ 1`);
  }
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(ctx.kubeconfigPath);
  const kube = new Kube(kc, "osac-aap");
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const { namespace: ns, name } = spec;
  const hcpNamespace = `${ns}-${name}`;
  const secretName = `${name}-pull-secret`;
  const sshKey = labSshPublicKey();
  const sampleLabels = { ...ctx.namespaceLabels, "baremetal-workers.lab/sample-order": name };
  await ensureNamespace(kc, ns, sampleLabels);
  await ensureNamespace(kc, hcpNamespace, sampleLabels);

  await ignoreExists(core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: secretName, namespace: ns },
      type: "kubernetes.io/dockerconfigjson",
      data: { ".dockerconfigjson": Buffer.from(ctx.pullSecret.dockerconfigjson).toString("base64") },
    },
  }));

  await ignoreExists(kube.create(RESOURCES.hostedCluster, {
    metadata: { name, namespace: ns },
    spec: {
      release: { image: RELEASE_IMAGE },
      pullSecret: { name: secretName },
      platform: { type: "Agent", agent: { agentNamespace: ns } },
      networking: {
        networkType: "OVNKubernetes",
        clusterNetwork: [{ cidr: "10.132.0.0/14" }],
        serviceNetwork: [{ cidr: "172.31.0.0/16" }],
      },
      etcd: { managementType: "Managed", managed: { storage: { type: "PersistentVolume", persistentVolume: { size: "8Gi" } } } },
      services: [
        { service: "APIServer", servicePublishingStrategy: { type: "LoadBalancer" } },
        { service: "OAuthServer", servicePublishingStrategy: { type: "Route" } },
        { service: "Konnectivity", servicePublishingStrategy: { type: "Route" } },
        { service: "Ignition", servicePublishingStrategy: { type: "Route" } },
      ],
    },
  }));

  const nodePools: Record<string, string> = {};
  for (const r of spec.nodeRequests) {
    const npName = `${name}-${r.nodeSet}`;
    nodePools[r.nodeSet] = npName;
    await ignoreExists(kube.create(RESOURCES.nodePool, {
      metadata: { name: npName, namespace: ns, labels: { [CLUSTERORDER_LABEL]: name, [NODE_SET_LABEL]: r.nodeSet } },
      spec: {
        clusterName: name,
        replicas: 0,
        management: { upgradeType: "InPlace" },
        platform: { type: "Agent", agent: { agentLabelSelector: { matchLabels: { agentBareMetal: "true", [NODE_SET_LABEL]: r.nodeSet } } } },
        release: { image: RELEASE_IMAGE },
      },
    }));
  }

  await ignoreExists(kube.create(RESOURCES.clusterDeployment, {
    metadata: { name, namespace: hcpNamespace },
    spec: {
      baseDomain: "lab.example.com",
      clusterName: name,
      installed: true,
      platform: { agentBareMetal: { agentSelector: {} } },
    },
  }));

  const cluster = await ensureSimulatorCluster(ctx, spec, secretName, sshKey);

  await ignoreExists(kube.create(RESOURCES.clusterOrder, {
    metadata: {
      name, namespace: ns, labels: { [ORDER_UUID_LABEL]: cluster.id }, annotations: { [TENANT_ANNOTATION]: LAB_TENANT },
    },
    spec: {
      templateID: "osac.templates.ocp_baremetal_workers",
      releaseImage: RELEASE_IMAGE,
      sshPublicKey: sshKey,
      networkAttachment: { subnetRef: LAB_SUBNET, securityGroupRefs: [...LAB_SECURITY_GROUPS] },
      nodeRequests: spec.nodeRequests.map((r) => ({ nodeSet: r.nodeSet, numberOfNodes: r.numberOfNodes, bareMetal: { instanceType: r.instanceType } })),
    },
  }));
  const order = await kube.get(RESOURCES.clusterOrder, ns, name);
  if (!order?.metadata.uid) throw new Error(`ClusterOrder ${ns}/${name} was not created`);
  await kube.patchStatus(RESOURCES.clusterOrder, ns, name, {
    clusterReference: { namespace: ns, hostedClusterName: name, roleBindingName: `${name}-admin`, serviceAccountName: `${name}-admin` },
  });
  return {
    namespace: ns, name, uid: order.metadata.uid, clusterId: cluster.id, pullSecretName: secretName,
    hostedCluster: { namespace: ns, name }, nodePools, clusterDeployment: { namespace: hcpNamespace, name },
    controlPlaneNamespace: hcpNamespace,
  };
}

/** The sample orders `lab up --orders N` creates: order-1..N, each with 2 compute and 1 gpu worker. */
export function defaultSampleOrders(n: number): SampleOrderSpec[] {
  return Array.from({ length: n }, (_, i) => ({
    namespace: `lab-order-${i + 1}`, name: `order-${i + 1}`,
    nodeRequests: [
      { nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" },
      { nodeSet: "gpu", numberOfNodes: 1, instanceType: "gpu" },
    ],
  }));
}

export function readPullSecretFile(file: string): { token: string; dockerconfigjson: string } {
  return JSON.parse(fs.readFileSync(file, "utf8")) as { token: string; dockerconfigjson: string };
}
