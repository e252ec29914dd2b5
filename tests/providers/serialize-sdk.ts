// Child-process helper for tests/engine/program.test.ts: each provider as the Pulumi SDK serialized it into
// a dynamic resource's state before providers/providerModule.js (closure serialization of the provider
// object, in a plain Node process), so a test can put a state of that time in place. Prints one JSON line:
// the text by resource type.
import * as pulumi from "@pulumi/pulumi";
import { providerOf } from "../../providers/providerModule";
import { agentBindingProvider } from "../../providers/agentBinding";
import { bareMetalInstanceProvider } from "../../providers/bareMetalInstance";

async function main(): Promise<void> {
  const out: Record<string, string> = {};
  for (const [type, provider] of [["BareMetalInstance", bareMetalInstanceProvider], ["AgentBinding", agentBindingProvider]] as const) {
    const object = providerOf(provider.spec);
    out[`pulumi-nodejs:dynamic/baremetal-workers:${type}`] = (await pulumi.runtime.serializeFunction(() => object, { allowSecrets: true })).text;
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
  process.stderr.write(String(e?.stack ?? e) + "\n");
  process.exit(1);
});
