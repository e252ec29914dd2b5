// Wire compatibility at the byte level: messages encoded with the project's protos are decoded tag by
// tag and every (field number, wire type) is compared with the reference contract
// (fulfillment-api.md, mono-repo HEAD; osac.private.v1 numbering).
import * as protobuf from "protobufjs";
import { loadFulfillmentRoot } from "../../protos/fulfillment";

const VARINT = 0;
const LEN = 2;
const root = loadFulfillmentRoot();

interface Tag {
  field: number;
  wire: number;
  /** varint value, or the raw bytes of a length-delimited field. */
  value: string | Uint8Array;
}

/** Splits an encoded message into its top-level fields without using any schema. */
function tags(bytes: Uint8Array): Tag[] {
  const r = protobuf.Reader.create(bytes);
  const out: Tag[] = [];
  while (r.pos < r.len) {
    const tag = r.uint32();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (wire === VARINT) out.push({ field, wire, value: r.uint64().toString() });
    else if (wire === LEN) out.push({ field, wire, value: r.bytes() });
    else throw new Error(`unexpected wire type ${wire} for field ${field}`);
  }
  return out;
}

function encode(type: string, value: Record<string, unknown>): Uint8Array {
  const t = root.lookupType(type);
  // fromObject drops unknown keys silently; a typo must fail the test instead.
  for (const k of Object.keys(value)) if (!t.fields[k]) throw new Error(`${type} has no field ${k}`);
  return t.encode(t.fromObject(value)).finish();
}

/** field number → wire type, in encoding order. */
const layout = (bytes: Uint8Array) => tags(bytes).map((t) => [t.field, t.wire]);
const field = (bytes: Uint8Array, n: number) => tags(bytes).find((t) => t.field === n)!.value;
const ts = { seconds: 1700000000, nanos: 5 };

