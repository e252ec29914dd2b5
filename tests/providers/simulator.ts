// The in-process fulfillment simulator the provider suites call: an admin token file, an admin
// client and the system catalog item's id. The provider host loads project modules from BMW_PROJECT_ROOT.
import * as fs from "node:fs";
import * as path from "node:path";
import { Filter, FulfillmentClient } from "../../clients/fulfillment";
import { PROJECT_ROOT } from "../../stack/toolchain";
import { type RunningSimulator, startSimulator } from "../../lab/fulfillment/server";
import { ADMIN_TOKEN, SYSTEM_ITEM, tempDir, testSeed } from "../fulfillment/helpers";

export interface ProviderSimulator {
  sim: RunningSimulator;
  dir: string;
  tokenFile: string;
  admin: FulfillmentClient;
  catalogItemId: string;
  stop(): Promise<void>;
}

export async function startProviderSimulator(prefix: string): Promise<ProviderSimulator> {
  process.env.BMW_PROJECT_ROOT = PROJECT_ROOT;
  const dir = tempDir(prefix);
  const sim = await startSimulator({ seed: testSeed(), stateDir: dir });
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  const admin = new FulfillmentClient({ address: sim.address, transport: { kind: "plaintext" }, tokenFile, deadlineMs: 5_000 });
  const catalogItemId = (await admin.catalogItems.list({ filter: Filter.nameEquals(SYSTEM_ITEM) })).items[0].id;
  return {
    sim, dir, tokenFile, admin, catalogItemId,
    async stop() {
      admin.close();
      await sim.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
