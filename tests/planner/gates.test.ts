// Create gates and input validation (OSAC-2135 §2 steps 2–6, §11.2–4): creates are blocked with a
// condition that says exactly what is wrong; existing workers are never deleted because of bad input.
import { plan } from "../../planner";
import { IGNITION_OF_NEW_INFRAENV, ORDER_LABEL } from "../../planner/names";
import {
  bmiFor, bmRequest, boundAgent, conditionOf, entry, iso, MIN, ORDER, planOf, reasons, SEC, snap, SnapOptions, statusOf,
} from "./builders";

/** A world with one Ready and one WaitingForAgent worker and a request for 4, so creates are wanted. */
function existing(o: SnapOptions = {}): SnapOptions {
  return {
    nodeRequests: [bmRequest("compute", 4)],
    workers: [entry("a", { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) }), entry("b", { phase: "WaitingForAgent" })],
    bmis: [bmiFor("a"), bmiFor("b")],
    agents: [boundAgent("a", "a", "added-to-existing-cluster")],
    ...o,
  };
}

function expectNoCreatesAndNothingDeleted(o: SnapOptions): ReturnType<typeof planOf> {
  const p = planOf(existing(o));
  expect(p.fence).toEqual([]);
  expect(p.workers.map((w) => w.slot)).toEqual(["a", "b"]);
  expect(p.status.workers.map((w) => w.name)).toEqual(["a", "b"]);
  return p;
}

describe("a new order: its InfraEnv and its BMIs in one update (decisions F18)", () => {
  const newOrder: SnapOptions = { nodeRequests: [bmRequest("compute", 2)], infraEnv: undefined, recordedInfraEnvUid: undefined, ignition: undefined };

  test("the BMIs are planned with the placeholder of the ignition the update fetches, and fenced", () => {
    const p = planOf(newOrder);
    expect(p.infraEnv?.name).toBe(`${ORDER}-infraenv`);
    expect(p.workers).toHaveLength(2);
    expect(p.workers.every((w) => w.requiresFence && !w.bmi.adoptId && w.bmi.userData === IGNITION_OF_NEW_INFRAENV)).toBe(true);
    expect(p.fence.map((w) => w.name).sort()).toEqual(p.workers.map((w) => w.slot).sort());
    const ready = conditionOf(p, "InfraEnvReady");
    expect(ready).toMatchObject({ status: "False", reason: "InfraEnvNotFound" });
    expect(ready?.message).toContain("creates it and, once it publishes its discovery ignition, the workers");
    expect(reasons(p)).toContain("InfraEnvCreated");
    expect(reasons(p)).not.toContain("DiscoveryIgnitionSizeWarning");
    expect(p.requeueAt).toBe(iso(30 * SEC));
  });

  test("not for an order whose InfraEnv was recorded (deleted since): no creates until the new one is observed", () => {
    const p = planOf({ ...newOrder, recordedInfraEnvUid: "ie-1" });
    expect(p.workers).toEqual([]);
    expect(p.fence).toEqual([]);
  });

  test("not for an order that has workers: they keep the ignition rules of their InfraEnv", () => {
    const p = expectNoCreatesAndNothingDeleted({ infraEnv: undefined, recordedInfraEnvUid: undefined, ignition: undefined });
    expect(p.workers.every((w) => w.bmi.userData !== IGNITION_OF_NEW_INFRAENV)).toBe(true);
  });

  test("the other gates still hold: without the ClusterDeployment nothing is planned", () => {
    const p = planOf({ ...newOrder, clusterDeployment: undefined });
    expect(p.workers).toEqual([]);
    expect(conditionOf(p, "ClusterNotReady")).toMatchObject({ status: "True" });
  });
});

