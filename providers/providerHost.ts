// What every provider's logic shares inside the dynamic provider host: Pulumi's placeholder for a
// value not known during preview, and one Kubernetes client per kubeconfig path for the life of the
// host process (a fresh client per call would re-read the file and open new connections every time).
import { Kube, loadKubeConfig } from "../clients/kube";

/** Pulumi's placeholder for values not known during preview. */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

const kubes = new Map<string, Kube>();

/** The host's client for the kubeconfig at `path`. */
export function kubeFor(path: string): Kube {
  let k = kubes.get(path);
  if (!k) {
    k = new Kube(loadKubeConfig(path));
    kubes.set(path, k);
  }
  return k;
}