describe("osac.private.v1 on the wire", () => {
  it("Metadata uses the private numbering (finalizers 3, creator 4, tenant 5, name 6)", () => {
    const bytes = encode("osac.private.v1.Metadata", {
      creation_timestamp: ts, deletion_timestamp: ts, finalizers: ["f"], creator: "c", tenant: "system", name: "w-0",
      labels: { a: "b" }, annotations: { c: "d" }, version: 7, project: "p", display_name: "dn", description: "d",
    });
    expect(layout(bytes)).toEqual([[1, LEN], [2, LEN], [3, LEN], [4, LEN], [5, LEN], [6, LEN], [7, LEN], [8, LEN],
      [9, VARINT], [10, LEN], [11, LEN], [12, LEN]]);
    expect(Buffer.from(field(bytes, 5) as Uint8Array).toString()).toBe("system");
    expect(Buffer.from(field(bytes, 6) as Uint8Array).toString()).toBe("w-0");
    expect(field(bytes, 9)).toBe("7");
    // map entry = { key = 1, value = 2 }
    expect(tags(field(bytes, 7) as Uint8Array).map((t) => [t.field, Buffer.from(t.value as Uint8Array).toString()]))
      .toEqual([[1, "a"], [2, "b"]]);
  });

  it("BareMetalInstance is id 1, metadata 2, spec 3, status 4", () => {
    const bytes = encode("osac.private.v1.BareMetalInstance", { id: "i", metadata: { name: "n" }, spec: { user_data: "u" }, status: { hub: "h" } });
    expect(layout(bytes)).toEqual([[1, LEN], [2, LEN], [3, LEN], [4, LEN]]);
  });

  it("BareMetalInstanceSpec fields 1-9 and the instance_type proposal at 20", () => {
    const bytes = encode("osac.private.v1.BareMetalInstanceSpec", {
      catalog_item: { id: "ci", name: "item", project: "p", shared: true }, ssh_public_key: "k", user_data: "u",
      run_strategy: "BARE_METAL_INSTANCE_RUN_STRATEGY_HALTED", restart_trigger: "5",
      template_parameters: { p: { type_url: "type.googleapis.com/google.protobuf.StringValue", value: Buffer.from([10, 1, 120]) } },
      image: { source_type: "registry", source_ref: "quay.io/x" },
      network_attachments: [{ subnet: { id: "s", name: "sn" }, security_groups: [{ id: "g" }], interface: "ens1f0", primary: true }],
      auto_external_ip_attachment: true, instance_type: "compute",
    });
    expect(layout(bytes)).toEqual([[1, LEN], [2, LEN], [3, LEN], [4, VARINT], [5, VARINT], [6, LEN], [7, LEN], [8, LEN],
      [9, VARINT], [20, LEN]]);
    expect(field(bytes, 4)).toBe("2"); // HALTED
    expect(layout(field(bytes, 1) as Uint8Array)).toEqual([[1, LEN], [2, LEN], [3, LEN], [4, VARINT]]);
    expect(layout(field(bytes, 8) as Uint8Array)).toEqual([[1, LEN], [2, LEN], [3, LEN], [4, VARINT]]);
    // field 20, wire type 2 → tag varint (20 << 3 | 2) = 162 = 0xa2 0x01
    expect(Buffer.from(bytes).includes(Buffer.from([0xa2, 0x01, 7, ...Buffer.from("compute")]))).toBe(true);
  });

  it("proto3 optional user_data distinguishes unset from empty when decoded", () => {
    const t = root.lookupType("osac.private.v1.BareMetalInstanceSpec");
    const opts = { defaults: true, oneofs: true };
    expect(Array.from(encode("osac.private.v1.BareMetalInstanceSpec", { user_data: "" }))).toEqual([0x1a, 0x00]);
    expect(t.toObject(t.decode(Uint8Array.from([0x1a, 0x00])), opts)).toMatchObject({ user_data: "", _user_data: "user_data" });
    expect(t.toObject(t.decode(new Uint8Array()), opts)).not.toHaveProperty("user_data");
    expect(t.toObject(t.decode(new Uint8Array()), opts)).toHaveProperty("instance_type", "");
  });

  it("private BareMetalInstanceStatus has hub at 4 and hardware at 6; NIC mac is field 1", () => {
    const bytes = encode("osac.private.v1.BareMetalInstanceStatus", {
      state: "BARE_METAL_INSTANCE_STATE_DELETING",
      conditions: [{ type: "BARE_METAL_INSTANCE_CONDITION_TYPE_READY", status: "CONDITION_STATUS_FALSE", last_transition_time: ts, reason: "r", message: "m" }],
      restart_trigger: "3", hub: "hub-1",
      network_attachment_statuses: [{ interface: "ens1f0", subnet_ref: "s", ip_address: "10.0.0.1", primary: true }],
      hardware: { nics: [{ mac: "aa:bb:cc:dd:ee:ff" }] },
    });
    expect(layout(bytes)).toEqual([[1, VARINT], [2, LEN], [3, VARINT], [4, LEN], [5, LEN], [6, LEN]]);
    expect(field(bytes, 1)).toBe("4"); // DELETING
    const cond = field(bytes, 2) as Uint8Array;
    expect(layout(cond)).toEqual([[1, VARINT], [2, VARINT], [3, LEN], [4, LEN], [5, LEN]]);
    expect([field(cond, 1), field(cond, 2)]).toEqual(["3", "2"]); // READY, FALSE
    const nic = field(field(bytes, 6) as Uint8Array, 1) as Uint8Array;
    expect(Buffer.from(nic).toString("hex")).toBe(`0a11${Buffer.from("aa:bb:cc:dd:ee:ff").toString("hex")}`);
  });

  it.each([
    ["BARE_METAL_INSTANCE_STATE_PROVISIONING", "1"], ["BARE_METAL_INSTANCE_STATE_RUNNING", "2"],
    ["BARE_METAL_INSTANCE_STATE_FAILED", "3"], ["BARE_METAL_INSTANCE_STATE_STOPPED", "7"],
  ])("state %s is %s", (state, n) => {
    expect(field(encode("osac.private.v1.BareMetalInstanceStatus", { state }), 1)).toBe(n);
  });

  it("List/Update requests and List responses follow the standard CRUD shape", () => {
    expect(layout(encode("osac.private.v1.BareMetalInstancesListRequest", { offset: 0, limit: 1000, filter: "true", order: "x" })))
      .toEqual([[1, VARINT], [2, VARINT], [3, LEN], [4, LEN]]); // optional: offset 0 is still sent
    expect(layout(encode("osac.private.v1.BareMetalInstancesListResponse", { size: 1, total: 2, items: [{ id: "i" }] })))
      .toEqual([[1, VARINT], [2, VARINT], [3, LEN]]);
    expect(layout(encode("osac.private.v1.BareMetalInstancesUpdateRequest", { object: { id: "i" }, update_mask: { paths: ["spec.run_strategy"] }, lock: true })))
      .toEqual([[1, LEN], [2, LEN], [3, VARINT]]);
    expect(layout(encode("osac.private.v1.BareMetalInstancesSignalRequest", { id: "i" }))).toEqual([[1, LEN]]);
  });

  it("BareMetalInstanceCatalogItem carries the private tenant at 7 and field_definitions at 8", () => {
    expect(layout(encode("osac.private.v1.BareMetalInstanceCatalogItem", {
      id: "i", metadata: { name: "n" }, title: "t", description: "d", template: { id: "tpl" }, published: true, tenant: "system",
      field_definitions: [{ path: "user_data", display_name: "u", editable: true, default: { stringValue: "x" }, validation_schema: "{}" }],
    }))).toEqual([[1, LEN], [2, LEN], [3, LEN], [4, LEN], [5, LEN], [6, VARINT], [7, LEN], [8, LEN]]);
  });

  it("BareMetalInstanceTypeSpec: hardware 1, host_label_selector 2, network ports name/role/type/speed", () => {
    const bytes = encode("osac.private.v1.BareMetalInstanceTypeSpec", {
      hardware: { cpu: { cores: 8, architecture: "x86_64", model: "m", threads_per_core: 2 }, memory: { total_gb: "64", type: "ddr5" },
        disks: [{ type: "ssd", capacity_gb: "1", interface: "nvme" }], accelerators: [{ type: "gpu", model: "m", vendor: "v", memory_gb: 1 }],
        network_ports: [{ name: "ens1f0", role: "fabric", type: "ethernet", speed: "25G" }], capabilities: { a: "b" } },
      host_label_selector: { match_labels: { class: "compute" } }, description: "d",
    });
    expect(layout(bytes)).toEqual([[1, LEN], [2, LEN], [3, LEN]]);
    const hw = field(bytes, 1) as Uint8Array;
    expect(layout(hw)).toEqual([[1, LEN], [2, LEN], [3, LEN], [4, LEN], [5, LEN], [6, LEN]]);
    expect(layout(field(hw, 2) as Uint8Array)).toEqual([[1, VARINT], [2, LEN]]);
    expect(layout(field(hw, 5) as Uint8Array)).toEqual([[1, LEN], [2, LEN], [3, LEN], [4, LEN]]);
  });

  it("DiskImageSpec: enums as varints, architecture packed, and DiskImageReference 1-4", () => {
    const bytes = encode("osac.private.v1.DiskImageSpec", {
      source_type: "SOURCE_TYPE_REGISTRY", source_ref: "quay.io/rhcos", guest_os_family: "GUEST_OS_FAMILY_LINUX",
      architecture: ["ARCHITECTURE_AMD64", "ARCHITECTURE_S390X"], lifecycle: "DISK_IMAGE_LIFECYCLE_DEPRECATED",
      deprecation: { deprecation_timestamp: ts },
    });
    expect(layout(bytes)).toEqual([[1, VARINT], [2, LEN], [3, VARINT], [4, LEN], [5, VARINT], [6, LEN]]);
    expect(Array.from(field(bytes, 4) as Uint8Array)).toEqual([1, 3]);
    expect(field(bytes, 5)).toBe("2");
    expect(layout(encode("osac.private.v1.DiskImageReference", { id: "i", name: "n", project: "p", shared: true })))
      .toEqual([[1, LEN], [2, LEN], [3, LEN], [4, VARINT]]);
  });

  it("ClusterVersionSpec fields 1-6 and the disk_image proposal at 7; ClusterSpec.version at 6", () => {
    const bytes = encode("osac.private.v1.ClusterVersionSpec", {
      image: "quay.io/ocp", enabled: true, is_default: false, state: "CLUSTER_VERSION_STATE_ACTIVE", deprecation: {},
      version: "4.17.3", disk_image: { id: "di" },
    });
    expect(layout(bytes)).toEqual([[1, LEN], [2, VARINT], [3, VARINT], [4, VARINT], [5, LEN], [6, LEN], [7, LEN]]);
    expect(layout(encode("osac.private.v1.ClusterSpec", { version: { id: "cv" } }))).toEqual([[6, LEN]]);
    expect(layout(encode("osac.private.v1.ClusterStatus", { hub: "h", api_endpoint: "a", state_transition_time: ts })))
      .toEqual([[6, LEN], [7, LEN], [9, LEN]]);
  });

  it("method paths are /osac.private.v1.<Service>/<Method>", () => {
    const svc = root.lookupService("osac.private.v1.BareMetalInstances");
    expect(Object.keys(svc.methods).sort()).toEqual(["Create", "Delete", "Get", "List", "Signal", "Update"]);
    expect(svc.fullName).toBe(".osac.private.v1.BareMetalInstances");
  });
});
