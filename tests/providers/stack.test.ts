// The BareMetalInstance provider run by the real engine and dynamic-provider host (Automation API,
// file backend) against an in-process simulator: the run-time loader works in the host, the BMI is
// created and deleted, and neither the ignition nor the token appears anywhere in the state.
import * as fs from "node:fs";
import * as path from "node:path";
import { Filter, FulfillmentClient } from "../../clients/fulfillment";
import { startSimulator } from "../../lab/fulfillment/server";
import { ORDER_LABEL } from "../../planner/names";
import type { BareMetalInstanceInputs } from "../../providers/bareMetalInstance";
import { runTsJson } from "../support/run";
import { ADMIN_TOKEN, SYSTEM_ITEM, tempDir, testSeed } from "../fulfillment/helpers";

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => path.join(d.parentPath, d.name));
}

it("creates and destroys a BMI through the engine, keeping ignition and token out of state", async () => {
  const dir = tempDir("bmi-stack");
  const sim = await startSimulator({ seed: testSeed(), stateDir: path.join(dir, "sim") });
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, ADMIN_TOKEN, { mode: 0o600 });
  const admin = new FulfillmentClient({ address: sim.address, transport: { kind: "plaintext" }, tokenFile });
  const ignitionSecret = `assisted-token-${Date.now()}`;
  try {
    const catalogItem = (await admin.catalogItems.list({ filter: Filter.nameEquals(SYSTEM_ITEM) })).items[0].id;
    const inputs: BareMetalInstanceInputs = {
      name: "order-1-w-stack", tenant: "system", labels: { [ORDER_LABEL]: "order-uid-1" }, annotations: {},
      catalogItem, instanceType: "compute", diskImage: "di-rhcos-417",
      userData: JSON.stringify({ ignition: { version: "3.4.0" }, token: ignitionSecret }),
      networkAttachment: { subnet: "tenant-subnet", securityGroups: [], interface: "ens1f0", primary: true },
      connection: { address: sim.address, tokenFile, plaintext: true },
    };
    const inputsFile = path.join(dir, "inputs.json");
    fs.writeFileSync(inputsFile, JSON.stringify(inputs));
    const work = path.join(dir, "work");
    const backend = path.join(dir, "state");
    fs.mkdirSync(work);
    fs.mkdirSync(backend);
    const run = (op: string) => runTsJson<{ summary: string; changes: Record<string, number>; outputs: Record<string, unknown> }>(
      "tests/providers/bmi-stack.ts", [op, work, backend, inputsFile]);

    const up = await run("up");
    expect(up.summary).toBe("succeeded");
    expect(up.outputs.state).toBe("Provisioning");
    const listed = await admin.bareMetalInstances.listAll(Filter.nameEquals(inputs.name));
    expect(listed.map((b) => b.id)).toEqual([up.outputs.id]);
    const checkpoint = fs.readFileSync(filesUnder(backend).find((f) => f.endsWith(path.join("stacks", "bmw-bmi", "bmi.json")))!, "utf8");
    expect(checkpoint).toContain("ciphertext"); // userData is stored, encrypted
    for (const f of filesUnder(backend)) {
      const text = fs.readFileSync(f, "utf8");
      expect(text).not.toContain(ignitionSecret);
      expect(text).not.toContain(ADMIN_TOKEN);
    }

    const down = await run("destroy");
    expect(down.summary).toBe("succeeded");
    expect(await admin.bareMetalInstances.listAll(Filter.nameEquals(inputs.name))).toEqual([]);
  } finally {
    admin.close();
    await sim.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