describe("ignition gate (§11.2, §11.3)", () => {
  test("no InfraEnv yet: it is declared, InfraEnvCreated, InfraEnvReady=False, no creates", () => {
    const p = expectNoCreatesAndNothingDeleted({ infraEnv: undefined, ignition: undefined });
    expect(conditionOf(p, "InfraEnvReady")).toMatchObject({ status: "False", reason: "InfraEnvNotFound" });
    expect(p.events[0]).toMatchObject({ reason: "InfraEnvCreated", type: "Normal", key: `InfraEnvCreated/${ORDER}-infraenv/ie-1` });
    expect(p.infraEnv?.name).toBe(`${ORDER}-infraenv`);
  });

  test("no discovery ignition URL: InfraEnvReady=False IgnitionNotReady, poll every 30 s", () => {
    const p = expectNoCreatesAndNothingDeleted({ infraEnv: { name: `${ORDER}-infraenv`, uid: "ie-1" }, ignition: undefined });
    expect(conditionOf(p, "InfraEnvReady")).toMatchObject({ status: "False", reason: "IgnitionNotReady" });
    expect(conditionOf(p, "InfraEnvReady")?.message).toContain("polling every 30s");
    expect(p.requeueAt).toBe(iso(30 * SEC));
    expect(reasons(p)).not.toContain("InfraEnvCreated");
  });

  test("ignition fetch failed: IgnitionFetchFailed with the fetch message", () => {
    const p = expectNoCreatesAndNothingDeleted({ ignition: { ok: false, reason: "HttpError", message: "HTTP 503 from assisted-service" } });
    expect(conditionOf(p, "InfraEnvReady")).toMatchObject({ status: "False", reason: "IgnitionFetchFailed" });
    expect(conditionOf(p, "InfraEnvReady")?.message).toContain("HttpError");
    expect(conditionOf(p, "InfraEnvReady")?.message).toContain("HTTP 503 from assisted-service");
    expect(p.requeueAt).toBe(iso(30 * SEC));
  });

  test("ignition larger than 64 KiB: no creates, the message gives the size and the limit", () => {
    const content = "x".repeat(65_537);
    const p = expectNoCreatesAndNothingDeleted({ ignition: { ok: true, content, bytes: 65_537 } });
    expect(conditionOf(p, "InfraEnvReady")).toMatchObject({ status: "False", reason: "IgnitionTooLarge" });
    expect(conditionOf(p, "InfraEnvReady")?.message).toContain("65537 bytes");
    expect(conditionOf(p, "InfraEnvReady")?.message).toContain("65536");
  });

  test("exactly 64 KiB is allowed", () => {
    const p = planOf(existing({ ignition: { ok: true, content: "x".repeat(65_536), bytes: 65_536 } }));
    expect(p.fence).toHaveLength(2);
  });

  test("ignition above 48 KiB: DiscoveryIgnitionSizeWarning when a create is planned, and only then", () => {
    const big = { ok: true as const, content: "y".repeat(50_000), bytes: 50_000 };
    const creating = planOf(existing({ ignition: big }));
    expect(creating.fence).toHaveLength(2);
    expect(creating.events.filter((e) => e.reason === "DiscoveryIgnitionSizeWarning")).toEqual([
      expect.objectContaining({ type: "Warning", key: "DiscoveryIgnitionSizeWarning/ie-1/50000" }),
    ]);
    const steady = planOf(existing({ ignition: big, nodeRequests: [bmRequest("compute", 2)] }));
    expect(steady.fence).toEqual([]);
    expect(reasons(steady)).not.toContain("DiscoveryIgnitionSizeWarning");
    const small = planOf(existing());
    expect(reasons(small)).not.toContain("DiscoveryIgnitionSizeWarning");
  });

  test("URL present and content fetched: InfraEnvReady=True", () => {
    const p = planOf(existing());
    expect(conditionOf(p, "InfraEnvReady")).toMatchObject({ status: "True", reason: "IgnitionAvailable" });
  });
});

