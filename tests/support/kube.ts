// Kubernetes helpers for tests: a client for the run's control plane and a fresh namespace per test.
// Each test gets a namespace of its own; the test plane's controller-manager deletes them like a hub would.
import * as crypto from "node:crypto";
import * as k8s from "@kubernetes/client-node";

export function kubeConfig(): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromDefault();
  return kc;
}

export async function createTestNamespace(kc: k8s.KubeConfig, prefix = "t"): Promise<string> {
  const name = `${prefix}-${crypto.randomBytes(4).toString("hex")}`;
  await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name, labels: { "bmw-test": "true" } } } });
  return name;
}

