// AgentBinding as a Pulumi dynamic resource: the binding of one correlated Agent to the hosted
// cluster's ClusterDeployment. Its logic, providers/agentBindingOps.ts, is loaded at run time (see
// providers/lazyProvider.ts); inputs carry the kubeconfig path, never a credential.
import * as pulumi from "@pulumi/pulumi";
import type { DesiredBinding } from "../planner/types";
import type { AgentBindingInputs, AgentBindingOutputs } from "./agentBindingOps";
import { lazyProvider, LazyProviderResource } from "./lazyProvider";

export type { AgentBindingInputs, AgentBindingOutputs } from "./agentBindingOps";

/** The one provider object shared by every AgentBinding. */
export const agentBindingProvider = lazyProvider<AgentBindingInputs, AgentBindingOutputs, typeof import("./agentBindingOps")>({
  kind: "AgentBinding", opsPath: "providers/agentBindingOps.ts",
});

export type AgentBindingArgs = { [K in keyof DesiredBinding]: pulumi.Input<DesiredBinding[K]> } & {
  slot: pulumi.Input<string>;
  orderUid: pulumi.Input<string>;
  kubeconfigPath: pulumi.Input<string>;
  bmiId?: pulumi.Input<string>;
};

export class AgentBinding extends LazyProviderResource {
  declare public readonly state: pulumi.Output<string | undefined>;
  declare public readonly bound: pulumi.Output<boolean>;
  declare public readonly approved: pulumi.Output<boolean>;
  declare public readonly resourceVersion: pulumi.Output<string>;

  constructor(name: string, args: AgentBindingArgs, opts?: pulumi.CustomResourceOptions) {
    super(agentBindingProvider, "baremetal-workers", "AgentBinding", name,
      { ...args, state: undefined, bound: undefined, approved: undefined, resourceVersion: undefined }, opts);
  }
}
