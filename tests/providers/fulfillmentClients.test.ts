// The provider host keeps one fulfillment client per connection instead of one channel per call: the
// token file is still read on every call, a rotated CA bundle gets a new client, and after an outage
// the next operation connects afresh, so a Create right after the service is back reaches it.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { Filter, FulfillmentClient } from "../../clients/fulfillment";
import type { FulfillmentConnection } from "../../config/settings";
import { startSimulator, type RunningSimulator } from "../../lab/fulfillment/server";
import { ORDER_LABEL } from "../../planner/names";
import { bareMetalInstanceProvider as provider, type BareMetalInstanceInputs } from "../../providers/bareMetalInstance";
import { loadProjectModule } from "../../providers/loader";
import { PROJECT_ROOT } from "../../stack/toolchain";
import { ADMIN_TOKEN, ADMIN_TOKEN_2, SYSTEM_ITEM, tempDir, testSeed } from "../fulfillment/helpers";

type Host = typeof import("../../providers/providerHost");

let dir: string;
let sim: RunningSimulator;
let admin: FulfillmentClient;
let catalogItemId: string;
let tokenFile: string;
let conn: FulfillmentConnection;
/** The host module the provider's operations use (loaded the way the provider host loads it). */
let host: Host;

beforeAll(async () => {
  process.env.BMW_PROJECT_ROOT = PROJECT_ROOT;
  dir = tempDir("bmi-clients");
  sim = await startSimulator({ seed: testSeed(), stateDir: path.join(dir, "sim") });
  tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, ADMIN_TOKEN, { mode: 0o600 });
  admin = new FulfillmentClient({ address: sim.address, transport: { kind: "plaintext" }, tokenFile: tokenFile, deadlineMs: 5_000 });
  catalogItemId = (await admin.catalogItems.list({ filter: Filter.nameEquals(SYSTEM_ITEM) })).items[0].id;
  conn = { address: sim.address, tokenFile, plaintext: true };
  host = loadProjectModule("providers/providerHost.ts") as Host;
});

afterAll(async () => {
  host.closeFulfillmentClients();
  admin.close();
  await sim.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function inputs(name: string): BareMetalInstanceInputs {
  return {
    name, tenant: "system", labels: { [ORDER_LABEL]: "order-uid-clients" }, annotations: {},
    catalogItem: catalogItemId, instanceType: "compute", diskImage: "di-rhcos-417", userData: "{\"ignition\":{\"version\":\"3.4.0\"}}",
    networkAttachment: { subnet: "tenant-subnet", securityGroups: ["sg-1"], interface: "ens1f0", primary: true },
    connection: conn,
  };
}

const clientFor = (c: FulfillmentConnection) => host.withFulfillment(c, async (client) => client);

function selfSignedCa(file: string): void {
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=fulfillment.lab",
    "-keyout", path.join(dir, "ca.key"), "-out", file], { stdio: "ignore" });
}

describe("one fulfillment client per connection", () => {
  it("is shared by every operation on the same connection; another token file or CA bundle gets its own", async () => {
    const first = await clientFor(conn);
    expect(await clientFor({ ...conn })).toBe(first);
    const otherToken = path.join(dir, "other-token");
    fs.writeFileSync(otherToken, ADMIN_TOKEN);
    expect(await clientFor({ ...conn, tokenFile: otherToken })).not.toBe(first);

    const caFile = path.join(dir, "ca.crt");
    selfSignedCa(caFile);
    const tls = { address: sim.address, tokenFile, caFile };
    const before = await clientFor(tls);
    expect(await clientFor(tls)).toBe(before);
    selfSignedCa(caFile); // rotated in place
    expect(await clientFor(tls)).not.toBe(before);
  });

  it("serves the provider's operations and still reads the token file on every call", async () => {
    const shared = await clientFor(conn);
    const gets = jest.spyOn(shared.bareMetalInstances, "get");
    const made = await provider.create(inputs("w-shared"));
    await provider.read!(made.id, made.outs);
    expect(gets).toHaveBeenCalledWith(made.id);
    fs.writeFileSync(tokenFile, `${ADMIN_TOKEN_2}\n`);
    await expect(provider.read!(made.id, made.outs)).resolves.toMatchObject({ id: made.id });
    fs.writeFileSync(tokenFile, "revoked-token-value");
    await expect(provider.read!(made.id, made.outs)).rejects.toThrow(/UNAUTHENTICATED/);
    fs.writeFileSync(tokenFile, ADMIN_TOKEN);
    expect(await clientFor(conn)).toBe(shared);
    gets.mockRestore();
    await admin.bareMetalInstances.delete(made.id);
  });

  it("after an outage the next operation connects afresh: a Create right after the restart reaches the service", async () => {
    const made = await provider.create(inputs("w-outage"));
    const before = await clientFor(conn);
    const { port } = sim;
    await sim.stop();
    // Operations keep failing while the service is down (gRPC backs its reconnects off meanwhile).
    const downUntil = Date.now() + 8_000;
    while (Date.now() < downUntil) {
      await expect(provider.read!(made.id, made.outs)).rejects.toThrow(/UNAVAILABLE/);
    }
    expect(await clientFor(conn)).not.toBe(before);
    sim = await startSimulator({ seed: testSeed(), stateDir: path.join(dir, "sim"), port });
    const again = await provider.create(inputs("w-after-outage"));
    expect(again.outs).toMatchObject({ name: "w-after-outage", state: "Provisioning" });
    await expect(provider.read!(made.id, made.outs)).resolves.toMatchObject({ id: made.id });
    await admin.bareMetalInstances.delete(made.id);
    await admin.bareMetalInstances.delete(again.id);
  });
});
