// A Kubernetes API request as the reconciler makes it (clients/kube: one pooled Agent per kubeconfig)
// against client-node's own KubeConfig (a new undici Agent, so a new TLS connection, per request), on the
// bench's lab apiserver: CPU and wall time per request, and the TLS connections each opened.
import diagnosticsChannel from "node:diagnostics_channel";
import * as k8s from "@kubernetes/client-node";
import { loadKubeConfig } from "../clients/kube";
import { median } from "./stats";

export interface KubeRequestsVariant {
  how: "pooled" | "client-node";
  requests: number;
  cpuMsPerRequest: number;
  wallMsPerRequest: number;
  connections: number;
}

export async function measureKubeRequests(kubeconfigPath: string, namespace: string, requests = 200, rounds = 3): Promise<KubeRequestsVariant[]> {
  let connections = 0;
  const onConnect = () => void connections++;
  diagnosticsChannel.subscribe("undici:client:connected", onConnect);
  try {
    const variants: KubeRequestsVariant[] = [];
    for (const how of ["pooled", "client-node"] as const) {
      const cpu: number[] = [];
      const wall: number[] = [];
      let opened = 0;
      for (let round = 0; round < rounds; round++) {
        const kc = how === "pooled" ? loadKubeConfig(kubeconfigPath) : rawKubeConfig(kubeconfigPath);
        const core = kc.makeApiClient(k8s.CoreV1Api);
        await core.readNamespace({ name: namespace }); // warm: modules loaded, first connection
        const c0 = connections;
        const t0 = performance.now();
        const u0 = process.cpuUsage();
        for (let i = 0; i < requests; i++) await core.readNamespace({ name: namespace });
        const u = process.cpuUsage(u0);
        wall.push((performance.now() - t0) / requests);
        cpu.push((u.user + u.system) / 1000 / requests);
        opened = Math.max(opened, connections - c0);
      }
      variants.push({ how, requests, cpuMsPerRequest: median(cpu), wallMsPerRequest: median(wall), connections: opened });
    }
    return variants;
  } finally {
    diagnosticsChannel.unsubscribe("undici:client:connected", onConnect);
  }
}

function rawKubeConfig(file: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(file);
  return kc;
}
