// clients/fulfillment/leanList.ts: a BMI listing decodes exactly as before, less spec.user_data, whatever the
// BMIs hold (random BMIs; a spec sent in several parts, as protobuf allows), and a listing with nothing to
// drop is passed on as it came. Size: BMW_LEAN_LIST_RUNS lists (default 200), seeded by BMW_PROPERTY_SEED.
import * as fc from "fast-check";
import { listWithoutUserData, withoutField } from "../../clients/fulfillment/leanList";
import { loadFulfillmentProtos, loadFulfillmentRoot } from "../../protos/fulfillment";

const RUNS = Number(process.env.BMW_LEAN_LIST_RUNS ?? 200);
const SEED = Number(process.env.BMW_PROPERTY_SEED ?? (Date.now() % 2_147_483_647));
const protos = loadFulfillmentProtos();
const list = protos.grpc.osac.private.v1.BareMetalInstances.service.List;
const lean = listWithoutUserData(protos.packageDefinition, list);
const root = loadFulfillmentRoot();
const Response = root.lookupType("osac.private.v1.BareMetalInstancesListResponse");

const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/);
const spec = fc.record({
  catalog_item: fc.option(fc.record({ id: word, name: word }), { nil: undefined }),
  ssh_public_key: fc.option(fc.string(), { nil: undefined }),
  user_data: fc.option(fc.oneof(fc.string(), fc.string({ unit: "grapheme", maxLength: 3000 }), fc.constant("")), { nil: undefined }),
  instance_type: fc.option(word, { nil: undefined }),
  restart_trigger: fc.option(fc.bigInt({ min: 0n, max: 2n ** 40n }).map(String), { nil: undefined }),
  network_attachments: fc.array(fc.record({ subnet: fc.record({ id: word }), security_groups: fc.array(fc.record({ id: word }), { maxLength: 3 }),
    interface: word }), { maxLength: 2 }),
}, { requiredKeys: ["network_attachments"] });
const bmi = fc.record({
  id: word,
  metadata: fc.record({ name: word, tenant: fc.constant("system"), labels: fc.dictionary(word, word, { maxKeys: 3 }) }),
  spec: fc.option(spec, { nil: undefined }),
  status: fc.option(fc.record({ state: fc.constantFrom("BARE_METAL_INSTANCE_STATE_RUNNING", "BARE_METAL_INSTANCE_STATE_FAILED"),
    hardware: fc.record({ nics: fc.array(fc.record({ mac: fc.constantFrom("52:54:00:aa:bb:cc", "52:54:00:00:00:01") }), { maxLength: 2 }) }) }),
  { nil: undefined }),
});
const response = fc.array(bmi, { maxLength: 6 }).map((items) => ({ size: items.length, total: items.length + 3, items }));

type Listed = { items: { spec?: Record<string, unknown> | null }[] };
const withoutUserData = (r: Listed): Listed => ({ ...r, items: r.items.map((i) => {
  if (!i.spec) return i;
  const { user_data: _u, _user_data: _o, ...rest } = i.spec;
  return { ...i, spec: rest };
}) });

describe("BMI listings without user_data", () => {
  it("decode as before, less spec.user_data, for random BMIs", () => {
    fc.assert(fc.property(response, (r) => {
      const bytes = list.responseSerialize(r as never);
      const full = list.responseDeserialize(bytes) as Listed;
      const leaned = lean.responseDeserialize(bytes) as Listed;
      expect(leaned).toEqual(withoutUserData(full));
      for (const i of leaned.items) expect(i.spec?.user_data).toBeUndefined();
    }), { numRuns: RUNS, seed: SEED });
  });

  it("drops user_data from every occurrence of a spec sent in parts, and keeps the rest", () => {
    const Bmi = root.lookupType("osac.private.v1.BareMetalInstance");
    const Spec = root.lookupType("osac.private.v1.BareMetalInstanceSpec");
    const part = (spec: Record<string, unknown>) => Buffer.concat([Buffer.from([0x1a]), lengthPrefixed(Spec.encode(Spec.fromObject(spec)).finish())]);
    const item = Buffer.concat([Buffer.from(Bmi.encode(Bmi.fromObject({ id: "b1" })).finish()),
      part({ user_data: "secret-a", instance_type: "compute" }), part({ user_data: "secret-b", ssh_public_key: "k" })]);
    const bytes = Buffer.concat([Buffer.from(Response.encode(Response.fromObject({ size: 1, total: 1 })).finish()), Buffer.from([0x1a]), lengthPrefixed(item)]);
    const full = list.responseDeserialize(bytes) as Listed;
    expect(full.items[0].spec?.user_data).toBe("secret-b");
    const leaned = lean.responseDeserialize(bytes) as Listed;
    expect(leaned).toEqual(withoutUserData(full));
    expect(withoutField(bytes, [3, 3, 3]).includes(Buffer.from("secret"))).toBe(false);
  });

  it("returns the same buffer when there is nothing to drop", () => {
    const bytes = list.responseSerialize({ size: 1, total: 1, items: [{ id: "b", spec: { instance_type: "compute" } }] } as never);
    expect(withoutField(bytes, [3, 3, 3])).toBe(bytes);
  });
});

function lengthPrefixed(b: Uint8Array): Buffer {
  const len: number[] = [];
  for (let n = b.length; ; n >>>= 7) {
    if (n < 0x80) {
      len.push(n);
      break;
    }
    len.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from(len), b]);
}
