// Where the program's Kubernetes credentials come from: an explicit kubeconfig file, $KUBECONFIG,
// or the in-cluster service account (in that order).
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
  return kc;
}
