// The BareMetalInstance dynamic provider against an in-process fulfillment simulator. The provider
// object's methods are called directly, through the same run-time loader the provider host uses.
import * as pulumi from "@pulumi/pulumi";
import { Filter, FulfillmentClient } from "../../clients/fulfillment";
import { IGNITION_OF_NEW_INFRAENV, ORDER_LABEL, WITHHELD_IGNITION } from "../../planner/names";
import { bareMetalInstanceProvider as provider } from "../../providers/bareMetalInstance";
import type { BareMetalInstanceInputs, BareMetalInstanceOutputs } from "../../providers/bareMetalInstance";
import type { RunningSimulator } from "../../lab/fulfillment/server";
import { ADMIN_TOKEN, eventually } from "../fulfillment/helpers";
import { parseCreateRejections } from "../../providers/createRejection";
import { createOrder, setWorkers, type TestOrder } from "./orders";
import { startProviderSimulator, type ProviderSimulator } from "./simulator";

const UNKNOWN = pulumi.runtime.unknownValue;
const ORDER = "9b0c1d2e-order-uid";
const IGNITION = JSON.stringify({ ignition: { version: "3.4.0" }, secret: "assisted-pull-token-abc" });

let sim: RunningSimulator;
let tokenFile: string;
let admin: FulfillmentClient;
let catalogItemId: string;
let order: TestOrder;
let fixture: ProviderSimulator;

beforeAll(async () => {
  order = await createOrder();
  fixture = await startProviderSimulator("bmi-provider");
  ({ sim, tokenFile, admin, catalogItemId } = fixture);
});

afterAll(async () => {
  await fixture.stop();
});

afterEach(() => {
  sim.engine.faults.clear();
  sim.engine.tick();
});

function inputs(name: string, extra: Partial<BareMetalInstanceInputs> = {}): BareMetalInstanceInputs {
  return {
    name, tenant: "system",
    labels: { [ORDER_LABEL]: ORDER, "osac.openshift.io/node-set": "compute" },
    annotations: { "osac.openshift.io/owner-reference": `ClusterOrder/${ORDER}` },
    catalogItem: catalogItemId, instanceType: "compute", diskImage: "di-rhcos-417", userData: IGNITION,
    networkAttachment: { subnet: "tenant-subnet", securityGroups: ["sg-1"], interface: "ens1f0", primary: true },
    connection: { address: sim.address, tokenFile, plaintext: true },
    guard: order.guard(`slot-${name}`),
    ...extra,
  };
}

/** Test cleanup, past the provider's delete guard. */
async function cleanup(id: string): Promise<void> {
  await admin.bareMetalInstances.delete(id).catch(() => undefined);
}

const NONE = {} as BareMetalInstanceInputs;

async function bmisNamed(name: string) {
  return admin.bareMetalInstances.listAll(Filter.nameEquals(name));
}

async function create(i: BareMetalInstanceInputs): Promise<{ id: string; outs: BareMetalInstanceOutputs }> {
  const r = await provider.create(i);
  return { id: r.id, outs: r.outs as BareMetalInstanceOutputs };
}

describe("check", () => {
  it("accepts a well-formed BMI and tolerates preview unknowns", async () => {
    expect((await provider.check!(NONE, inputs("w-ok"))).failures).toEqual([]);
    const previewing = { ...inputs("w-ok"), userData: UNKNOWN, diskImage: UNKNOWN, name: UNKNOWN } as BareMetalInstanceInputs;
    expect((await provider.check!(NONE, previewing)).failures).toEqual([]);
  });

  it("reports bad names, oversized user data, non-primary attachments and missing ownership", async () => {
    const bad = {
      ...inputs("Not_A_Name"),
      userData: "x".repeat(65_537),
      networkAttachment: { subnet: "s", securityGroups: [], interface: "ens1f0", primary: false },
      labels: {},
    } as unknown as BareMetalInstanceInputs;
    const failures = (await provider.check!(NONE, bad)).failures ?? [];
    expect(failures.map((f) => f.property).sort()).toEqual(["labels", "name", "networkAttachment", "userData"]);
    const userData = failures.find((f) => f.property === "userData")!;
    expect(userData.reason).toContain("65537");
    expect(userData.reason).not.toContain("xxxx");
    // exactly 64 KiB is allowed
    expect((await provider.check!(NONE, inputs("w-max", { userData: "x".repeat(65_536) }))).failures).toEqual([]);
  });
});