describe("DiskImage gate (§11.4)", () => {
  test("unresolved DiskImage: RHCOSImageNotFound=True with the resolver's message, zero creates", () => {
    const p = expectNoCreatesAndNothingDeleted({ diskImage: { ok: false, reason: "NotLinked", message: "ClusterVersion 4.19 has no disk_image" } });
    expect(conditionOf(p, "RHCOSImageNotFound")).toMatchObject({ status: "True", reason: "NotLinked" });
    expect(conditionOf(p, "RHCOSImageNotFound")?.message).toContain("ClusterVersion 4.19 has no disk_image");
  });

  test("the condition clears (False) once the DiskImage resolves, with a new transition time", () => {
    const blocked = planOf(existing({ diskImage: { ok: false, reason: "Obsolete", message: "DiskImage rhcos-4.18 is OBSOLETE" } }));
    const later = planOf(existing({ now: new Date(Date.parse(iso(10 * MIN))), orderPatch: (o) => { o.status!.conditions = blocked.status.conditions; } }));
    expect(conditionOf(later, "RHCOSImageNotFound")).toMatchObject({ status: "False", reason: "DiskImageResolved", lastTransitionTime: iso(10 * MIN) });
    expect(later.fence).toHaveLength(2);
    expect(later.workers.find((w) => w.requiresFence)?.bmi.diskImage).toBe("di-419");
  });
});

