// AgentBinding as a Pulumi dynamic resource: the binding of one correlated Agent to the hosted
// cluster's ClusterDeployment. Like the BMI provider, its methods capture only the loader and load
// providers/agentBindingOps.ts at run time; inputs carry the kubeconfig path, never a credential.
import * as pulumi from "@pulumi/pulumi";
import type { DesiredBinding } from "../planner/types";
import type { AgentBindingInputs, AgentBindingOutputs } from "./agentBindingOps";
import { loadProjectModule } from "./loader";

export type { AgentBindingInputs, AgentBindingOutputs } from "./agentBindingOps";

type Ops = typeof import("./agentBindingOps");

function ops(): Ops {
  return loadProjectModule("providers/agentBindingOps.ts") as Ops;
}

/** The one provider object shared by every AgentBinding. */
export const agentBindingProvider: pulumi.dynamic.ResourceProvider<AgentBindingInputs, AgentBindingOutputs> = {
  async check(olds, news) {
    return ops().check(olds, news);
  },
  async diff(id, olds, news) {
    return ops().diff(id, olds, news);
  },
  async create(inputs) {
    return ops().create(inputs);
  },
  async read(id, props) {
    if (!props) throw new Error(`AgentBinding ${id}: import is not supported`);
    return ops().read(id, props);
  },
  async update(id, olds, news) {
    return ops().update(id, olds, news);
  },
  async delete(id, props) {
    return ops().remove(id, props);
  },
};

export type AgentBindingArgs = { [K in keyof DesiredBinding]: pulumi.Input<DesiredBinding[K]> } & {
  slot: pulumi.Input<string>;
  orderUid: pulumi.Input<string>;
  kubeconfigPath: pulumi.Input<string>;
  bmiId?: pulumi.Input<string>;
  clusterDeleting?: pulumi.Input<boolean>;
};

export class AgentBinding extends pulumi.dynamic.Resource {
  declare public readonly state: pulumi.Output<string | undefined>;
  declare public readonly bound: pulumi.Output<boolean>;
  declare public readonly approved: pulumi.Output<boolean>;
  declare public readonly resourceVersion: pulumi.Output<string>;

  constructor(name: string, args: AgentBindingArgs, opts?: pulumi.CustomResourceOptions) {
    super(agentBindingProvider, name, { ...args, state: undefined, bound: undefined, approved: undefined, resourceVersion: undefined },
      opts, "baremetal-workers", "AgentBinding");
  }
}
