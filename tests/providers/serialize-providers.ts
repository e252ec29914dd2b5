// Child-process helper for providers.serialize.test.ts: serializes each provider object exactly as a
// dynamic resource does (closure serialization needs a plain Node process, not jest's VM), loads the
// text back the way the provider host does, and runs `check` through it. Prints one JSON line.
// Usage: serialize-providers.ts <tokenFile>
import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import { agentBindingProvider } from "../../providers/agentBinding";
import { bareMetalInstanceProvider } from "../../providers/bareMetalInstance";

// A token the program has in memory, as a careless program would: it must not reach the closure.
const token = fs.readFileSync(process.argv[2], "utf8").trim();

async function serialize(provider: pulumi.dynamic.ResourceProvider): Promise<string> {
  const sf = await pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true });
  return sf.text;
}

async function main(): Promise<void> {
  const requireFromString: (code: string) => { handler(): pulumi.dynamic.ResourceProvider } = require("require-from-string");
  const out: Record<string, { text: string; checked: unknown }> = {};
  for (const [name, provider] of [["bareMetalInstance", bareMetalInstanceProvider], ["agentBinding", agentBindingProvider]] as const) {
    const text = await serialize(provider);
    const loaded = requireFromString(text).handler();
    const checked = await loaded.check!({}, { name: "Bad_Name", agentName: "" });
    out[name] = { text, checked };
  }
  process.stdout.write(JSON.stringify({ tokenLength: token.length, out }) + "\n");
}

main().catch((e) => {
  process.stderr.write(String(e?.stack ?? e) + "\n");
  process.exit(1);
});
