// Kubernetes helpers for tests: a client for the run's control plane and a fresh namespace per test.
// A bare apiserver has no namespace controller, so namespaces are never deleted; each test gets a new one.
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
