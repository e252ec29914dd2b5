// The simulator's CEL subset: what it evaluates, and that anything else is rejected (→ INVALID_ARGUMENT).
import { checkFilter, evaluateFilter, FilterError, parseFilter } from "../../lab/fulfillment/cel";
import { loadFulfillmentRoot } from "../../protos/fulfillment";

const selfType = loadFulfillmentRoot().lookupType("osac.private.v1.BareMetalInstance");
const obj = {
  id: "id-1",
  metadata: {
    name: "w-1", tenant: "system", labels: { env: "prod", tier: "" }, annotations: {}, finalizers: ["f"],
    deletion_timestamp: null, creation_timestamp: { seconds: "100", nanos: 0 }, version: 3,
  },
  spec: { catalog_item: { id: "ci", name: "item" }, user_data: "x", network_attachments: [], template_parameters: {} },
  status: { state: "BARE_METAL_INSTANCE_STATE_RUNNING", conditions: [] },
};
const run = (f: string, nowMs = 200_000) => {
  const ast = parseFilter(f);
  checkFilter(ast, selfType);
  return evaluateFilter(ast, { self: obj, selfType, nowMs });
};

describe("simulator CEL subset", () => {
  it.each([
    ["this.metadata.name == 'w-1'", true],
    ["this.metadata.name != 'w-1'", false],
    ["this.metadata.labels['env'] == 'prod'", true],
    ["this.metadata.labels['missing'] == 'prod'", false],
    ["'env' in this.metadata.labels", true],
    ["'nope' in this.metadata.labels", false],
    ["this.metadata.tenant in ['system', 'shared']", true],
    ["'f' in this.metadata.finalizers", true],
    ["this.metadata.deletion_timestamp == null", true],
    ["this.metadata.creation_timestamp < now", true],
    ["this.metadata.creation_timestamp > now", false],
    ["this.metadata.version + 1 == 4 && this.metadata.version * 2 >= 6", true],
    ["!(this.metadata.name.startsWith('w-')) || this.metadata.name.endsWith('1')", true],
    ["this.metadata.name.contains('-')", true],
    ["has(this.spec.user_data) && !has(this.spec.ssh_public_key)", true],
    ["has(this.metadata.labels)", true],
    ["this.spec.catalog_item.id == 'ci'", true],
    ["this.status.state == 'BARE_METAL_INSTANCE_STATE_RUNNING'", true],
    ["this.id == \"id-1\"", true],
  ])("%s → %s", (f, expected) => {
    expect(run(f)).toBe(expected);
  });

  it.each([
    ["this.metadata.nmae == 'x'", /no field 'nmae'/],
    ["false && this.bogus == 1", /no field 'bogus'/],
    ["that.metadata.name == 'x'", /undeclared reference 'that'/],
    ["this.metadata.name.matches('x.*')", /unsupported function 'matches'/],
    ["size(this.metadata.labels) > 0", /unsupported function 'size'/],
    ["this.metadata.labels.exists(k, k == 'a')", /unsupported function 'exists'/],
    ["this.metadata.name == 'x", /unterminated string/],
    ["this.metadata.name == 'x' ||", /unexpected end/],
    ["this.metadata.name = 'x'", /unexpected character/],
    ["this.metadata.name", /boolean/],
    ["'''x''' == 'x'", /triple-quoted/],
    ["this.metadata.name == 'a' this", /unexpected 'this'/],
  ])("rejects %s", (f, message) => {
    expect(() => run(f)).toThrow(FilterError);
    expect(() => run(f)).toThrow(message);
  });
});

describe("simulator CEL subset over an event (Events.Watch)", () => {
  const eventType = loadFulfillmentRoot().lookupType("osac.private.v1.Event");
  const event = { id: "e-1", type: "EVENT_TYPE_OBJECT_UPDATED", payload: "bare_metal_instance", bare_metal_instance: obj };
  const watch = (f: string) => {
    const ast = parseFilter(f);
    checkFilter(ast, eventType, "event");
    return evaluateFilter(ast, { self: event, selfType: eventType, nowMs: 0, variable: "event" });
  };

  it.each([
    ["has(event.bare_metal_instance) && event.bare_metal_instance.metadata.tenant == 'system'", true],
    ["has(event.cluster)", false],
    ["event.type == EVENT_TYPE_OBJECT_UPDATED", true],
    ["event.type == EVENT_TYPE_OBJECT_CREATED || event.type == EVENT_TYPE_OBJECT_DELETED", false],
  ])("%s → %s", (f, expected) => {
    expect(watch(f)).toBe(expected);
  });

  it.each([
    ["this.id == 'e-1'", /undeclared reference 'this'/],
    ["event.type == EVENT_TYPE_NO_SUCH_VALUE", /undeclared reference 'EVENT_TYPE_NO_SUCH_VALUE'/],
    ["event.bare_metal_instance.nope == 1", /no field 'nope'/],
  ])("rejects %s", (f, message) => {
    expect(() => watch(f)).toThrow(message);
  });
});