describe("diff", () => {
  const olds = (): BareMetalInstanceOutputs => ({ ...inputs("w-diff"), bmiId: "id", state: "Running", deleting: false, macs: [] });
  const changed = (patch: Partial<BareMetalInstanceInputs>) => inputs("w-diff", patch);
  it("never replaces: create-only inputs and this machine's connection are no change, labels, annotations and guard update in place", async () => {
    const createOnly: Partial<BareMetalInstanceInputs>[] = [
      { userData: "{}" }, { diskImage: "di-other" }, { instanceType: "gpu" }, { catalogItem: "other-item" }, { tenant: "other" } as unknown as Partial<BareMetalInstanceInputs>,
      { networkAttachment: { subnet: "tenant-subnet", securityGroups: ["sg-1", "sg-2"], interface: "ens1f0", primary: true } },
      { networkAttachment: { subnet: "tenant-subnet", securityGroups: ["sg-1"], interface: "ens1f1", primary: true } },
      { networkAttachment: UNKNOWN } as unknown as Partial<BareMetalInstanceInputs>, { adoptId: "some-id" },
      // The endpoint and the token's path are the settings of the machine that runs pulumi (providerHost.ts).
      { connection: { address: "elsewhere:443", tokenFile: "/t" } },
    ];
    for (const patch of createOnly) {
      expect(await provider.diff!("id", olds(), changed(patch))).toEqual({ changes: false, replaces: [], deleteBeforeReplace: false });
    }
    const mutable: Partial<BareMetalInstanceInputs>[] = [
      { labels: { [ORDER_LABEL]: ORDER, extra: "1" } }, { annotations: { note: "n" } },
      { guard: { ...order.guard("slot-w-diff"), slot: "other" } },
    ];
    for (const patch of mutable) {
      expect(await provider.diff!("id", olds(), { ...changed(patch), instanceType: "gpu" })).toEqual({ changes: true, replaces: [], deleteBeforeReplace: false });
    }
  });
});

describe("create", () => {
  it("creates a system BMI with the order label, and read follows it to Running with lower-case MACs", async () => {
    const { id, outs } = await create(inputs("w-create"));
    expect(outs).toMatchObject({ bmiId: id, name: "w-create", state: "Provisioning", deleting: false });
    expect(JSON.stringify(outs)).not.toContain(ADMIN_TOKEN);
    const stored = await admin.bareMetalInstances.get(id);
    expect(stored.metadata?.tenant).toBe("system");
    expect(stored.metadata?.labels[ORDER_LABEL]).toBe(ORDER);
    expect(stored.spec?.user_data).toBe(IGNITION);
    expect(stored.spec?.network_attachments).toHaveLength(1);
    const running = await eventually(async () => {
      const r = await provider.read!(id, outs);
      return (r.props as BareMetalInstanceOutputs).state === "Running" ? (r.props as BareMetalInstanceOutputs) : undefined;
    });
    expect(running.macs).toEqual(["aa:bb:cc:00:00:01", "aa:bb:cc:00:00:02"]);
    // The client's bookkeeping labels are not reported as drift of the program's labels.
    expect(running.labels).toEqual(inputs("w-create").labels);
    await cleanup(id);
  });

  it("a lost Create response, then a retry, leaves exactly one BMI", async () => {
    sim.engine.faults.setMethod({ method: "BareMetalInstances/Create", rate: 0, latencyMs: 0, commitThenDrop: true, remaining: 1 });
    const creates = () => sim.engine.calls.get("BareMetalInstances/Create") ?? 0;
    const before = creates();
    // The Create commits and its response is lost (UNAVAILABLE); the provider finds and adopts it.
    const first = await create(inputs("w-lost"));
    expect(creates() - before).toBe(1);
    // A retry of the whole step (e.g. the next `up`) lists first and makes no Create at all.
    const again = await create(inputs("w-lost"));
    expect(again.id).toBe(first.id);
    expect(creates() - before).toBe(1);
    expect(await bmisNamed("w-lost")).toHaveLength(1);
    await cleanup(first.id);
  });

  it("adopts a live BMI by adoptId and refuses an id that is not this worker's", async () => {
    const made = await create(inputs("w-adopt"));
    const adopted = await create(inputs("w-adopt", { adoptId: made.id }));
    expect(adopted.id).toBe(made.id);
    await expect(provider.create(inputs("w-other", { adoptId: made.id }))).rejects.toThrow(/named 'w-adopt', not 'w-other'/);
    await expect(provider.create(inputs("w-adopt", { adoptId: "no-such-id" }))).rejects.toThrow(/does not exist/);
    await cleanup(made.id);
  });

  it("never adopts a BMI that is being deleted", async () => {
    sim.engine.faults.setLifecycle({ name_prefix: "w-dying", stuck_deleting: true, withhold_macs: false });
    const made = await create(inputs("w-dying"));
    await admin.bareMetalInstances.delete(made.id);
    await expect(provider.create(inputs("w-dying"))).rejects.toThrow(/being deleted/);
    await expect(provider.create(inputs("w-dying", { adoptId: made.id }))).rejects.toThrow(/being deleted/);
    expect(await bmisNamed("w-dying")).toHaveLength(1);
  });

  it("never creates a BMI whose userData is a placeholder (the planner's or the handoff's), and adopts with one", async () => {
    for (const [i, userData] of [IGNITION_OF_NEW_INFRAENV, WITHHELD_IGNITION].entries()) {
      await expect(provider.create(inputs(`w-placeholder-${i}`, { userData }))).rejects.toThrow(/its userData is a placeholder, not the discovery ignition/);
      expect(await bmisNamed(`w-placeholder-${i}`)).toHaveLength(0);
    }
    // An adopted BMI's userData is create-only and never sent: the handoff's stand-in is fine there.
    const made = await create(inputs("w-placeholder-adopt"));
    expect((await create(inputs("w-placeholder-adopt", { adoptId: made.id, userData: WITHHELD_IGNITION }))).id).toBe(made.id);
    await cleanup(made.id);
  });

  it("fails clearly for a DiskImage that does not exist", async () => {
    await expect(provider.create(inputs("w-noimage", { diskImage: "di-missing" }))).rejects.toThrow(/DiskImage 'di-missing' does not exist/);
    expect(await bmisNamed("w-noimage")).toHaveLength(0);
  });
});

