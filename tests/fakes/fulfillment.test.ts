// What the in-memory fake does beyond the shared contract (tests/fulfillment/apiContract.test.ts):
// it refuses filters the product never builds, its access and controller switches, and product code
// (observation) running against it with no process at all.
import { CelFilter, Filter, NotFoundError, PermissionDeniedError } from "../../clients/fulfillment";
import { observe } from "../../io/observe";
import { defaultPlannerConfig } from "../../planner/config";
import { SYSTEM_CATALOG_ITEM } from "../../planner/names";
import { hubWith, ORDER_UID, orderRecording } from "../fulfillment/observeFixture";
import { testSeed, workerBmi } from "../fulfillment/helpers";
import { CONTROLLER_FINALIZER, FakeFulfillment, fakeFulfillment, UnsupportedFilterError } from "./fulfillment";
import { checkFilter, evaluateFilter, parseFilter } from "../../lab/fulfillment/cel";
import { loadFulfillmentRoot } from "../../protos/fulfillment";
import { compileFilter } from "./fulfillmentFilter";

const seed = () => ({ BareMetalInstanceCatalogItems: testSeed().catalogItems, BareMetalInstanceTypes: testSeed().instanceTypes });

describe("the fake's filters", () => {
  const obj = (name: string, labels: Record<string, string> = {}, tenant = "system") =>
    ({ id: `id-${name}`, metadata: { name, tenant, labels, deletion_timestamp: null } });

  it.each([
    ["idEquals", Filter.idEquals("id-a"), ["a"]],
    ["nameEquals", Filter.nameEquals("b"), ["b"]],
    ["nameStartsWith", Filter.nameStartsWith("a"), ["a", "ab"]],
    ["nameIn", Filter.nameIn(["a", "b", "z"]), ["a", "b"]],
    ["nameIn of nothing", Filter.nameIn([]), []],
    ["tenantEquals", Filter.tenantEquals("shared"), ["b"]],
    ["hasLabel", Filter.hasLabel("k"), ["a", "ab"]],
    ["labelEquals", Filter.labelEquals("k", "v"), ["a"]],
    ["labelsMatch of nothing", Filter.labelsMatch({}), ["a", "ab", "b"]],
    ["notDeleted", Filter.notDeleted(), ["a", "ab", "b"]],
    ["and/or/not", Filter.or(Filter.and(Filter.hasLabel("k"), Filter.not(Filter.labelEquals("k", "v"))), Filter.nameEquals("b")), ["ab", "b"]],
  ])("%s selects what the simulator's CEL evaluator selects", (_what, filter, want) => {
    const objects = [obj("a", { k: "v" }), obj("ab", { k: "w" }), obj("b", {}, "shared")];
    const match = compileFilter(filter.text);
    expect(objects.filter(match).map((o) => o.metadata.name)).toEqual(want);
    // An independent evaluator of the CEL subset the real service translates agrees.
    const selfType = loadFulfillmentRoot().lookupType("osac.private.v1.BareMetalInstance");
    const ast = parseFilter(filter.text);
    checkFilter(ast, selfType);
    expect(objects.filter((self) => evaluateFilter(ast, { self, selfType, nowMs: 0 })).map((o) => o.metadata.name)).toEqual(want);
  });

  it("reads every escape celString writes, so a value matches itself and nothing wider", () => {
    const value = "it's \"quoted\"\\ \n\r\t\x01 é";
    const match = compileFilter(Filter.labelEquals("k", value).text);
    expect(match(obj("a", { k: value }))).toBe(true);
    expect(match(obj("a", { k: "it's" }))).toBe(false);
  });

  it.each([
    "this.metadata.name.matches('.*')",
    "this.metadata.creator == 'system'",
    "this.metadata.name == \"double\"",
    "this.metadata.name != 'a'",
    "this.spec.catalog_item.id == 'x'",
    "this.metadata.name == 'a' extra",
  ])("refuses %s loudly, as no service answer", async (text) => {
    const fake = await fakeFulfillment(seed());
    const err = await fake.catalogItems.list({ filter: CelFilter.of(text) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedFilterError);
    expect((err as Error).message).toMatch(/only the filters clients\/fulfillment\/filter.ts builds/);
  });
});

describe("the fake's switches", () => {
  it("answers a tenant caller PERMISSION_DENIED on the private API by default, as the OPA policy does", async () => {
    const fake = await fakeFulfillment(seed(), { tenants: ["acme"] });
    const acme = new FakeFulfillment(fake.service, { admin: false, tenants: ["acme"] });
    await expect(acme.catalogItems.list()).rejects.toThrow(PermissionDeniedError);
  });

  it("with visibility, a tenant caller sees its tenant and shared, never system", async () => {
    const fake = await fakeFulfillment({ BareMetalInstanceCatalogItems: [
      ...testSeed().catalogItems!, { metadata: { name: "acme-item", tenant: "acme" } }, { metadata: { name: "globex-item", tenant: "globex" } }] },
    { tenants: ["acme", "globex"], tenantPrivateAccess: "visibility" });
    const acme = new FakeFulfillment(fake.service, { admin: false, tenants: ["acme"] });
    const seen = (await acme.catalogItems.listAll()).map((i) => `${i.metadata?.tenant}/${i.metadata?.name}`).sort();
    expect(seen).toEqual(["acme/acme-item", "shared/draft-item", "shared/hosted-item", "shared/locked-item"]);
    const system = (await fake.catalogItems.listAll(Filter.tenantEquals("system")))[0];
    await expect(acme.catalogItems.get(system.id)).rejects.toThrow(NotFoundError);
    await expect(acme.bareMetalInstances.create(workerBmi("acme-try"))).rejects.toThrow(PermissionDeniedError);
  });

  it("without a controller a BMI stays UNSPECIFIED with no finalizer, and Delete archives it at once (its name is free)", async () => {
    const fake = await fakeFulfillment(seed(), { controller: false });
    const bmi = await fake.bareMetalInstances.create(workerBmi("w"));
    expect(bmi.status?.state).toBe("BARE_METAL_INSTANCE_STATE_UNSPECIFIED");
    expect(bmi.metadata?.finalizers).toEqual([]);
    await fake.bareMetalInstances.delete(bmi.id);
    await expect(fake.bareMetalInstances.get(bmi.id)).rejects.toThrow(NotFoundError);
    await expect(fake.bareMetalInstances.create(workerBmi("w"))).resolves.toBeDefined();
  });

  it("with the controller a deleted BMI is DELETING until completeDeletes()", async () => {
    const fake = await fakeFulfillment(seed());
    const bmi = await fake.bareMetalInstances.create(workerBmi("w"));
    expect(bmi.metadata?.finalizers).toEqual([CONTROLLER_FINALIZER]);
    await fake.bareMetalInstances.delete(bmi.id);
    expect((await fake.bareMetalInstances.get(bmi.id)).status?.state).toBe("BARE_METAL_INSTANCE_STATE_DELETING");
    expect(fake.service.completeDeletes()).toBe(1);
    await expect(fake.bareMetalInstances.get(bmi.id)).rejects.toThrow(NotFoundError);
  });

  it("clears a masked path the request leaves out, as an update with an empty value", async () => {
    const fake = await fakeFulfillment(seed());
    const bmi = await fake.bareMetalInstances.create(workerBmi("w"));
    const out = await fake.bareMetalInstances.update({ id: bmi.id }, { updateMask: ["metadata.labels"] });
    expect(out.metadata?.labels).toEqual({});
    expect(out.metadata?.annotations).toEqual(bmi.metadata?.annotations);
  });

  it("answers with the wire's defaults (empty maps and lists, null messages), like a decoded response", async () => {
    const fake = await fakeFulfillment(seed());
    const bmi = await fake.bareMetalInstances.create({ metadata: { name: "bare" }, spec: { catalog_item: { name: SYSTEM_CATALOG_ITEM } } });
    expect(bmi.metadata).toMatchObject({ labels: {}, annotations: {}, deletion_timestamp: null });
    expect(bmi.spec?.network_attachments).toEqual([]);
  });
});

describe("product code against the fake", () => {
  const newService = async () => (await fakeFulfillment(seed(), { tenants: ["acme"], tenantPrivateAccess: "visibility" })).service;

  it("observe() lists the order's BMIs, confirms a recorded one gone by a Get, and counts its calls", async () => {
    const service = await newService();
    const admin = new FakeFulfillment(service);
    const bmis = [await admin.bareMetalInstances.create(workerBmi("w-0")), await admin.bareMetalInstances.create(workerBmi("w-1"))];
    await admin.bareMetalInstances.create({ ...workerBmi("other"), metadata: { name: "other", labels: { "osac.openshift.io/cluster-order": "order-2" } } });
    const order = orderRecording([...bmis, { id: "gone-id", name: "w-2" }]);
    const before = service.calls.get("/osac.private.v1.BareMetalInstances/Get") ?? 0;
    const { snapshot, fulfillmentError } = await observe({ kube: hubWith(order), fulfillment: admin, config: defaultPlannerConfig() },
      { namespace: "ns", name: "demo" });
    expect(fulfillmentError).toBeUndefined();
    expect(snapshot.bmis?.map((b) => b.name).sort()).toEqual(["w-0", "w-1"]);
    expect(snapshot.goneBmiIds).toEqual(["gone-id"]);
    expect(service.calls.get("/osac.private.v1.BareMetalInstances/Get")! - before).toBe(1);
    expect(order.metadata.uid).toBe(ORDER_UID);
  });

  it("observe() takes no NOT_FOUND as deletion for a caller that cannot see tenant system", async () => {
    const service = await newService();
    const bmi = await new FakeFulfillment(service).bareMetalInstances.create(workerBmi("w-0"));
    const acme = new FakeFulfillment(service, { admin: false, tenants: ["acme"] });
    const { snapshot, fulfillmentErrorKind } = await observe({ kube: hubWith(orderRecording([bmi])), fulfillment: acme, config: defaultPlannerConfig() },
      { namespace: "ns", name: "demo" });
    expect(fulfillmentErrorKind).toBe("PermissionDenied");
    expect(snapshot.bmis).toBeUndefined();
    expect(snapshot.goneBmiIds).toBeUndefined();
  });
});
