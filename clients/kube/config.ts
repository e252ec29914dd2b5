// Where the program's Kubernetes credentials come from: an explicit kubeconfig file, $KUBECONFIG,
// or the in-cluster service account (in that order).
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as k8s from "@kubernetes/client-node";

const SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (path) {
    kc.loadFromFile(path);
  } else if (process.env.KUBECONFIG) {
    kc.loadFromDefault();
  } else if (process.env.KUBERNETES_SERVICE_HOST && fs.existsSync(SERVICE_ACCOUNT_TOKEN)) {
    kc.loadFromCluster();
  } else {
    throw new Error("no Kubernetes configuration: pass a kubeconfig path, set KUBECONFIG, or run in a cluster");
  }
  if (!kc.getCurrentCluster()) throw new Error(`kubeconfig ${path ?? process.env.KUBECONFIG ?? ""} has no current cluster`);
  return poolConnections(kc);
}

type CreateDispatcher = (cluster: k8s.Cluster | null, options: Record<string, unknown>) => { close?: () => unknown } | undefined;

/**
 * client-node (2.0.1) gives every API request a new undici Agent (KubeConfig.applySecurityAuthentication ->
 * createDispatcher), so every request opens a TLS connection of its own: a handshake and a certificate parse
 * each time (8.5 ms of CPU per request measured here), and a new connection for the apiserver. One Agent per
 * distinct server and TLS settings, kept as long as the KubeConfig, pools the connections as client-go does.
 * Watches take another path (an https.Agent client-node already caches).
 */
export function poolConnections(kc: k8s.KubeConfig): k8s.KubeConfig {
  const target = kc as unknown as { createDispatcher: CreateDispatcher };
  const create = target.createDispatcher.bind(kc);
  const agents = new Map<string, ReturnType<CreateDispatcher>>();
  target.createDispatcher = (cluster, options) => {
    const key = crypto.createHash("sha256").update(JSON.stringify([cluster?.server, cluster?.proxyUrl, cluster?.skipTLSVerify,
      ...["ca", "cert", "key", "pfx", "passphrase", "rejectUnauthorized", "servername"].map((k) => tlsValue(options[k]))])).digest("hex");
    if (!agents.has(key)) agents.set(key, create(cluster, options));
    return agents.get(key);
  };
  return kc;
}

function tlsValue(v: unknown): unknown {
  return Buffer.isBuffer(v) ? v.toString("base64") : v;
}
