// BareMetalInstance as a Pulumi dynamic resource: one BMI on the fulfillment-service private API.
// Its logic, providers/bareMetalInstanceOps.ts, is loaded at run time (see providers/lazyProvider.ts).
// Inputs hold file paths only; the ignition (userData) is a secret input and is echoed only under its
// own key, which Pulumi re-marks secret.
import * as pulumi from "@pulumi/pulumi";
import type { DesiredBmi, ObservedBmi } from "../planner/types";
import type { BareMetalInstanceInputs, BareMetalInstanceOutputs, DeleteGuard } from "./bareMetalInstanceOps";
import type { FulfillmentConnection } from "../config/settings";
import { lazyProvider, LazyProviderResource } from "./lazyProvider";

export type { BareMetalInstanceInputs, BareMetalInstanceOutputs, DeleteGuard } from "./bareMetalInstanceOps";

/** The one provider object shared by every BareMetalInstanceResource (serialized once per program). */
export const bareMetalInstanceProvider = lazyProvider<BareMetalInstanceInputs, BareMetalInstanceOutputs, typeof import("./bareMetalInstanceOps")>({
  kind: "BareMetalInstance", opsPath: "providers/bareMetalInstanceOps.ts",
  importHint: "adopt an existing BMI with the adoptId input",
});

/**
 * Resource arguments: a DesiredBmi (each field may be an Output), the connection file paths, and the
 * guard the provider checks before any Delete (the order and slot the BMI backs).
 */
export type BareMetalInstanceArgs = { [K in keyof DesiredBmi]: pulumi.Input<DesiredBmi[K]> } & {
  connection: pulumi.Input<FulfillmentConnection>;
  guard?: pulumi.Input<DeleteGuard>;
};

export class BareMetalInstanceResource extends LazyProviderResource {
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
    super(bareMetalInstanceProvider, "baremetal-workers", "BareMetalInstance", name, props, {
      ...opts,
      additionalSecretOutputs: [...new Set([...(opts.additionalSecretOutputs ?? []), "userData"])],
    });
  }
}
