// BareMetalInstance as a Pulumi dynamic resource: one BMI on the fulfillment-service private API.
// The provider object is serialized into the stack (__provider): its methods capture nothing but the
// loader, and load providers/bareMetalInstanceOps.ts at run time (see providers/loader.ts). Inputs
// hold file paths only; the ignition (userData) is a secret input and is echoed only under its own
// key, which Pulumi re-marks secret.
import * as pulumi from "@pulumi/pulumi";
import type { DesiredBmi, ObservedBmi } from "../planner/types";
import type { BareMetalInstanceInputs, BareMetalInstanceOutputs, DeleteGuard } from "./bareMetalInstanceOps";
import type { FulfillmentConnection } from "../config/settings";
import { loadProjectModule } from "./loader";

export type { BareMetalInstanceInputs, BareMetalInstanceOutputs, DeleteGuard } from "./bareMetalInstanceOps";

type Ops = typeof import("./bareMetalInstanceOps");

function ops(): Ops {
  return loadProjectModule("providers/bareMetalInstanceOps.ts") as Ops;
}

/** The one provider object shared by every BareMetalInstanceResource (serialized once per program). */
export const bareMetalInstanceProvider: pulumi.dynamic.ResourceProvider<BareMetalInstanceInputs, BareMetalInstanceOutputs> = {
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
    if (!props) throw new Error(`BareMetalInstance ${id}: import is not supported; adopt an existing BMI with the adoptId input`);
    return ops().read(id, props);
  },
  async update(id, olds, news) {
    return ops().update(id, olds, news);
  },
  async delete(id, props) {
    return ops().remove(id, props);
  },
};

/**
 * Resource arguments: a DesiredBmi (each field may be an Output), the connection file paths, and the
 * guard the provider checks before any Delete (the order and slot the BMI backs).
 */
export type BareMetalInstanceArgs = { [K in keyof DesiredBmi]: pulumi.Input<DesiredBmi[K]> } & {
  connection: pulumi.Input<FulfillmentConnection>;
  guard?: pulumi.Input<DeleteGuard>;
};

export class BareMetalInstanceResource extends pulumi.dynamic.Resource {
  declare public readonly name: pulumi.Output<string>;
  declare public readonly bmiId: pulumi.Output<string>;
  declare public readonly state: pulumi.Output<ObservedBmi["state"]>;
  declare public readonly deleting: pulumi.Output<boolean>;
  declare public readonly macs: pulumi.Output<string[]>;
  declare public readonly failureReason: pulumi.Output<string | undefined>;
  declare public readonly failureMessage: pulumi.Output<string | undefined>;
  declare public readonly userData: pulumi.Output<string>;

  constructor(name: string, args: BareMetalInstanceArgs, opts: pulumi.CustomResourceOptions = {}) {
    const props = {
      ...args,
      // The ignition embeds the assisted-service token: secret in state, never plaintext.
      userData: pulumi.secret(args.userData),
      // Declared so the outputs exist on the resource object before create returns them.
      bmiId: undefined, state: undefined, deleting: undefined, macs: undefined, failureReason: undefined, failureMessage: undefined,
    };
    super(bareMetalInstanceProvider, name, props, {
      ...opts,
      additionalSecretOutputs: [...new Set([...(opts.additionalSecretOutputs ?? []), "userData"])],
    }, "baremetal-workers", "BareMetalInstance");
  }
}
