// The simulator serves BareMetalInstanceTemplates (fulfillment-api.md §4.2) and HostTypes (§4.5) as
// standard private services, and BMI Create checks attachment interfaces against whatever HostType
// the catalog item's template names in its store, seeded or created through the API.
import * as fs from "node:fs";
import * as path from "node:path";
import { catalogHostType, FulfillmentClient, Filter, InvalidArgumentError, NotFoundError } from "../../clients/fulfillment";
import { startSimulator, type RunningSimulator } from "../../lab/fulfillment/server";
import { ADMIN_TOKEN, SYSTEM_ITEM, tempDir, testSeed, workerBmi } from "./helpers";

let dir: string;
let sim: RunningSimulator;
let c: FulfillmentClient;

function clientFor(s: RunningSimulator): FulfillmentClient {
  const tokenFile = path.join(dir, "token");
  fs.writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
  return new FulfillmentClient({ address: s.address, transport: { kind: "plaintext" }, tokenFile, deadlineMs: 5_000,
    retry: { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 2 } });
}

beforeAll(async () => {
  dir = tempDir("hosttypes");
  sim = await startSimulator({ seed: testSeed(), stateDir: dir });
  c = clientFor(sim);
});
afterAll(async () => {
  c.close();
  await sim.stop();
});

describe("BareMetalInstanceTemplates and HostTypes services", () => {
  it("serve the seed's templates and HostTypes with the reference's fields; unknown ids are NOT_FOUND", async () => {
    const tpl = await c.templates.get("tpl.hosted");
    expect(tpl).toMatchObject({ id: "tpl.hosted", title: "hosted workers", host_type: "ht-compute", parameters: [] });
    expect(tpl.metadata).toMatchObject({ name: "hosted", tenant: "shared" });
    const [ht] = await c.hostTypes.listAll(Filter.nameEquals("compute-host"));
    expect(ht.id).toBe("ht-compute");
    expect(ht.interfaces.map((i) => [i.name, i.role])).toEqual([["eno1", "lifecycle"], ["ens1f0", "fabric"], ["ens3f0", "fabric"]]);
    await expect(c.templates.get("tpl.nope")).rejects.toThrow(NotFoundError);
    await expect(c.hostTypes.get("ht-nope")).rejects.toThrow(NotFoundError);
  });

  it("refuses a caller-supplied template id outside ^[a-zA-Z_][a-zA-Z0-9._]*$", async () => {
    const err = await c.templates.create({ id: "bad-id", metadata: { name: "bad-id" } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toContain("template id 'bad-id' must match");
  });

  it("a template and HostType created through the API govern BMI Create (host_type given by name)", async () => {
    await c.hostTypes.create({ metadata: { name: "api-host" }, interfaces: [{ name: "eno1", role: "lifecycle" }, { name: "ens9", role: "fabric" }] });
    await c.templates.create({ id: "tpl.api", metadata: { name: "api-tpl" }, host_type: "api-host" });
    await c.catalogItems.create({ metadata: { name: "api-item" }, published: true, template: { id: "tpl.api" } });
    const base = workerBmi("api-bmi");
    const attach = (iface: string) => ({ ...base, spec: { ...base.spec, catalog_item: { name: "api-item" },
      network_attachments: [{ subnet: { name: "a" }, interface: iface, primary: true }] } });
    const refused = await c.bareMetalInstances.create(attach("ens1f0")).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidArgumentError);
    expect((refused as Error).message).toMatch(/interface 'ens1f0' not found in host type/);
    await expect(c.bareMetalInstances.create(attach("ens9"))).resolves.toMatchObject({ spec: { network_attachments: [{ interface: "ens9" }] } });
  });

  it("catalogHostType follows template → host_type → HostType, and says when there is none", async () => {
    expect((await catalogHostType(c, { id: "tpl.hosted" })).value).toEqual({
      kind: "found", template: "tpl.hosted", hostType: "compute-host",
      interfaces: [{ name: "eno1", role: "lifecycle" }, { name: "ens1f0", role: "fabric" }, { name: "ens3f0", role: "fabric" }],
    });
    expect((await catalogHostType(c, { name: "api-tpl" })).value).toMatchObject({ kind: "found", template: "tpl.api", hostType: "api-host" });
    expect((await catalogHostType(c, { id: "tpl.nope" })).value).toMatchObject({ kind: "none" });
    expect((await catalogHostType(c, undefined)).value).toMatchObject({ kind: "none" });
    await c.templates.create({ id: "tpl.dangling", metadata: { name: "dangling" }, host_type: "ht-gone" });
    expect((await catalogHostType(c, { id: "tpl.dangling" })).value).toEqual({
      kind: "unresolved", message: "the HostType 'ht-gone' of BareMetalInstanceTemplate 'tpl.dangling' does not exist",
    });
  });
});

it("state written before these services existed gets the seed's templates and HostTypes on restart", async () => {
  const old = tempDir("hosttypes-old");
  const first = await startSimulator({ seed: testSeed(), stateDir: old });
  await first.stop();
  const file = path.join(old, "state.json");
  const state = JSON.parse(fs.readFileSync(file, "utf8")) as { rows: Record<string, unknown> };
  delete state.rows.BareMetalInstanceTemplates;
  delete state.rows.HostTypes;
  fs.writeFileSync(file, JSON.stringify(state));
  const again = await startSimulator({ seed: testSeed(), stateDir: old });
  const client = clientFor(again);
  try {
    expect((await client.templates.get("tpl.hosted")).host_type).toBe("ht-compute");
    expect(await client.catalogItems.listAll(Filter.nameEquals(SYSTEM_ITEM))).toHaveLength(1); // the rest is not seeded twice
  } finally {
    client.close();
    await again.stop();
  }
});
