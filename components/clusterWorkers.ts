// Everything one ClusterOrder's stack manages: the InfraEnv (through @pulumi/kubernetes, owned by the
// ClusterOrder so GC removes it with the order), the NodePool replicas (a server-side-apply patch that
// owns only spec.replicas), and one BareMetalWorker per live slot.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { FIELD_MANAGER } from "../planner/names";
import type { DesiredWorker, Plan } from "../planner/types";
import type { FulfillmentConnection } from "../config/settings";
import { BareMetalWorker } from "./bareMetalWorker";

export interface ClusterWorkersArgs {
  plan: Pick<Plan, "infraEnv" | "nodePoolReplicas" | "workers">;
  namespace: string;
  orderName: string;
  orderUid: string;
  fulfillment: FulfillmentConnection;
  /** Slots of plan.workers the program declares later, with declareWorker (a new order's BMIs, after their ignition). */
  later?: ReadonlySet<string>;
  /** Path of the kubeconfig for the BMI delete guard and the bindings (a path, not its content, so no token is stored in state). */
  kubeconfigPath: string;
}

/** The hub's identity for the Kubernetes provider: a kubeconfig change alone never replaces what it manages. */
export const HUB_CLUSTER_IDENTIFIER = "osac-hub";

export class ClusterWorkers extends pulumi.ComponentResource {
  readonly workers: BareMetalWorker[] = [];
  private readonly args: ClusterWorkersArgs;

  constructor(name: string, args: ClusterWorkersArgs, opts?: pulumi.ComponentResourceOptions) {
    super("baremetal-workers:index:ClusterWorkers", name, {}, opts);
    this.args = args;
    // The hub is one cluster whatever kubeconfig reaches it: without an identifier the provider plans to
    // replace everything it manages (the InfraEnv, the NodePool patch) when the kubeconfig's server URL
    // differs, e.g. an admin's machine through another endpoint, or another replica (decisions SO8).
    // No kubeconfig of its own: the provider writes a kubeconfig it is given, credentials included, to a
    // temporary file at every run and never removes it. Given "" (not left out: the SDK would fill in
    // $KUBECONFIG), it loads the pulumi process's KUBECONFIG, which the program checks names the same
    // file it reads (config/settings.ts checkProviderKubeconfig); the state holds no machine's path.
    const provider = new k8s.Provider(`${name}-hub`, {
      clusterIdentifier: HUB_CLUSTER_IDENTIFIER,
      kubeconfig: "",
      namespace: args.namespace,
      enableServerSideApply: true,
    }, { parent: this });
    const { plan } = args;

    if (plan.infraEnv) {
      const ie = plan.infraEnv;
      new k8s.apiextensions.CustomResource(`${name}-infraenv`, {
        apiVersion: "agent-install.openshift.io/v1beta1",
        kind: "InfraEnv",
        metadata: {
          name: ie.name,
          namespace: ie.namespace,
          ownerReferences: [{ ...ie.owner, blockOwnerDeletion: false, controller: true }],
        },
        // Late binding: no clusterRef; Agents register unbound and are bound one by one.
        spec: {
          pullSecretRef: { name: ie.pullSecretName },
          ...(ie.sshAuthorizedKey ? { sshAuthorizedKey: ie.sshAuthorizedKey } : {}),
        },
        // status carries the discovery URLs, whose api_key opens the ignition (pull secret inside).
      }, { parent: this, provider, deleteBeforeReplace: true, additionalSecretOutputs: ["status"] });
    }

    for (const [nodePool, replicas] of Object.entries(plan.nodePoolReplicas).sort(([a], [b]) => a.localeCompare(b))) {
      new k8s.apiextensions.CustomResourcePatch(`${name}-nodepool-${nodePool}`, {
        apiVersion: "hypershift.openshift.io/v1beta1",
        kind: "NodePool",
        metadata: {
          name: nodePool,
          namespace: args.namespace,
          annotations: { "pulumi.com/patchForce": "true", "pulumi.com/patchFieldManager": FIELD_MANAGER },
        },
        spec: { replicas },
        // Dropping the patch from the program must never release spec.replicas (CAPI would scale the
        // NodePool to its default): a removed patch only leaves the stack.
      }, { parent: this, provider, retainOnDelete: true });
    }

    for (const worker of plan.workers) if (!args.later?.has(worker.slot)) this.declareWorker(worker);
    this.registerOutputs({ workers: plan.workers.map((w) => w.slot) });
  }

  /** Declares one worker: in the constructor, or afterwards for a worker of `later`. */
  declareWorker(worker: DesiredWorker): BareMetalWorker {
    const { args } = this;
    const declared = new BareMetalWorker(worker.slot, {
      worker,
      fulfillment: args.fulfillment,
      kubeconfigPath: args.kubeconfigPath,
      namespace: args.namespace,
      orderName: args.orderName,
      orderUid: args.orderUid,
    }, { parent: this });
    this.workers.push(declared);
    return declared;
  }
}
