// The floor of `npm run bench`: the cheapest program that creates one dynamic-provider resource. Its
// `pulumi up` is what any Pulumi-based reconciler pays at least to create anything; the product's
// event-to-Create latency is reported as a ratio to it.
import * as pulumi from "@pulumi/pulumi";

const provider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: { value: string }) {
    return { id: `floor-${inputs.value}`, outs: inputs };
  },
};

class FloorResource extends pulumi.dynamic.Resource {
  constructor(name: string, value: string) {
    super(provider, name, { value }, {});
  }
}

new FloorResource("one", new pulumi.Config().get("value") ?? "x");
