// One worker slot: its BareMetalInstance and, once a unique Agent is correlated, the binding of that
// Agent to the hosted cluster. The slot name is the component name, so the slot keeps its identity
// across incarnations; each incarnation's BMI is a child named after the BMI itself, which makes a
// retry a delete of the old incarnation and a create of the new one rather than an update.
import * as pulumi from "@pulumi/pulumi";
import type { DesiredWorker } from "../planner/types";
import { BareMetalInstanceResource } from "../providers/bareMetalInstance";
import type { FulfillmentConnection } from "../config/settings";
import { IMMUTABLE_INPUTS } from "../providers/bareMetalInstanceOps";
import { AgentBinding } from "../providers/agentBinding";

export interface BareMetalWorkerArgs {
  worker: DesiredWorker;
  fulfillment: FulfillmentConnection;
  kubeconfigPath: string;
  namespace: string;
  orderName: string;
  orderUid: string;
}

export class BareMetalWorker extends pulumi.ComponentResource {
  readonly bmi: BareMetalInstanceResource;
  readonly binding?: AgentBinding;

  constructor(name: string, args: BareMetalWorkerArgs, opts?: pulumi.ComponentResourceOptions) {
    super("baremetal-workers:index:BareMetalWorker", name, {}, opts);
    const { worker } = args;
    this.bmi = new BareMetalInstanceResource(worker.bmi.name, {
      ...worker.bmi,
      connection: args.fulfillment,
      guard: {
        kubeconfigPath: args.kubeconfigPath, namespace: args.namespace, orderName: args.orderName, orderUid: args.orderUid, slot: worker.slot,
      },
    }, {
      parent: this,
      // An existing BMI is never replaced (I2): a changed create-only input (new ignition, DiskImage,
      // security groups, fabric port, catalog item) only affects new incarnations, which get a fresh BMI
      // name and therefore a fresh resource. The provider's diff ignores them too.
      ignoreChanges: [...IMMUTABLE_INPUTS],
    });
    if (worker.binding) {
      this.binding = new AgentBinding(`${name}-agent`, {
        ...worker.binding,
        slot: worker.slot,
        orderUid: args.orderUid,
        kubeconfigPath: args.kubeconfigPath,
        // The binding is made only for the BMI's host; delete order is binding first, then the BMI.
        bmiId: this.bmi.id,
      }, { parent: this, dependsOn: [this.bmi] });
    }
    this.registerOutputs({ bmiName: worker.bmi.name });
  }
}