describe("read and update", () => {
  it("sees label drift, reports deletion in progress, and reads a vanished BMI as gone", async () => {
    sim.engine.faults.setLifecycle({ name_prefix: "w-drift", stuck_deleting: true, withhold_macs: false });
    const { id, outs } = await create(inputs("w-drift"));
    const stored = await admin.bareMetalInstances.get(id);
    await admin.bareMetalInstances.update({ id, metadata: { labels: { ...stored.metadata!.labels, tampered: "yes" } } },
      { updateMask: ["metadata.labels"] });
    const drifted = (await provider.read!(id, outs)).props as BareMetalInstanceOutputs;
    expect(drifted.labels.tampered).toBe("yes");
    await admin.bareMetalInstances.delete(id);
    const deleting = (await provider.read!(id, outs)).props as BareMetalInstanceOutputs;
    expect(deleting).toMatchObject({ state: "Deleting", deleting: true });
    sim.engine.faults.clear();
    sim.engine.tick();
    expect(await eventually(async () => {
      const r = await provider.read!(id, outs);
      return r.id === "" ? r : undefined;
    })).toEqual({ id: "" });
  });

  it("updates labels and annotations in place, keeping the client's bookkeeping", async () => {
    const { id, outs } = await create(inputs("w-update"));
    const news = inputs("w-update", { labels: { ...inputs("w-update").labels, added: "1" }, annotations: { note: "n" } });
    const r = await provider.update!(id, outs, news);
    expect((r.outs as BareMetalInstanceOutputs).labels.added).toBe("1");
    const stored = await admin.bareMetalInstances.get(id);
    expect(stored.metadata?.labels).toMatchObject({ added: "1", "osac.openshift.io/instance-type": "compute" });
    expect(stored.metadata?.annotations).toMatchObject({ note: "n", "osac.openshift.io/disk-image": "di-rhcos-417" });
    expect(stored.metadata?.annotations["osac.openshift.io/owner-reference"]).toBeUndefined();
    await cleanup(id);
  });
});

