// Looking up a BMI's BareMetalInstanceType, with the label fallback for servers without the
// spec.instance_type proposal.
import { INSTANCE_TYPE_LABEL } from "../../clients/fulfillment/proposals";
import type { BareMetalInstanceOut, BareMetalInstanceTypeOut } from "../../clients/fulfillment/types";
import type { Store } from "./store";

export function findInstanceType(store: Store, name: string): BareMetalInstanceTypeOut | undefined {
  // Instance types are global: visible to every tenant, names unique across tenants.
  return store.rows("BareMetalInstanceTypes").map((r) => r.obj).find((t) => t.metadata?.name === name);
}

/** The proposal field, else the label clients record it in. */
export function instanceTypeNameOf(bmi: BareMetalInstanceOut): string {
  return bmi.spec?.instance_type || bmi.metadata?.labels[INSTANCE_TYPE_LABEL] || "";
}
