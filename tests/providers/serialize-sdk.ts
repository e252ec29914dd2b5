// Child-process helper for tests/engine/program.test.ts: each provider as the Pulumi SDK serialized it into
// a dynamic resource's state before providers/providerModule.js (closure serialization of the provider
// object, in a plain Node process), so a test can put a state of that time in place. Prints one JSON line:
// the text by resource type; with --load, also the properties `check` refuses through each text loaded the
// way the provider host loads it (a resource's outputs keep that text until it is updated).
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
  if (process.argv[2] === "--load") {
    const requireFromString: (code: string) => { handler(): pulumi.dynamic.ResourceProvider } = require("require-from-string");
    const refused: Record<string, string[]> = {};
    for (const [type, text] of Object.entries(out)) {
      const checked = await requireFromString(text).handler().check!({}, { name: "Bad_Name", agentName: "" });
      refused[type] = (checked.failures ?? []).map((f) => f.property);
    }
    process.stdout.write(JSON.stringify({ texts: out, refused }) + "\n");
    return;
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
  process.stderr.write(String(e?.stack ?? e) + "\n");
  process.exit(1);
});
