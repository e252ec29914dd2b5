// The BareMetalInstance provider run by the real engine and dynamic-provider host (Automation API,
// file backend) against an in-process simulator and the test plane's apiserver: the run-time loader
// works in the host, neither the ignition nor the token appears in the state, an existing BMI is never
// replaced whatever create-only input changes (I2), and a BMI whose worker the planner did not retire
// is never deleted, even when the program drops it (I1).
import * as fs from "node:fs";
import * as path from "node:path";
import { Filter, FulfillmentClient } from "../../clients/fulfillment";
import { startSimulator, type RunningSimulator } from "../../lab/fulfillment/server";
import { ORDER_LABEL } from "../../planner/names";
import type { BareMetalInstanceInputs } from "../../providers/bareMetalInstance";
import { parseDeleteRefusals } from "../../providers/deleteRefusal";
import { runTs, runTsJson } from "../support/run";
import { ADMIN_TOKEN, eventually, SYSTEM_ITEM, tempDir, testSeed } from "../fulfillment/helpers";
import { createOrder, setWorkers, type TestOrder } from "./orders";

interface RunResult {
  summary: string;
  changes: Record<string, number>;
  steps?: Record<string, number>;
  outputs: Record<string, unknown>;
}

/** Engine operations that would delete or replace an existing resource. */
const DESTRUCTIVE = ["replace", "create-replacement", "delete-replaced", "delete", "discard", "discard-replaced"];

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => path.join(d.parentPath, d.name));
}

describe("a BMI stack on the real engine", () => {
  let dir: string;
  let sim: RunningSimulator;
  let admin: FulfillmentClient;
  let order: TestOrder;
  let inputs: BareMetalInstanceInputs;
  let inputsFile: string;
  let work: string;
  let backend: string;
  let bmiId: string;
  const ignitionSecret = `assisted-token-${Date.now()}`;

  const declare = (declared: BareMetalInstanceInputs[]) => fs.writeFileSync(inputsFile, JSON.stringify(declared));
  const run = (op: string) => runTsJson<RunResult>("tests/providers/bmi-stack.ts", [op, work, backend, inputsFile]);
  const live = async () => admin.bareMetalInstances.listAll(Filter.nameEquals(inputs.name));

  beforeAll(async () => {
    dir = tempDir("bmi-stack");
    sim = await startSimulator({ seed: testSeed(), stateDir: path.join(dir, "sim") });
    const tokenFile = path.join(dir, "token");
    fs.writeFileSync(tokenFile, ADMIN_TOKEN, { mode: 0o600 });
    admin = new FulfillmentClient({ address: sim.address, transport: { kind: "plaintext" }, tokenFile });
    order = await createOrder("order-1");
    const catalogItem = (await admin.catalogItems.list({ filter: Filter.nameEquals(SYSTEM_ITEM) })).items[0].id;
    inputs = {
      name: "order-1-w-stack", tenant: "system", labels: { [ORDER_LABEL]: order.uid }, annotations: {},
      catalogItem, instanceType: "compute", diskImage: "di-rhcos-417",
      userData: JSON.stringify({ ignition: { version: "3.4.0" }, token: ignitionSecret }),
      networkAttachment: { subnet: "tenant-subnet", securityGroups: ["sg-1"], interface: "ens1f0", primary: true },
      connection: { address: sim.address, tokenFile, plaintext: true },
      guard: order.guard("slot-a"),
    };
    inputsFile = path.join(dir, "inputs.json");
    work = path.join(dir, "work");
    backend = path.join(dir, "state");
    fs.mkdirSync(work);
    fs.mkdirSync(backend);
  });

  afterAll(async () => {
    admin.close();
    await sim.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("creates a BMI, keeping ignition and token out of state", async () => {
    declare([inputs]);
    const up = await run("up");
    expect(up.summary).toBe("succeeded");
    expect(up.outputs.state).toBe("Provisioning");
    bmiId = String(up.outputs.id);
    expect((await live()).map((b) => b.id)).toEqual([bmiId]);
    const checkpoint = fs.readFileSync(filesUnder(backend).find((f) => f.endsWith(path.join("stacks", "bmw-bmi", "bmi.json")))!, "utf8");
    expect(checkpoint).toContain("ciphertext"); // userData is stored, encrypted
    for (const f of filesUnder(backend)) {
      const text = fs.readFileSync(f, "utf8");
      expect(text).not.toContain(ignitionSecret);
      expect(text).not.toContain(ADMIN_TOKEN);
    }
  });

  it("never replaces or deletes the BMI when its create-only inputs change (preview and update)", async () => {
    const sgOnly = { ...inputs, networkAttachment: { ...inputs.networkAttachment, securityGroups: ["sg-1", "sg-2"] } };
    const everything: BareMetalInstanceInputs = {
      ...inputs, catalogItem: "a-re-created-catalog-item", instanceType: "gpu",
      networkAttachment: { ...inputs.networkAttachment, securityGroups: ["sg-2"], interface: "ens2f0" },
    };
    for (const changed of [sgOnly, everything]) {
      declare([changed]);
      const preview = await run("preview");
      for (const op of DESTRUCTIVE) expect({ op, n: preview.steps?.[op] ?? 0 }).toEqual({ op, n: 0 });
      for (const op of DESTRUCTIVE) expect({ op, n: preview.changes[op] ?? 0 }).toEqual({ op, n: 0 });
    }
    const up = await run("up");
    expect(up.summary).toBe("succeeded");
    for (const op of DESTRUCTIVE) expect({ op, n: up.changes[op] ?? 0 }).toEqual({ op, n: 0 });
    expect(up.outputs.id).toBe(bmiId);
    const [bmi] = await live();
    expect(bmi.id).toBe(bmiId);
    expect(bmi.metadata?.deletion_timestamp).toBeFalsy();
  });

  it("refuses to delete the BMI of a Ready worker that the program dropped: the update fails and the BMI stays", async () => {
    await setWorkers(order, [{ slot: "slot-a", phase: "Ready", bmi: { name: inputs.name, id: bmiId } }]);
    declare([]);
    const r = await runTs("tests/providers/bmi-stack.ts", ["up", work, backend, inputsFile]);
    expect(r.code).not.toBe(0);
    const [refusal] = parseDeleteRefusals(r.stderr + r.stdout);
    expect(refusal).toMatchObject({ slot: "slot-a", bmiName: inputs.name });
    expect(refusal.reason).toContain("worker slot-a is Ready");
    expect(r.stderr + r.stdout).not.toContain(ignitionSecret);
    const [bmi] = await live();
    expect(bmi.id).toBe(bmiId);
    expect(bmi.metadata?.deletion_timestamp).toBeFalsy();
  });

  it("deletes it once the planner retired the worker, without waiting for the service to finish", async () => {
    await setWorkers(order, [{ slot: "slot-a", phase: "Deleting", bmi: { name: inputs.name, id: bmiId } }]);
    const down = await run("destroy");
    expect(down.summary).toBe("succeeded");
    await eventually(async () => ((await live()).length === 0 ? true : undefined));
  });
});