describe("node request validation", () => {
  test.each([
    [-1, "numberOfNodes -1 is outside 0..100"],
    [101, "numberOfNodes 101 is outside 0..100"],
    [1.5, "numberOfNodes 1.5 is outside 0..100"],
  ])("numberOfNodes %p freezes the node set: no creates, no removal, NodePool untouched", (n, message) => {
    const p = expectNoCreatesAndNothingDeleted({ nodeRequests: [bmRequest("compute", n)] });
    expect(conditionOf(p, "InvalidNodeRequest")).toMatchObject({ status: "True", reason: "InvalidNodeRequest" });
    expect(conditionOf(p, "InvalidNodeRequest")?.message).toContain(message);
    expect(p.nodePoolReplicas).toEqual({});
  });

  test("a node set requested twice is frozen", () => {
    const p = expectNoCreatesAndNothingDeleted({ nodeRequests: [bmRequest("compute", 4), bmRequest("compute", 1)] });
    expect(conditionOf(p, "InvalidNodeRequest")?.message).toContain("node set compute is requested 2 times");
  });

  test("an unknown instance type blocks creates for its node set only", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1, "bm.nope"), bmRequest("gpu", 1, "bm.gpu")], nodePools: [] });
    expect(p.fence.map((f) => f.nodeSet)).toEqual(["gpu"]);
    expect(conditionOf(p, "InvalidNodeRequest")?.message).toBe("node set compute: BareMetalInstanceType bm.nope does not exist");
  });

  test("an unknown instance type still lets the node set scale down", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 0, "bm.nope")], workers: [entry("b", { phase: "WaitingForAgent" })], bmis: [bmiFor("b")] });
    expect(statusOf(p, "b")?.phase).toBe("Deleting");
  });

  test("an instance type without a fabric port needs fabricInterface", () => {
    const types = { "bm.nofabric": { name: "bm.nofabric" } };
    const blocked = planOf({ nodeRequests: [bmRequest("compute", 1, "bm.nofabric")], instanceTypes: types });
    expect(blocked.fence).toEqual([]);
    expect(conditionOf(blocked, "InvalidNodeRequest")?.message).toContain("BareMetalInstanceType bm.nofabric has no network port with role fabric");
    const overridden = planOf({ nodeRequests: [bmRequest("compute", 1, "bm.nofabric", "eno2")], instanceTypes: types });
    expect(overridden.workers[0].bmi.networkAttachment.interface).toBe("eno2");
  });

  test("numberOfNodes 0 is a valid request: scale to zero", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 0)] });
    expect(conditionOf(p, "InvalidNodeRequest")?.status).toBe("False");
    expect(p.nodePoolReplicas).toEqual({ "np-compute": 0 });
    expect(p.fence).toEqual([]);
  });

  test("a missing network attachment blocks creates and says so", () => {
    const p = expectNoCreatesAndNothingDeleted({ orderPatch: (o) => { delete o.spec.networkAttachment; } });
    expect(conditionOf(p, "InvalidNodeRequest")?.message).toContain("spec.networkAttachment.subnetRef is not set");
  });

  test("the plural networkAttachments[0] is read when the singular is absent", () => {
    const p = planOf({ orderPatch: (o) => { delete o.spec.networkAttachment; o.spec.networkAttachments = [{ subnetRef: "subnet-p", securityGroupRefs: ["sg-p"] }]; } });
    expect(p.workers[0].bmi.networkAttachment).toEqual({ subnet: "subnet-p", securityGroups: ["sg-p"], interface: "eth1", primary: true });
  });

  test("no ClusterDeployment yet: ClusterNotReady, no creates, existing workers stay declared", () => {
    const p = expectNoCreatesAndNothingDeleted({ clusterDeployment: undefined });
    expect(conditionOf(p, "ClusterNotReady")).toMatchObject({ status: "True", reason: "ClusterDeploymentNotFound" });
    expect(conditionOf(p, "ClusterNotReady")?.message).toContain("no ClusterDeployment exists");
  });

  test.each([["empty", ""], ["blank", "  "]])("an unresolved system catalog item (%s id) blocks creates with CatalogItemNotFound", (_name, id) => {
    const p = expectNoCreatesAndNothingDeleted({ catalogItem: id });
    expect(conditionOf(p, "CatalogItemNotFound")).toMatchObject({ status: "True", reason: "SystemCatalogItemNotFound" });
    expect(conditionOf(p, "CatalogItemNotFound")?.message).toContain("system-bmi-passthrough");
    expect(conditionOf(p, "CatalogItemNotFound")?.message).toContain("no bare-metal workers are created");
    // Not a problem of the node requests: that condition stays clear.
    expect(conditionOf(p, "InvalidNodeRequest")?.status).toBe("False");
  });

  test("a resolved catalog item: CatalogItemNotFound=False, creates go ahead, and its id is what a new BMI names", () => {
    const p = planOf(existing());
    expect(conditionOf(p, "CatalogItemNotFound")).toMatchObject({ status: "False", reason: "CatalogItemResolved" });
    expect(p.fence).toHaveLength(2);
    expect(p.workers.filter((w) => w.requiresFence).map((w) => w.bmi.catalogItem)).toEqual(["cat-system", "cat-system"]);
  });

  test("a catalog item that stops resolving blocks the next creates; the existing workers stay declared", () => {
    const resolved = planOf(existing());
    const lost = plan(snap({ ...existing(), catalogItem: "", now: new Date(Date.parse(iso(MIN))) }));
    expect(resolved.fence.length).toBeGreaterThan(0);
    expect(lost.fence).toEqual([]);
    expect(lost.workers.map((w) => w.slot)).toEqual(["a", "b"]);
    expect(conditionOf(lost, "CatalogItemNotFound")).toMatchObject({ status: "True", lastTransitionTime: iso(MIN) });
  });

  test("an attempted create whose inputs became unavailable is held back, not re-created with empty inputs", () => {
    const attempted = entry("c", { bareMetalInstance: { name: `${ORDER}-b-c` } });
    const p = plan(snap({ ...existing(), workers: [...existing().workers!, attempted], ignition: undefined, infraEnv: { name: "x", uid: "ie-1" } }));
    expect(statusOf(p, "c")).toEqual(attempted);
    expect(p.workers.map((w) => w.slot)).toEqual(["a", "b"]);
    const ok = planOf({ ...existing(), workers: [...existing().workers!, attempted] });
    const declared = ok.workers.find((w) => w.slot === "c");
    expect(declared?.bmi).toMatchObject({ name: `${ORDER}-b-c`, labels: { [ORDER_LABEL]: "uid-co1" } });
    expect(declared?.bmi.userData.length).toBeGreaterThan(0);
  });
});

