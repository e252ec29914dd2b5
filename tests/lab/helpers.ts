// Fixtures for the lab's own tests: an in-process lab on the jest apiserver (fast timings), the
// InfraEnv a product would create, an HTTPS fetch with or without the lab CA, and BMIs created the
// way the product creates them (tenant system, pass-through catalog item, user_data = ignition).
import * as fs from "node:fs";
import * as https from "node:https";
import * as os from "node:os";
import * as path from "node:path";
import type * as tls from "node:tls";
import type { FulfillmentClient } from "../../clients/fulfillment";
import { withInstanceType } from "../../clients/fulfillment/proposals";
import type { BareMetalInstanceOut } from "../../clients/fulfillment/types";
import type { Agent, InfraEnv } from "../../lab/controllers/types";
import { Lab, startLab, TIMING_PRESETS } from "../../lab";
import { Kube, RESOURCES } from "../../lab/kube";
import { LAB_SECURITY_GROUPS, LAB_SUBNET, SYSTEM_CATALOG_ITEM } from "../../lab/world";
import { eventually } from "../support/eventually";

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `bmw-${prefix}-`));
}

export async function startTestLab(prefix: string): Promise<Lab> {
  const kubeconfig = process.env.KUBECONFIG;
  if (!kubeconfig) throw new Error("KUBECONFIG is not set: run through jest's global setup");
  return startLab({ dir: tempDir(prefix), kubeconfig, detached: false, preset: "fast" });
}

export const FAST = TIMING_PRESETS.fast;

/** A namespace in the lab's scope with the order's pull secret, and the InfraEnv the product would create. */
export async function infraEnvWithSecret(lab: Lab, kube: Kube, ns: string, name: string): Promise<InfraEnv> {
  await lab.createNamespace(ns);
  await kube.core.createNamespacedSecret({
    namespace: ns,
    body: {
      metadata: { name: `${name}-pull-secret` }, type: "kubernetes.io/dockerconfigjson",
      data: { ".dockerconfigjson": Buffer.from(lab.pullSecret.dockerconfigjson).toString("base64") },
    },
  }).catch((e: { code?: number }) => {
    if (e.code !== 409) throw e;
  });
  return createInfraEnv(kube, ns, `${name}-infraenv`, `${name}-pull-secret`);
}

export function createInfraEnv(kube: Kube, ns: string, name: string, secret: string): Promise<InfraEnv> {
  return kube.create<InfraEnv>(RESOURCES.infraEnv, {
    metadata: { name, namespace: ns },
    spec: { pullSecretRef: { name: secret }, sshAuthorizedKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB0dC3hZ0yKk2cmP6kFQkFh1VJ2yJv1j5bLwJ9s2n7cW test" },
  });
}

export async function ignitionUrl(kube: Kube, ns: string, name: string, notUid?: string): Promise<{ url: string; uid: string }> {
  return eventually(async () => {
    const ie = await kube.get<InfraEnv>(RESOURCES.infraEnv, ns, name);
    const url = ie?.status?.bootArtifacts?.discoveryIgnitionURL;
    return url && ie?.metadata.uid && ie.metadata.uid !== notUid ? { url, uid: ie.metadata.uid } : undefined;
  }, 15_000);
}

export interface Fetched {
  status: number;
  body: string;
  issuer?: string;
}

/** GET over HTTPS trusting only `ca` (or the system roots when absent). */
export function httpsGet(url: string, ca?: Buffer): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, timeout: 5_000, agent: false }, (res) => {
      const issuer = (res.socket as tls.TLSSocket).getPeerCertificate().issuer?.CN;
      let body = "";
      res.on("data", (d: Buffer) => (body += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body, issuer: Array.isArray(issuer) ? issuer[0] : issuer }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
  });
}

let seq = 0;

/** Creates a BMI as the program does and waits until its host runs (status MACs reported). */
export async function bootBmi(client: FulfillmentClient, userData: string, instanceType = "compute"): Promise<BareMetalInstanceOut> {
  const name = `lab-test-${process.pid}-${Date.now().toString(36)}-${seq++}`;
  const fabric = instanceType === "gpu" ? "ens2f0" : "ens1f0";
  const created = await client.bareMetalInstances.create(withInstanceType({
    metadata: { name, tenant: "system", labels: { "osac.openshift.io/cluster-order": "lab-test" } },
    spec: {
      catalog_item: { name: SYSTEM_CATALOG_ITEM },
      user_data: userData,
      network_attachments: [{ subnet: { name: LAB_SUBNET }, security_groups: LAB_SECURITY_GROUPS.map((g) => ({ name: g })), interface: fabric, primary: true }],
    },
  }, instanceType));
  return eventually(async () => {
    const bmi = await client.bareMetalInstances.get(created.id);
    return bmi.status?.state === "BARE_METAL_INSTANCE_STATE_RUNNING" ? bmi : undefined;
  }, 15_000);
}

export async function agentsIn(kube: Kube, ns: string): Promise<Agent[]> {
  return kube.list<Agent>(RESOURCES.agent, ns);
}
