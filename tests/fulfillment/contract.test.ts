// Contract of the product client against the simulator, run as its own process on a loopback socket:
// validation errors, uniqueness, tenancy of private creates, update rules, dry run, asynchronous
// delete, the BMI lifecycle, filters and paging, with the simulator's messages and lab counters. The
// cases every fulfillment target shares (fake, simulator, a real endpoint) are in apiContract.test.ts.
import * as fs from "node:fs";
import * as grpc from "@grpc/grpc-js";
import {
  AbortedError, AlreadyExistsError, FulfillmentClient, Filter, InvalidArgumentError, NotFoundError, PermissionDeniedError,
  resolveDiskImage, diskImageRefOf, withDiskImage, UnauthenticatedError,
} from "../../clients/fulfillment";
import type { BareMetalInstanceOut } from "../../clients/fulfillment/types";
import {
  ACME_TOKEN, ADMIN_TOKEN, eventually, Harness, nextBoots, rawCall, startHarness, stats, SYSTEM_ITEM, workerBmi,
} from "./helpers";

let h: Harness;
let c: FulfillmentClient;
beforeAll(async () => {
  h = await startHarness();
  c = h.client();
});
afterAll(() => h.close());

const running = (id: string) => eventually(async () => {
  const b = await c.bareMetalInstances.get(id);
  return b.status?.state === "BARE_METAL_INSTANCE_STATE_PROVISIONING" ? undefined : b;
});
const gone = (id: string) => eventually(async () => {
  try {
    await c.bareMetalInstances.get(id);
    return undefined;
  } catch (err) {
    if (err instanceof NotFoundError) return true;
    throw err;
  }
});