describe("the HostType of the catalog item's template (finding 9b)", () => {
  // What observation reports when the template's HostType lists eno1 (lifecycle) and ens3f0 only.
  const hostType = { name: "compute-host", interfaces: [{ name: "eno1", role: "lifecycle" }, { name: "ens3f0", role: "fabric" }] };
  const problem = "no fabric port of BareMetalInstanceType bm.small (eth1) is a usable interface of HostType compute-host " +
    "(template tpl.hosted: ens3f0), which the fulfillment-service checks attachments against";
  const types = {
    "bm.small": { name: "bm.small", interfaceProblem: problem, hostType },
    "bm.gpu": { name: "bm.gpu", fabricPort: "ens3f0", hostType },
  };

  test("an instance type none of whose fabric ports the HostType accepts blocks its node set's creates with that reason", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1, "bm.small"), bmRequest("gpu", 1, "bm.gpu")], instanceTypes: types, nodePools: [] });
    expect(p.fence.map((f) => f.nodeSet)).toEqual(["gpu"]);
    expect(p.workers.map((w) => w.bmi.networkAttachment.interface)).toEqual(["ens3f0"]);
    const invalid = conditionOf(p, "InvalidNodeRequest");
    expect(invalid).toMatchObject({ status: "True", reason: "InvalidNodeRequest" });
    expect(invalid?.message).toBe(`node set compute: ${problem}; set the node request's fabricInterface to a usable interface`);
  });

  test("an explicit fabricInterface the HostType does not list is refused before any Create, naming the usable ones", () => {
    const p = planOf({ nodeRequests: [bmRequest("gpu", 1, "bm.gpu", "ens9")], instanceTypes: types, nodePools: [] });
    expect(p.fence).toEqual([]);
    expect(conditionOf(p, "InvalidNodeRequest")?.message)
      .toBe("node set gpu: fabricInterface ens9 is not an interface of HostType compute-host; usable interfaces: ens3f0");
  });

  test("an explicit fabricInterface with role lifecycle on the HostType is refused", () => {
    const p = planOf({ nodeRequests: [bmRequest("gpu", 1, "bm.gpu", "eno1")], instanceTypes: types, nodePools: [] });
    expect(p.fence).toEqual([]);
    expect(conditionOf(p, "InvalidNodeRequest")?.message).toContain("fabricInterface eno1 has role lifecycle on HostType compute-host");
  });

  test("an explicit fabricInterface the HostType accepts unblocks an instance type whose own ports it refuses", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1, "bm.small", "ens3f0")], instanceTypes: types, nodePools: [] });
    expect(conditionOf(p, "InvalidNodeRequest")?.status).toBe("False");
    expect(p.workers.map((w) => w.bmi.networkAttachment.interface)).toEqual(["ens3f0"]);
  });

  test("a HostType that cannot be resolved blocks every node set, explicit fabricInterface or not", () => {
    const unresolved = { name: "bm.small", interfaceProblem: "the HostType 'ht-gone' of BareMetalInstanceTemplate 'tpl.x' does not exist; " +
      "the fulfillment-service would refuse every network attachment", hostType: { name: "", interfaces: [] } };
    for (const fabric of [undefined, "eth1"]) {
      const p = planOf({ nodeRequests: [bmRequest("compute", 1, "bm.small", fabric)], instanceTypes: { "bm.small": unresolved }, nodePools: [] });
      expect(p.fence).toEqual([]);
      expect(conditionOf(p, "InvalidNodeRequest")?.message).toContain("the HostType 'ht-gone' of BareMetalInstanceTemplate 'tpl.x' does not exist");
    }
  });

  test("without a HostType (a template without host_type) any fabricInterface goes through, as before", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1, "bm.small", "ens9")], nodePools: [] });
    expect(conditionOf(p, "InvalidNodeRequest")?.status).toBe("False");
    expect(p.workers.map((w) => w.bmi.networkAttachment.interface)).toEqual(["ens9"]);
  });
});
