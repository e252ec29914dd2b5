// The provider texts (the __provider Pulumi stores in state) are small, hold no secrets and no project
// code beyond the loader, and work when loaded the way the provider host does.
import * as fs from "node:fs";
import * as path from "node:path";
import { runTsJson } from "../support/run";
import { tempDir } from "../fulfillment/helpers";

interface Serialized {
  tokenLength: number;
  out: Record<string, { text: string; checked: { failures?: { property: string }[] } }>;
}

it("serializes each provider without secrets and loads its logic at run time", async () => {
  const dir = tempDir("serialize");
  const token = "fulfillment-token-d41d8cd98f00b204";
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, token, { mode: 0o600 });
  try {
    const r = await runTsJson<Serialized>("tests/providers/serialize-providers.ts", [tokenFile]);
    expect(r.tokenLength).toBe(token.length);
    for (const name of ["bareMetalInstance", "agentBinding"]) {
      const { text, checked } = r.out[name];
      expect(text).not.toContain(token);
      expect(text.length).toBeLessThan(8_000);
      expect(text).toContain("loadProjectModule");
      // None of the real logic or its dependencies is captured by value.
      for (const banned of ["createOrAdopt", "FulfillmentClient", "@grpc/grpc-js", "@kubernetes/client-node", "readFileSync"]) {
        expect(text).not.toContain(banned);
      }
      expect((checked.failures ?? []).length).toBeGreaterThan(0);
    }
    expect(r.out.bareMetalInstance.checked.failures!.map((f) => f.property)).toContain("name");
    expect(r.out.agentBinding.checked.failures!.map((f) => f.property)).toContain("agentName");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it("the SDK's serialized provider text, which states written before keep in their outputs, still runs the current operations", async () => {
  const r = await runTsJson<{ texts: Record<string, string>; refused: Record<string, string[]> }>("tests/providers/serialize-sdk.ts", ["--load"]);
  expect(r.refused["pulumi-nodejs:dynamic/baremetal-workers:BareMetalInstance"]).toContain("name");
  expect(r.refused["pulumi-nodejs:dynamic/baremetal-workers:AgentBinding"]).toContain("agentName");
  for (const text of Object.values(r.texts)) expect(text).toContain("loadProjectModule");
});
