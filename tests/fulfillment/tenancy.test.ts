// Tenant visibility (seed option tenantPrivateAccess: "visibility", so the DAO rules are observable on
// the private API), and how the client degrades against a server that drops the proposal fields.
import * as fs from "node:fs";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import {
  createOrAdopt, diskImageRefOf, Filter, FulfillmentClient, instanceTypeOf, NotFoundError, PermissionDeniedError, resolveDiskImage,
  storesInstanceType, withDiskImage, withInstanceType,
} from "../../clients/fulfillment";
import type { BareMetalInstanceCatalogItemOut, BareMetalInstanceOut } from "../../clients/fulfillment/types";
import {
  ACME_TOKEN, ADMIN_TOKEN, eventually, GLOBEX_TOKEN, Harness, rawCall, startHarness, testSeed, workerBmi,
} from "./helpers";

let h: Harness;
let admin: FulfillmentClient;
let acme: FulfillmentClient;
let systemBmi: BareMetalInstanceOut;

beforeAll(async () => {
  h = await startHarness(testSeed({ tenantPrivateAccess: "visibility", proposals: { instanceType: false, clusterVersionDiskImage: false } }));
  admin = h.client();
  const acmeToken = path.join(h.dir, "acme-token");
  fs.writeFileSync(acmeToken, ACME_TOKEN);
  acme = h.client({ tokenFile: acmeToken });
  const gpuWorker = workerBmi("sys-worker");
  gpuWorker.spec!.network_attachments = [{ subnet: { name: "tenant-subnet" }, interface: "ens2f0", primary: true }];
  systemBmi = await admin.bareMetalInstances.create(withInstanceType(gpuWorker, "gpu"));
  for (const [name, tenant] of [["acme-item", "acme"], ["globex-item", "globex"]]) {
    await rawCall(h.sim.address, "BareMetalInstanceCatalogItems", "Create", { object: { metadata: { name, tenant }, published: true } }, ADMIN_TOKEN);
  }
});
afterAll(() => h.close());

describe("tenancy", () => {
  it("a tenant sees its own tenant and shared, never system or other tenants", async () => {
    const names = (await acme.catalogItems.listAll()).map((i) => `${i.metadata?.tenant}/${i.metadata?.name}`).sort();
    expect(names).toEqual(["acme/acme-item", "shared/draft-item", "shared/hosted-item", "shared/locked-item"]);
    expect((await acme.bareMetalInstances.list()).total).toBe(0);
    await expect(acme.bareMetalInstances.get(systemBmi.id)).rejects.toThrow(NotFoundError);
    await expect(acme.bareMetalInstances.delete(systemBmi.id)).rejects.toThrow(NotFoundError);
    await expect(acme.bareMetalInstances.update({ id: systemBmi.id }, { updateMask: ["metadata.labels"] })).rejects.toThrow(NotFoundError);
  });

  it("an admin sees every tenant", async () => {
    const tenants = new Set((await admin.catalogItems.listAll()).map((i) => i.metadata?.tenant));
    expect([...tenants].sort()).toEqual(["acme", "globex", "shared", "system"]);
  });

  it("a tenant cannot create in system (the product client always asks for it) or in another tenant", async () => {
    await expect(acme.bareMetalInstances.create(workerBmi("acme-try"))).rejects.toThrow(PermissionDeniedError);
    await expect(rawCall(h.sim.address, "BareMetalInstanceCatalogItems", "Create", { object: { metadata: { name: "x", tenant: "globex" } } }, ACME_TOKEN))
      .rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
    await expect(rawCall(h.sim.address, "BareMetalInstanceCatalogItems", "Create", { object: { metadata: { name: "x", tenant: "nope" } } }, ADMIN_TOKEN))
      .rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: "tenant 'nope' doesn't exist" });
  });

  it("a tenant Create without a tenant lands in the subject's tenant; an admin's in shared", async () => {
    const own = await rawCall<object, { object: BareMetalInstanceCatalogItemOut }>(h.sim.address, "BareMetalInstanceCatalogItems", "Create",
      { object: { metadata: { name: "globex-own" } } }, GLOBEX_TOKEN);
    expect(own.object.metadata?.tenant).toBe("globex");
    const adm = await rawCall<object, { object: BareMetalInstanceCatalogItemOut }>(h.sim.address, "BareMetalInstanceCatalogItems", "Create",
      { object: { metadata: { name: "admin-default" } } }, ADMIN_TOKEN);
    expect(adm.object.metadata?.tenant).toBe("shared");
    expect((await acme.catalogItems.list({ filter: Filter.nameEquals("admin-default") })).total).toBe(1);
  });
});

describe("a server without the proposal fields", () => {
  it("echoes spec.instance_type in the Create response but does not store it; support is judged from a Get", async () => {
    const created = await admin.bareMetalInstances.create(withInstanceType(workerBmi("echo-1"), "compute"));
    expect(created.spec?.instance_type).toBe("compute");
    expect((await admin.bareMetalInstances.get(created.id)).spec?.instance_type).toBe("");
    await expect(storesInstanceType(admin.bareMetalInstances, created)).resolves.toBe(false);
    const adopted = await createOrAdopt(admin.bareMetalInstances, withInstanceType(workerBmi("echo-2"), "compute"),
      { ownerLabels: { "osac.openshift.io/cluster-order": "order-1" } });
    expect(adopted.bmi.spec?.instance_type).toBe(""); // what the server stored, not what it echoed
    expect(instanceTypeOf(adopted.bmi)).toBe("compute");
  });

  it("drops spec.instance_type; the label keeps the type, which still drives host selection", async () => {
    expect((await admin.bareMetalInstances.get(systemBmi.id)).spec?.instance_type).toBe("");
    expect(instanceTypeOf(systemBmi)).toBe("gpu");
    const done = await eventually(async () => {
      const b = await admin.bareMetalInstances.get(systemBmi.id);
      return b.status?.state === "BARE_METAL_INSTANCE_STATE_RUNNING" ? b : undefined;
    });
    expect(done.status?.hardware?.nics.map((n) => n.mac)).toEqual(["aa:bb:cc:00:02:01"]);
  });

  it("drops ClusterVersion.spec.disk_image; the annotation fallback resolves, a version without it resolves to nothing", async () => {
    const withField = await admin.clusterVersions.get("cv-4-17-3");
    expect(withField.spec?.disk_image).toBeNull();
    expect(diskImageRefOf(withField)).toBeUndefined();
    await expect(resolveDiskImage(admin.diskImages, withField)).resolves.toBeUndefined();
    const annotated = await admin.clusterVersions.get("cv-4-17-4");
    const image = await resolveDiskImage(admin.diskImages, annotated);
    expect(image?.id).toBe("di-rhcos-417");
    const bmi = await admin.bareMetalInstances.create(withDiskImage(workerBmi("with-image"), image!));
    expect(bmi.spec?.image).toEqual({ source_type: "registry", source_ref: "quay.io/openshift/rhcos:4.17" });
    expect(bmi.metadata?.annotations["osac.openshift.io/disk-image"]).toBe("di-rhcos-417");
  });
});

it("a server that keeps spec.instance_type is recognised from a Get", async () => {
  const keeping = await startHarness(testSeed());
  try {
    const c = keeping.client();
    const created = await c.bareMetalInstances.create(withInstanceType(workerBmi("keeps-1"), "compute"));
    await expect(storesInstanceType(c.bareMetalInstances, created)).resolves.toBe(true);
  } finally {
    await keeping.close();
  }
});
