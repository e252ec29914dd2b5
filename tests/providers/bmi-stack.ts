// Child-process driver for providers.stack.test.ts: one BareMetalInstanceResource in an inline
// Automation API program on a file backend, run by the real engine and provider host.
// Usage: bmi-stack.ts <up|destroy> <workDir> <backendDir> <inputs.json>   (prints one JSON line)
import * as fs from "node:fs";
import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";
import { PROJECT_ROOT, pulumiEnv, toolchain } from "../../automation/toolchain";
import { BareMetalInstanceResource, type BareMetalInstanceInputs } from "../../providers/bareMetalInstance";

async function main(): Promise<void> {
  const [op, workDir, backendDir, inputsFile] = process.argv.slice(2);
  const inputs = JSON.parse(fs.readFileSync(inputsFile, "utf8")) as BareMetalInstanceInputs;
  const tc = toolchain();
  const program = async () => {
    const bmi = new BareMetalInstanceResource(inputs.name, inputs);
    return { id: bmi.id, state: bmi.state };
  };
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: "bmi", projectName: "bmw-bmi", program },
    {
      pulumiCommand: await PulumiCommand.get({ root: tc.pulumiRoot }), workDir, pulumiHome: tc.pulumiHome,
      projectSettings: { name: "bmw-bmi", runtime: "nodejs", main: PROJECT_ROOT, backend: { url: `file://${backendDir}` } },
      envVars: pulumiEnv(tc, { PULUMI_CONFIG_PASSPHRASE: "bmi-test-passphrase", BMW_BMI_DELETE_POLL_MS: "50" }),
    },
  );
  const r = op === "up" ? await stack.up() : await stack.destroy();
  const outputs = op === "up" ? Object.fromEntries(Object.entries(await stack.outputs()).map(([k, v]) => [k, v.value])) : {};
  process.stdout.write(JSON.stringify({ summary: r.summary.result, changes: r.summary.resourceChanges, outputs }) + "\n");
}

main().catch((e) => {
  process.stderr.write(String(e?.stack ?? e) + "\n");
  process.exit(1);
});