describe("BareMetalInstances.Create", () => {
  it("creates in tenant system explicitly, with the controller finalizer, PROVISIONING", async () => {
    const before = await stats(h.lab);
    const bmi = await c.bareMetalInstances.create(workerBmi("create-basic"));
    expect(bmi.metadata).toMatchObject({ tenant: "system", creator: "system", name: "create-basic", finalizers: ["fulfillment-controller"] });
    expect(bmi.spec?.catalog_item).toMatchObject({ name: SYSTEM_ITEM, id: expect.any(String) });
    expect(bmi.status?.state).toBe("BARE_METAL_INSTANCE_STATE_PROVISIONING");
    expect((await stats(h.lab)).creates_without_system_tenant).toBe(before.creates_without_system_tenant);
  });

  it("refuses to create in another tenant", async () => {
    await expect(c.bareMetalInstances.create({ ...workerBmi("x"), metadata: { name: "x", tenant: "shared" } }))
      .rejects.toThrow(/refusing to create an object in tenant 'shared'/);
  });

  it("an admin Create without a tenant lands in shared, and the lab counts it", async () => {
    const before = (await stats(h.lab)).creates_without_system_tenant;
    const res = await rawCall<object, { object: BareMetalInstanceOut }>(h.sim.address, "BareMetalInstances", "Create",
      { object: workerBmi("no-tenant") }, ADMIN_TOKEN);
    expect(res.object.metadata?.tenant).toBe("shared");
    expect((await stats(h.lab)).creates_without_system_tenant).toBe(before + 1);
  });

  it.each([
    ["", /metadata.name is mandatory/],
    ["Upper-Case", /lowercase RFC 1123 label/],
    ["-leading-dash", /lowercase RFC 1123 label/],
    ["x".repeat(64), /lowercase RFC 1123 label/],
  ])("rejects the name %j", async (name, message) => {
    const err = await c.bareMetalInstances.create(workerBmi(name)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).message).toMatch(message);
    expect((err as InvalidArgumentError).fieldViolations).toEqual([{ field: "object.metadata.name", description: expect.any(String) }]);
  });

  it("rejects upper-case label values and bad label keys", async () => {
    const bmi = workerBmi("bad-label");
    await expect(c.bareMetalInstances.create({ ...bmi, metadata: { ...bmi.metadata, labels: { env: "Prod" } } }))
      .rejects.toThrow(InvalidArgumentError);
    await expect(c.bareMetalInstances.create({ ...bmi, metadata: { ...bmi.metadata, labels: { "a/b/c": "x" } } }))
      .rejects.toThrow(/label key 'a\/b\/c' is not valid/);
  });

  it("keeps names unique per (tenant, project), soft-deleted rows included", async () => {
    const first = await c.bareMetalInstances.create(workerBmi("unique-name"));
    await expect(c.bareMetalInstances.create(workerBmi("unique-name"))).rejects.toThrow(AlreadyExistsError);
    await c.bareMetalInstances.delete(first.id);
    expect((await c.bareMetalInstances.get(first.id)).metadata?.deletion_timestamp).not.toBeNull();
    await expect(c.bareMetalInstances.create(workerBmi("unique-name"))).rejects.toThrow(/object with name 'unique-name' already exists/);
    await gone(first.id);
    const second = await c.bareMetalInstances.create(workerBmi("unique-name"));
    expect(second.id).not.toBe(first.id);
  });

  it("stores a caller-supplied id and rejects its reuse", async () => {
    const id = "0b5d7e9c-1111-4d2a-9a59-3f6c7a5b0001";
    expect((await c.bareMetalInstances.create({ ...workerBmi("own-id"), id })).id).toBe(id);
    await expect(c.bareMetalInstances.create({ ...workerBmi("own-id-2"), id })).rejects.toThrow(/identifier .* already exists/);
  });

  it("accepts 65536 bytes of user_data and rejects 65537 with the size in the message", async () => {
    const ok = workerBmi("ud-max");
    await c.bareMetalInstances.create({ ...ok, spec: { ...ok.spec, user_data: "é".repeat(32768) } });
    const big = workerBmi("ud-big");
    const err = await c.bareMetalInstances.create({ ...big, spec: { ...big.spec, user_data: "x".repeat(65537) } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toContain("spec.user_data: size 65537 exceeds the maximum of 65536 bytes");
    expect((err as InvalidArgumentError).fieldViolations[0].field).toBe("object.spec.user_data");
  });

  it.each([
    ["no catalog item", { catalog_item: null }, InvalidArgumentError, /spec.catalog_item is mandatory/],
    ["an unknown catalog item", { catalog_item: { name: "nope" } }, InvalidArgumentError, /catalog item 'nope' not found/],
    ["an id/name mismatch", { catalog_item: { name: "draft-item", id: "x" } }, InvalidArgumentError, /catalog item 'x' not found/],
    ["an unpublished catalog item", { catalog_item: { name: "draft-item" } }, NotFoundError, /catalog item 'draft-item' is not published/],
    ["fields the catalog item does not allow", { catalog_item: { name: "locked-item" }, ssh_public_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB x" },
      InvalidArgumentError, /fields not allowed by catalog item: ssh_public_key/],
    ["a malformed ssh key", { ssh_public_key: "not a key" }, InvalidArgumentError, /not a valid OpenSSH public key/],
    ["an image without source_ref", { image: { source_type: "registry" } }, InvalidArgumentError, /both source_type and source_ref/],
    ["an unknown instance type", { instance_type: "huge" }, InvalidArgumentError, /instance type 'huge' not found/],
    ["two attachments without a primary", { network_attachments: [
      { subnet: { name: "a" }, interface: "ens1f0" }, { subnet: { name: "b" }, interface: "ens1f1" }] },
    InvalidArgumentError, /exactly one network attachment must be primary/],
    // Interfaces are checked against the HostType of the catalog item's template, not the instance type.
    ["a port the template's HostType lacks, though the instance type has it",
      { catalog_item: { name: "hosted-item" }, network_attachments: [{ subnet: { name: "a" }, interface: "ens1f1", primary: true }] },
      InvalidArgumentError, /network_attachments\[0\]: interface 'ens1f1' not found in host type 'ht-compute'/],
    ["a lifecycle port of the HostType",
      { catalog_item: { name: "hosted-item" }, network_attachments: [{ subnet: { name: "a" }, interface: "eno1", primary: true }] },
      InvalidArgumentError, /interface 'eno1' has role 'lifecycle' and cannot be used for tenant networking/],
  ])("rejects %s", async (_what, spec, cls, message) => {
    const base = workerBmi("bad-spec");
    const err = await c.bareMetalInstances.create({ ...base, spec: { ...base.spec, ...spec } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(cls);
    expect((err as Error).message).toMatch(message);
  });

  it("accepts any interface for an item without a HostType, and a HostType's port the instance type lacks", async () => {
    const base = workerBmi("hosted-ok");
    const ok = await c.bareMetalInstances.create({ ...base, spec: { ...base.spec, catalog_item: { name: "hosted-item" },
      network_attachments: [{ subnet: { name: "a" }, interface: "ens3f0", primary: true }] } });
    expect(ok.spec?.network_attachments[0].interface).toBe("ens3f0");
    const free = workerBmi("no-host-type");
    await expect(c.bareMetalInstances.create({ ...free, spec: { ...free.spec,
      network_attachments: [{ subnet: { name: "a" }, interface: "eth9", primary: true }] } })).resolves.toBeDefined();
  });

  it("reports a bad catalog reference as a BadRequest field violation", async () => {
    const base = workerBmi("bad-ref");
    const err = await c.bareMetalInstances.create({ ...base, spec: { ...base.spec, catalog_item: { id: "missing" } } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).fieldViolations).toEqual([{ field: "object.spec.catalog_item", description: "catalog item 'missing' not found" }]);
  });

  it("x-dry-run validates and returns the object without persisting it", async () => {
    const dry = await c.bareMetalInstances.create(workerBmi("dry-run"), { dryRun: true });
    expect(dry.id).toBeTruthy();
    await expect(c.bareMetalInstances.get(dry.id)).rejects.toThrow(NotFoundError);
    expect((await c.bareMetalInstances.list({ filter: Filter.nameEquals("dry-run") })).total).toBe(0);
    await expect(c.bareMetalInstances.create(workerBmi("Dry"), { dryRun: true })).rejects.toThrow(InvalidArgumentError);
  });
});

describe("BareMetalInstances lifecycle", () => {
  it("runs on a host matching the instance type and reports lower-case MACs; the boot is streamed", async () => {
    const boots = nextBoots(h.lab, 1);
    const bmi = await c.bareMetalInstances.create(workerBmi("life-gpu", {
      spec: { ...workerBmi("x").spec, instance_type: "gpu", network_attachments: [{ subnet: { id: "s1" }, interface: "ens2f0", primary: true }] },
    }));
    const done = await running(bmi.id);
    expect(done.status?.state).toBe("BARE_METAL_INSTANCE_STATE_RUNNING");
    expect(done.status?.hardware?.nics).toEqual([{ mac: "aa:bb:cc:00:02:01" }]);
    expect(done.status?.network_attachment_statuses).toEqual([expect.objectContaining({ interface: "ens2f0", subnet_ref: "s1", primary: true })]);
    const [boot] = await boots;
    expect(boot).toMatchObject({ bmi_id: bmi.id, host_name: "gpu-0", macs: ["aa:bb:cc:00:02:01"], instance_type: "gpu",
      user_data: '{"ignition":{"version":"3.4.0"}}' });
  });

  it("FAILS with HostSelectionFailed when no host is free, and the host returns to the pool after delete", async () => {
    const other = await c.bareMetalInstances.create(workerBmi("life-gpu-2", { spec: { ...workerBmi("x").spec, instance_type: "gpu", network_attachments: [] } }));
    const failed = await running(other.id);
    expect(failed.status?.state).toBe("BARE_METAL_INSTANCE_STATE_FAILED");
    expect(failed.status?.conditions).toContainEqual(expect.objectContaining({
      type: "BARE_METAL_INSTANCE_CONDITION_TYPE_PROVISIONED", status: "CONDITION_STATUS_FALSE", reason: "HostSelectionFailed",
    }));
    const holder = (await c.bareMetalInstances.list({ filter: Filter.nameEquals("life-gpu") })).items[0];
    await c.bareMetalInstances.delete(holder.id);
    await c.bareMetalInstances.delete(other.id);
    await gone(holder.id);
    const again = await c.bareMetalInstances.create(workerBmi("life-gpu-3", { spec: { ...workerBmi("x").spec, instance_type: "gpu", network_attachments: [] } }));
    expect((await running(again.id)).status?.hardware?.nics[0].mac).toBe("aa:bb:cc:00:02:01");
  });

  it("deletes asynchronously: deletion_timestamp + DELETING first, NOT_FOUND later; repeated Delete is accepted", async () => {
    const bmi = await c.bareMetalInstances.create(workerBmi("life-delete"));
    await c.bareMetalInstances.delete(bmi.id);
    const deleting = await c.bareMetalInstances.get(bmi.id);
    expect(deleting.metadata?.deletion_timestamp).not.toBeNull();
    expect(deleting.status?.state).toBe("BARE_METAL_INSTANCE_STATE_DELETING");
    const live = await c.bareMetalInstances.list({ filter: Filter.and(Filter.nameEquals("life-delete"), Filter.notDeleted()) });
    expect(live.total).toBe(0);
    await c.bareMetalInstances.delete(bmi.id);
    await gone(bmi.id);
    await expect(c.bareMetalInstances.delete(bmi.id)).rejects.toThrow(NotFoundError);
  });
});

describe("BareMetalInstances.Update", () => {
  let bmi: BareMetalInstanceOut;
  beforeAll(async () => {
    bmi = await running((await c.bareMetalInstances.create(workerBmi("upd"))).id);
  });

  it("changes mutable fields through a mask and bumps the version", async () => {
    const out = await c.bareMetalInstances.update({ id: bmi.id, metadata: { labels: { extra: "yes" } }, spec: { run_strategy: "BARE_METAL_INSTANCE_RUN_STRATEGY_HALTED" } },
      { updateMask: ["metadata.labels", "spec.run_strategy"] });
    expect(out.metadata?.labels).toEqual({ extra: "yes" });
    expect(out.spec?.run_strategy).toBe("BARE_METAL_INSTANCE_RUN_STRATEGY_HALTED");
    expect(out.spec?.user_data).toBe(bmi.spec?.user_data);
    expect(out.metadata?.version).toBe(bmi.metadata!.version + 1);
  });

  it.each([
    ["spec.user_data", { spec: { user_data: "other" } }, /cannot change spec.user_data/],
    ["spec.catalog_item", { spec: { catalog_item: { name: "locked-item" } } }, /cannot change spec.catalog_item/],
    ["spec.instance_type", { spec: { instance_type: "gpu" } }, /cannot change spec.instance_type/],
    ["spec.network_attachments", { spec: { network_attachments: [] } }, /cannot change spec.network_attachments/],
    ["metadata.name", { metadata: { name: "renamed" } }, /cannot change metadata.name/],
  ])("rejects a change of immutable %s", async (path, change, message) => {
    await expect(c.bareMetalInstances.update({ id: bmi.id, ...change }, { updateMask: [path] })).rejects.toThrow(message);
  });

  it("checks every immutable field without a mask, and accepts an unchanged full object", async () => {
    const current = await c.bareMetalInstances.get(bmi.id);
    await expect(c.bareMetalInstances.update({ ...current, spec: { ...current.spec, user_data: "changed" } })).rejects.toThrow(InvalidArgumentError);
    const same = await c.bareMetalInstances.update(current);
    expect(same.metadata?.version).toBe(current.metadata?.version);
  });

  it("lock = true fails with ABORTED on a stale version", async () => {
    const current = await c.bareMetalInstances.get(bmi.id);
    await expect(c.bareMetalInstances.update({ id: bmi.id, metadata: { version: current.metadata!.version - 1, labels: { a: "b" } } },
      { updateMask: ["metadata.labels"], lock: true })).rejects.toThrow(AbortedError);
  });

  it("NOT_FOUND for an unknown id", async () => {
    await expect(c.bareMetalInstances.update({ id: "nope" }, { updateMask: ["metadata.labels"] })).rejects.toThrow(NotFoundError);
  });
});

describe("List: filters and paging", () => {
  beforeAll(async () => {
    for (let i = 0; i < 105; i++) {
      await c.catalogItems.create({ metadata: { name: `page-${i}`, labels: { batch: "paging" } }, title: `t${i}`, published: true });
    }
  });

  it("defaults to 100 per page and reports the total; listAll pages until offset >= total", async () => {
    const filter = Filter.labelEquals("batch", "paging");
    const first = await c.catalogItems.list({ filter });
    expect([first.size, first.total]).toEqual([100, 105]);
    const all = await c.catalogItems.listAll(filter, 20);
    expect(all.map((i) => i.metadata?.name).sort()).toEqual(Array.from({ length: 105 }, (_, i) => `page-${i}`).sort());
    const countOnly = await c.catalogItems.list({ filter, limit: 0 });
    expect([countOnly.size, countOnly.total]).toEqual([0, 105]);
    await expect(c.catalogItems.list({ limit: 1001 })).rejects.toThrow(/limit must be within/);
  });

  it("caps the page at 1000 and rejects a negative limit", async () => {
    for (let batch = 0; batch < 1001; batch += 50) {
      await Promise.all(Array.from({ length: Math.min(50, 1001 - batch) }, (_, j) => c.catalogItems.create({
        metadata: { name: `cap-${batch + j}`, labels: { batch: "cap" } }, title: "cap", published: true })));
    }
    const capped = await rawCall<object, { size: number; total: number }>(h.sim.address, "BareMetalInstanceCatalogItems", "List",
      { limit: 5000, filter: Filter.labelEquals("batch", "cap").toString() }, ADMIN_TOKEN);
    expect([capped.size, capped.total]).toEqual([1000, 1001]);
    const all = await c.catalogItems.listAll(Filter.labelEquals("batch", "cap"));
    expect(new Set(all.map((i) => i.metadata?.name)).size).toBe(1001);
    await expect(rawCall(h.sim.address, "BareMetalInstanceCatalogItems", "List", { limit: -1 }, ADMIN_TOKEN))
      .rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
  });

  it("a page of BMIs larger than the client's receive limit is fetched again in halves", async () => {
    // 12 BMIs with 60 KiB of user_data each: ~720 KiB in one page, against a 256 KiB receive limit.
    const userData = JSON.stringify({ ignition: { version: "3.4.0" }, pad: "x".repeat(60 * 1024) });
    for (let i = 0; i < 12; i++) {
      const bmi = workerBmi(`big-${i}`);
      await c.bareMetalInstances.create({ ...bmi, metadata: { ...bmi.metadata, labels: { batch: "big-page" } }, spec: { ...bmi.spec, user_data: userData } });
    }
    const small = h.client({ maxReceiveMessageBytes: 256 * 1024 });
    const filter = Filter.labelEquals("batch", "big-page");
    await expect(small.bareMetalInstances.list({ filter, limit: 100 })).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
    const all = await small.bareMetalInstances.listAll(filter);
    expect(all.map((b) => b.metadata?.name).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `big-${i}`).sort());
    // A listing leaves user_data out (decisions F13); Get still has it.
    expect(all.every((b) => b.spec?.user_data === undefined && b.spec?.instance_type === "compute")).toBe(true);
    expect((await small.bareMetalInstances.get(all[0].id)).spec?.user_data).toBe(userData);
    for (const b of all) await c.bareMetalInstances.delete(b.id!);
  });

  it("a label value crafted as CEL cannot widen the match", async () => {
    const hostile = Filter.labelEquals("batch", "x' || true || '");
    expect((await c.catalogItems.list({ filter: hostile })).total).toBe(0);
    const naive = `this.metadata.labels['batch'] == 'x' || true || ''`; // what string pasting would produce
    const res = await rawCall<object, { total: number }>(h.sim.address, "BareMetalInstanceCatalogItems", "List", { filter: naive }, ADMIN_TOKEN);
    expect(res.total).toBeGreaterThan(100);
  });

  it.each([
    "this.metadata.bogus == 'x'",
    "this.metadata.name.matches('.*')",
    "this.metadata.name ==",
  ])("answers INVALID_ARGUMENT for the untranslatable filter %s", async (filter) => {
    await expect(rawCall(h.sim.address, "BareMetalInstanceCatalogItems", "List", { filter }, ADMIN_TOKEN))
      .rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
  });

  it("filters by tenant, name prefix and labels", async () => {
    const sys = await c.catalogItems.listAll(Filter.tenantEquals("system"));
    expect(sys.map((i) => i.metadata?.name)).toContain(SYSTEM_ITEM);
    expect(sys.every((i) => i.metadata?.tenant === "system")).toBe(true);
    expect((await c.catalogItems.list({ filter: Filter.and(Filter.nameStartsWith("page-10"), Filter.hasLabel("batch")) })).total).toBe(6);
    expect((await c.catalogItems.list({ filter: Filter.nameIn(["page-1", "page-2", "nope"]) })).total).toBe(2);
  });
});

describe("authentication", () => {
  it("UNAUTHENTICATED without a bearer token", async () => {
    await expect(rawCall(h.sim.address, "BareMetalInstances", "List", {})).rejects.toMatchObject({
      code: grpc.status.UNAUTHENTICATED, details: "method '/osac.private.v1.BareMetalInstances/List' requires authentication",
    });
  });

  it("PERMISSION_DENIED for a tenant token on the private API", async () => {
    await expect(rawCall(h.sim.address, "BareMetalInstances", "List", {}, ACME_TOKEN)).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
  });

  it("an unknown token is UNAUTHENTICATED and never echoed", async () => {
    const secret = "secret-token-that-must-not-leak";
    const err = (await rawCall(h.sim.address, "BareMetalInstances", "List", {}, secret).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(err.message).not.toContain(secret);
    const other = h.client({ tokenFile: `${h.dir}/missing-token` });
    await expect(other.bareMetalInstances.list()).rejects.toThrow(UnauthenticatedError);
  });
});

describe("related resources", () => {
  it("Clusters.Get returns spec.version, which leads to the ClusterVersion and its DiskImage", async () => {
    const cluster = await c.clusters.get("cluster-1");
    expect(cluster.spec?.version?.id).toBe("cv-4-17-3");
    const cv = await c.clusterVersions.get(cluster.spec!.version!.id);
    expect(diskImageRefOf(cv)).toEqual({ id: "di-rhcos-417", name: "" });
    const image = await resolveDiskImage(c.diskImages, cv);
    expect(image?.spec?.source_ref).toBe("quay.io/openshift/rhcos:4.17");
    expect(withDiskImage(workerBmi("w"), image!).spec?.image).toEqual({ source_type: "registry", source_ref: "quay.io/openshift/rhcos:4.17" });
  });

  it("lists instance types with network ports and host selectors", async () => {
    const types = await c.instanceTypes.listAll();
    const compute = types.find((t) => t.metadata?.name === "compute")!;
    expect(compute.spec?.hardware?.network_ports.find((p) => p.role === "fabric")?.name).toBe("ens1f0");
    expect(compute.spec?.hardware?.memory?.total_gb).toBe("256");
    expect(compute.spec?.host_label_selector?.match_labels).toEqual({ "osac.openshift.io/class": "compute" });
  });
});

it("maps PERMISSION_DENIED onto PermissionDeniedError", async () => {
  fs.writeFileSync(`${h.dir}/acme-token`, ACME_TOKEN);
  const acme = h.client({ tokenFile: `${h.dir}/acme-token` });
  await expect(acme.bareMetalInstances.list()).rejects.toThrow(PermissionDeniedError);
});
