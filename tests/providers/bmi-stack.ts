// Child-process driver for the provider stack tests: BareMetalInstanceResources in an inline Automation
// API program on a file backend, run by the real engine and provider host.
// Usage: bmi-stack.ts <up|preview|destroy> <workDir> <backendDir> <inputs.json>   (prints one JSON line)
// inputs.json holds one BareMetalInstanceInputs or an array of them (an empty array declares nothing).
import * as fs from "node:fs";
import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";
import { PROJECT_ROOT, pulumiEnv, toolchain } from "../../stack/toolchain";
import { BareMetalInstanceResource, type BareMetalInstanceInputs } from "../../providers/bareMetalInstance";

async function main(): Promise<void> {
  const [op, workDir, backendDir, inputsFile] = process.argv.slice(2);
  const parsed = JSON.parse(fs.readFileSync(inputsFile, "utf8")) as BareMetalInstanceInputs | BareMetalInstanceInputs[];
  const all = Array.isArray(parsed) ? parsed : [parsed];
  const tc = toolchain();
  const program = async () => {
    const bmis = all.map((inputs) => new BareMetalInstanceResource(inputs.name, inputs));
    return bmis.length > 0 ? { id: bmis[0].id, state: bmis[0].state } : {};
  };
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: "bmi", projectName: "bmw-bmi", program },
    {
      pulumiCommand: await PulumiCommand.get({ root: tc.pulumiRoot }), workDir, pulumiHome: tc.pulumiHome,
      projectSettings: { name: "bmw-bmi", runtime: "nodejs", main: PROJECT_ROOT, backend: { url: `file://${backendDir}` } },
      envVars: pulumiEnv(tc, { PULUMI_CONFIG_PASSPHRASE: "bmi-test-passphrase" }),
    },
  );
  if (op === "preview") {
    // Every step the engine planned, by operation (e.g. same, update, replace, delete).
    const steps: Record<string, number> = {};
    const r = await stack.preview({
      onEvent: (e) => {
        const md = e.resourcePreEvent?.metadata;
        if (md && md.type !== "pulumi:pulumi:Stack") steps[md.op] = (steps[md.op] ?? 0) + 1;
      },
    });
    process.stdout.write(JSON.stringify({ summary: "succeeded", changes: r.changeSummary, steps, outputs: {} }) + "\n");
    return;
  }
  const r = op === "up" ? await stack.up() : await stack.destroy();
  const outputs = op === "up" ? Object.fromEntries(Object.entries(await stack.outputs()).map(([k, v]) => [k, v.value])) : {};
  process.stdout.write(JSON.stringify({ summary: r.summary.result, changes: r.summary.resourceChanges, outputs }) + "\n");
}

main().catch((e) => {
  process.stderr.write(String(e?.stack ?? e) + "\n");
  process.exit(1);
});
