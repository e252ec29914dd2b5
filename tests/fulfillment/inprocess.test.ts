// The simulator also runs inside the test process (no child process), and product code stays free of
// lab imports.
import * as fs from "node:fs";
import * as path from "node:path";
import { FulfillmentClient } from "../../clients/fulfillment";
import { startSimulator } from "../../lab/fulfillment/server";
import { Store } from "../../lab/fulfillment/store";
import { ADMIN_TOKEN, tempDir, testSeed, workerBmi } from "./helpers";

const ROOT = path.resolve(__dirname, "..", "..");

it("starts in-process on a free loopback port and serves the private API", async () => {
  const dir = tempDir("inproc");
  const sim = await startSimulator({ seed: testSeed(), stateDir: dir });
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, ADMIN_TOKEN);
  const client = new FulfillmentClient({ address: sim.address, transport: { kind: "plaintext" }, tokenFile });
  try {
    expect(sim.address).toMatch(/^127\.0\.0\.1:\d+$/);
    const bmi = await client.bareMetalInstances.create(workerBmi("inproc-1"));
    expect(sim.engine.store.get("BareMetalInstances", bmi.id)?.obj.metadata?.tenant).toBe("system");
    // On disk before the call was answered: a store reading the state directory finds it.
    const onDisk = new Store(dir);
    onDisk.load();
    expect(onDisk.rows("BareMetalInstances").map((r) => r.obj.id)).toEqual([bmi.id]);
  } finally {
    client.close();
    await sim.stop();
  }
});

it("product code never imports from lab/", () => {
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && e.name !== "gen") walk(p);
      else if (e.name.endsWith(".ts") && /from\s+["'][./]*\/?lab\//.test(fs.readFileSync(p, "utf8"))) offenders.push(p);
    }
  };
  for (const d of ["clients", "planner", "providers", "components", "config", "lib", "io", "stack", "controller", "cli", "protos"]) {
    if (fs.existsSync(path.join(ROOT, d))) walk(path.join(ROOT, d));
  }
  expect(offenders).toEqual([]);
});