describe("update", () => {
  it("keeps the create-only inputs the BMI was created with, and a guard change never calls the service", async () => {
    const { id, outs } = await create(inputs("w-keep"));
    const calls = () => [...sim.engine.calls.entries()].filter(([m]) => m.startsWith("BareMetalInstances/")).reduce((n, [, c]) => n + c, 0);
    const before = calls();
    const guarded = (await provider.update!(id, outs, inputs("w-keep", { guard: order.guard("slot-moved") }))).outs as BareMetalInstanceOutputs;
    expect(calls()).toBe(before);
    expect(guarded.guard?.slot).toBe("slot-moved");
    const news = inputs("w-keep", { labels: { ...inputs("w-keep").labels, added: "1" }, instanceType: "gpu",
      networkAttachment: { subnet: "tenant-subnet", securityGroups: ["sg-2"], interface: "ens2f0", primary: true } });
    const r = (await provider.update!(id, guarded, news)).outs as BareMetalInstanceOutputs;
    expect(r).toMatchObject({ bmiId: id, instanceType: "compute", networkAttachment: inputs("w-keep").networkAttachment });
    expect(r.labels.added).toBe("1");
    await cleanup(id);
  });
});

describe("delete", () => {
  it("issues the Delete of a retired worker's BMI and returns without waiting for it to be gone", async () => {
    sim.engine.faults.setLifecycle({ name_prefix: "w-del", stuck_deleting: true, withhold_macs: false });
    const { id, outs } = await create(inputs("w-del"));
    await setWorkers(order, [{ slot: "slot-w-del", phase: "Deleting", bmi: { name: "w-del", id } }]);
    const started = Date.now();
    await provider.delete!(id, outs);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await admin.bareMetalInstances.get(id)).metadata?.deletion_timestamp).toBeTruthy();
    // Being deleted already, or gone: nothing more to do, and no second Delete.
    const deletes = () => sim.engine.calls.get("BareMetalInstances/Delete") ?? 0;
    const before = deletes();
    await provider.delete!(id, outs);
    expect(deletes()).toBe(before);
    sim.engine.faults.clear();
    sim.engine.tick();
    await eventually(async () => (await admin.bareMetalInstances.get(id).then(() => false, () => true)) || undefined);
    await provider.delete!(id, outs);
    expect(deletes()).toBe(before);
  });
});

describe("create rejections", () => {
  it("marks INVALID_ARGUMENT (a catalog item that does not exist) as a definitive rejection, without the ignition", async () => {
    const err = await provider.create(inputs("w-noitem", { catalogItem: "ci-missing" })).then(() => undefined, (e: Error) => e);
    expect(err).toBeDefined();
    const [rejection] = parseCreateRejections(err!.message);
    expect(rejection).toMatchObject({ bmiName: "w-noitem", code: "INVALID_ARGUMENT" });
    expect(rejection.message).toContain("ci-missing");
    expect(err!.message).not.toContain("assisted-pull-token-abc");
    expect(await bmisNamed("w-noitem")).toHaveLength(0);
  });

  it("marks FAILED_PRECONDITION as a definitive rejection", async () => {
    sim.engine.faults.setMethod({ method: "BareMetalInstances/Create", code: 9 /* FAILED_PRECONDITION */, rate: 1, latencyMs: 0, commitThenDrop: false, remaining: 1 });
    const err = await provider.create(inputs("w-precond")).then(() => undefined, (e: Error) => e);
    expect(parseCreateRejections(err!.message)).toEqual([expect.objectContaining({ bmiName: "w-precond", code: "FAILED_PRECONDITION" })]);
  });

  it("marks ALREADY_EXISTS for a name held by another owner, and adopts nothing", async () => {
    const other = await admin.bareMetalInstances.create({
      metadata: { name: "w-taken", tenant: "system", labels: { [ORDER_LABEL]: "another-order" } },
      spec: { catalog_item: { id: catalogItemId }, user_data: "{}", instance_type: "compute",
        network_attachments: [{ subnet: { id: "tenant-subnet" }, security_groups: [], interface: "ens1f0", primary: true }] },
    });
    const err = await provider.create(inputs("w-taken")).then(() => undefined, (e: Error) => e);
    expect(parseCreateRejections(err!.message)).toEqual([expect.objectContaining({ bmiName: "w-taken", code: "ALREADY_EXISTS" })]);
    expect((await bmisNamed("w-taken")).map((b) => b.id)).toEqual([other.id]);
    await cleanup(other.id);
  });

  it("keeps transient failures ordinary errors (retried by the next update)", async () => {
    sim.engine.faults.setMethod({ method: "BareMetalInstances/Create", code: 14 /* UNAVAILABLE */, rate: 1, latencyMs: 0, commitThenDrop: false });
    const err = await provider.create(inputs("w-flaky")).then(() => undefined, (e: Error) => e);
    expect(err?.message).toMatch(/UNAVAILABLE/);
    expect(parseCreateRejections(err!.message)).toEqual([]);
  });
});
