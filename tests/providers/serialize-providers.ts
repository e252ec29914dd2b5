// Child-process helper for providers.serialize.test.ts: the provider text of each resource type as a
// dynamic resource declares it, loaded back the way the provider host does (require-from-string in a
// plain Node process, where it loads its operations module through ts-node), with `check` run through it.
// Prints one JSON line.
// Usage: serialize-providers.ts <tokenFile>
import * as fs from "node:fs";
import type * as pulumi from "@pulumi/pulumi";
import { agentBindingProvider } from "../../providers/agentBinding";
import { bareMetalInstanceProvider } from "../../providers/bareMetalInstance";
import { providerText } from "../../providers/lazyProvider";

// A token the program has in memory, as a careless program would: it must not reach the closure.
const token = fs.readFileSync(process.argv[2], "utf8").trim();

async function main(): Promise<void> {
  const requireFromString: (code: string) => { handler(): pulumi.dynamic.ResourceProvider } = require("require-from-string");
  const out: Record<string, { text: string; checked: unknown }> = {};
  for (const [name, provider] of [["bareMetalInstance", bareMetalInstanceProvider], ["agentBinding", agentBindingProvider]] as const) {
    const text = providerText(provider.spec);
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
