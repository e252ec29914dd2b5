// Whole-plan behaviour: BMI payload, InfraEnv, modes (Unmanaged, unknown BMIs, deletion), conditions,
// events, requeue, order phase, fingerprint and determinism (OSAC-2135 §3.3, §3.4, §11).
import { fingerprint, isUnmanaged, plan } from "../../planner";
import { MANAGEMENT_STATE_ANNOTATION, ORDER_LABEL, OWNER_ANNOTATION } from "../../planner/names";
import type { Plan } from "../../planner/types";
import {
  bmiFor, bmRequest, boundAgent, conditionOf, counterNames, entry, IGNITION, iso, makeOrder, MIN, NS, ORDER, planOf, SEC, snap,
  SnapOptions, statusOf, UID,
} from "./builders";

const readyEntry = (name: string, o = {}) => entry(name, { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN), ...o });

function readyWorld(n: number, o: SnapOptions = {}): SnapOptions {
  const names = Array.from({ length: n }, (_, i) => `r${i + 1}`);
  return {
    nodeRequests: [bmRequest("compute", n)],
    workers: names.map((x) => readyEntry(x)),
    bmis: names.map((x) => bmiFor(x)),
    agents: names.map((x) => boundAgent(x, x, "added-to-existing-cluster")),
    ...o,
  };
}

describe("BMI payload (§2 step 8, §11.5)", () => {
  test("a new BMI carries tenant system, order label and owner annotation, catalog item, type, image, ignition, one primary attachment", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)] });
    expect(p.workers).toEqual([{
      slot: "n1", nodeSet: "compute", requiresFence: true,
      bmi: {
        name: `${ORDER}-n2`, tenant: "system",
        labels: { [ORDER_LABEL]: UID }, annotations: { [OWNER_ANNOTATION]: `ClusterOrder/${UID}` },
        catalogItem: "cat-system", instanceType: "bm.small", diskImage: "di-419", userData: IGNITION,
        networkAttachment: { subnet: "subnet-1", securityGroups: ["sg-1", "sg-2"], interface: "eth1", primary: true },
      },
    }]);
  });

  test("nodeRequest.fabricInterface overrides the instance type's first fabric port", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1, "bm.small", "eno7")] });
    expect(p.workers[0].bmi.networkAttachment.interface).toBe("eno7");
  });
});

describe("InfraEnv (§2 step 3, §11.1)", () => {
  test("always declared: name, namespace, pull secret, ssh key, owner with uid, no clusterRef", () => {
    const p = planOf();
    expect(p.infraEnv).toEqual({
      name: `${ORDER}-infraenv`, namespace: NS, pullSecretName: `${ORDER}-pull-secret`, sshAuthorizedKey: "ssh-ed25519 AAAAtest",
      owner: { apiVersion: "osac.openshift.io/v1alpha1", kind: "ClusterOrder", name: ORDER, uid: UID },
    });
    expect(Object.keys(p.infraEnv ?? {})).not.toContain("clusterRef");
  });

  test("a re-run with the InfraEnv present declares the same one and emits no InfraEnvCreated", () => {
    const a = planOf(readyWorld(1));
    const b = planOf(readyWorld(1));
    expect(a.infraEnv).toEqual(b.infraEnv);
    expect(a.events.map((e) => e.reason)).not.toContain("InfraEnvCreated");
  });

  test("an InfraEnv deleted later is re-declared and its re-creation is a new event key", () => {
    const first = planOf({ infraEnv: undefined, recordedInfraEnvUid: undefined });
    const again = planOf({ infraEnv: undefined, recordedInfraEnvUid: "ie-1" });
    expect(first.events[0].key).not.toBe(again.events[0].key);
    expect(again.infraEnv?.name).toBe(`${ORDER}-infraenv`);
  });
});

describe("Unmanaged (§5.4, §11.19)", () => {
  test.each(["Unmanaged", "unmanaged", "UNMANAGED", " unManaged "])("%j pauses: nothing changes except a condition", (value) => {
    const world = readyWorld(2, {
      annotations: { [MANAGEMENT_STATE_ANNOTATION]: value }, nodeRequests: [bmRequest("compute", 5)],
      bmis: [bmiFor("r1", { state: "Failed" })], // would fail r1 and drop r2 if managed
    });
    expect(isUnmanaged(makeOrder(world))).toBe(true);
    const p = planOf(world);
    expect(p.paused?.reason).toBe("Unmanaged");
    expect(p.status.workers).toEqual(world.workers);
    expect(p.workers.map((w) => [w.slot, w.bmi.adoptId, w.binding?.agentName])).toEqual([["r1", "id-r1", "agent-r1"], ["r2", "id-r2", "agent-r2"]]);
    expect(p.fence).toEqual([]);
    expect(p.events).toEqual([]);
    // The request says 5, but a paused plan declares the NodePool's observed replicas: nothing changes.
    expect(p.nodePoolReplicas).toEqual({ "np-compute": 2 });
    expect(conditionOf(p, "Managed")).toMatchObject({ status: "False", reason: "Unmanaged" });
    expect(p.status.conditions.map((c) => c.type)).toEqual(["Managed"]);
  });

  test("other values are managed", () => {
    expect(isUnmanaged(makeOrder({ annotations: { [MANAGEMENT_STATE_ANNOTATION]: "Managed" } }))).toBe(false);
    expect(isUnmanaged(makeOrder())).toBe(false);
  });

  test("deletion is never paused", () => {
    const p = planOf(readyWorld(1, { annotations: { [MANAGEMENT_STATE_ANNOTATION]: "Unmanaged" }, deletionTimestamp: iso(-SEC) }));
    expect(p.paused).toBeUndefined();
    expect(p.status.phase).toBe("Deleting");
    expect(statusOf(p, "r1")?.phase).toBe("Deleting");
  });
});

describe("unknown BMIs (§11.7, §11.6)", () => {
  const unknown = (errors: number) => readyWorld(2, {
    bmis: undefined, fulfillmentErrors: errors, nodeRequests: [bmRequest("compute", 4)],
    workers: [readyEntry("r1"), entry("p", { phase: "WaitingForAgent", attemptStartedAt: iso(-60 * MIN) }), entry("x", { bareMetalInstance: { name: "co1-b-x" } })],
  });

  test("never drop, never fail, never create: the declared workers are exactly the existing ones", () => {
    const p = planOf(unknown(1));
    expect(p.paused).toEqual({ reason: "FulfillmentServiceUnknown", message: expect.stringContaining("nothing is created or deleted until they can be listed") });
    expect(p.status.workers).toEqual(unknown(1).workers);
    expect(p.workers.map((w) => w.slot)).toEqual(["r1", "p", "x"]);
    expect(p.fence).toEqual([]);
    expect(p.events).toEqual([]);
    expect(p.requeueAt).toBe(iso(30 * SEC));
    expect(conditionOf(p, "FulfillmentServiceUnavailable")?.status).toBe("False");
  });

  test("after 3 consecutive errors FulfillmentServiceUnavailable=True and the requeue is 5 min", () => {
    const p = planOf(unknown(3));
    expect(conditionOf(p, "FulfillmentServiceUnavailable")).toMatchObject({ status: "True", reason: "FulfillmentServiceUnavailable" });
    expect(conditionOf(p, "FulfillmentServiceUnavailable")?.message).toContain("3 consecutive");
    expect(p.requeueAt).toBe(iso(5 * MIN));
  });

  test("the condition clears once the service answers again", () => {
    const down = planOf(unknown(4));
    const up = planOf(readyWorld(2, { fulfillmentErrors: 0, now: new Date(Date.parse(iso(MIN))), orderPatch: (o) => { o.status!.conditions = down.status.conditions; } }));
    expect(conditionOf(up, "FulfillmentServiceUnavailable")).toMatchObject({ status: "False", lastTransitionTime: iso(MIN) });
  });
});

describe("cluster deletion (§5.3, §11.17)", () => {
  test("declares nothing, every entry goes Deleting, entries leave once their BMI is gone", () => {
    const world = readyWorld(3, { deletionTimestamp: iso(-SEC) });
    world.workers!.push(entry("f", { phase: "Failed", nextRetryTime: iso(MIN) }));
    world.bmis = [bmiFor("r1"), bmiFor("r2", { deleting: true })];
    const p = planOf(world);
    expect(p.workers).toEqual([]);
    expect(p.infraEnv).toBeUndefined();
    expect(p.fence).toEqual([]);
    expect(p.status.workers.map((w) => [w.name, w.phase])).toEqual([["r1", "Deleting"], ["r2", "Deleting"]]);
    expect(p.events.map((e) => e.key)).toEqual([`WorkerDeleted/r3/${ORDER}-b-r3`, `WorkerDeleted/f/${ORDER}-b-f`]);
    expect(p.status.phase).toBe("Deleting");
    expect(p.requeueAt).toBe(iso(30 * SEC));
  });

  test("with unknown BMIs nothing is removed", () => {
    const p = planOf(readyWorld(2, { deletionTimestamp: iso(-SEC), bmis: undefined }));
    expect(p.status.workers.map((w) => w.phase)).toEqual(["Deleting", "Deleting"]);
    expect(p.events).toEqual([]);
  });

  test("all gone: empty status", () => {
    const p = planOf(readyWorld(2, { deletionTimestamp: iso(-SEC), bmis: [] }));
    expect(p.status.workers).toEqual([]);
    expect(p.requeueAt).toBeUndefined();
  });
});

describe("conditions (§3.3)", () => {
  test("WorkersFailed reports count of desired and each failed slot's attempt and next retry", () => {
    const p = planOf(readyWorld(3, {
      nodeRequests: [bmRequest("compute", 5)],
      workers: [readyEntry("r1"), readyEntry("r2"), readyEntry("r3"),
        entry("f1", { phase: "Failed", attemptCount: 2, nextRetryTime: iso(MIN) }), entry("f2", { phase: "Failed", attemptCount: 1, nextRetryTime: iso(2 * MIN) })],
    }));
    const c = conditionOf(p, "WorkersFailed");
    expect(c).toMatchObject({ status: "True", reason: "ProvisioningFailed", observedGeneration: 3, lastTransitionTime: iso(0) });
    expect(c?.message).toBe(
      `2 of 5 bare-metal workers failed provisioning, earliest next retry ${iso(MIN)} (set osac.openshift.io/retry-now to a new value to retry now), ` +
      `retrying: worker f1 attempt 2, next retry ${iso(MIN)}; worker f2 attempt 1, next retry ${iso(2 * MIN)}`);
  });

  test("lastTransitionTime is kept while the status is unchanged and moves when it flips", () => {
    const first = planOf(readyWorld(2));
    const laterSame = planOf(readyWorld(2, { now: new Date(Date.parse(iso(5 * MIN))), orderPatch: (o) => { o.status!.conditions = first.status.conditions; } }));
    expect(conditionOf(laterSame, "WorkersFailed")).toMatchObject({ status: "False", lastTransitionTime: iso(0) });
    const flipped = planOf(readyWorld(2, {
      now: new Date(Date.parse(iso(6 * MIN))), orderPatch: (o) => { o.status!.conditions = laterSame.status.conditions; },
      diskImage: { ok: false, reason: "NotLinked", message: "no disk_image" },
    }));
    expect(conditionOf(flipped, "RHCOSImageNotFound")).toMatchObject({ status: "True", lastTransitionTime: iso(6 * MIN) });
    expect(conditionOf(flipped, "WorkersFailed")?.lastTransitionTime).toBe(iso(0));
  });

  test("only the planner's condition types are written (other controllers' conditions survive SSA)", () => {
    const p = planOf(readyWorld(1, { orderPatch: (o) => { o.status!.conditions = [{ type: "ClusterAvailable", status: "True", reason: "X", message: "m", lastTransitionTime: iso(-MIN) }]; } }));
    expect(p.status.conditions.map((c) => c.type)).toEqual([
      "WorkersFailed", "InfraEnvReady", "RHCOSImageNotFound", "FulfillmentServiceUnavailable", "InvalidNodeRequest",
      "ClusterNotReady", "AgentMatchAmbiguous", "NodePoolUnmapped", "Managed", "CatalogItemNotFound", "WorkerSpecDrift",
      "HostSafetyRefused", "Pinned", "ApprovalRequired",
    ]);
  });
});

describe("order phase", () => {
  test.each([
    ["all desired Ready", readyWorld(2), "Ready"],
    ["one still provisioning", readyWorld(2, { nodeRequests: [bmRequest("compute", 3)] }), "Progressing"],
    ["a failed worker", readyWorld(2, { workers: [readyEntry("r1"), readyEntry("r2"), entry("f", { phase: "Failed", nextRetryTime: iso(MIN) })], nodeRequests: [bmRequest("compute", 3)] }), "Progressing"],
    ["deleting", readyWorld(2, { deletionTimestamp: iso(0) }), "Deleting"],
  ])("%s → %s", (_name, world, phase) => {
    expect(planOf(world).status.phase).toBe(phase);
  });
});

describe("requeue", () => {
  test("the earliest of backoff expiry, timeouts, polls; nothing when everything is Ready and healthy", () => {
    expect(planOf(readyWorld(2)).requeueAt).toBeUndefined();
    const p = planOf(readyWorld(1, {
      nodeRequests: [bmRequest("compute", 2)], configPatch: { ignitionPollMs: 3_600_000 },
      workers: [readyEntry("r1"), entry("f", { phase: "Failed", nextRetryTime: iso(42 * SEC) })],
    }));
    expect(p.requeueAt).toBe(iso(42 * SEC));
  });

  test("a transition whose deletion waits for persistence requeues at once (1 s floor)", () => {
    const p = planOf({ nodeRequests: [bmRequest("compute", 1)], workers: [entry("w")], bmis: [bmiFor("w", { state: "Failed" })] });
    expect(p.requeueAt).toBe(iso(SEC));
  });
});

describe("events (§3.4)", () => {
  test("keys are stable for the same fact and differ per attempt", () => {
    const world = { nodeRequests: [bmRequest("compute", 1)], workers: [entry("w", { phase: "WaitingForAgent" as const, attemptStartedAt: iso(-31 * MIN) })], bmis: [bmiFor("w")] };
    const a = planOf(world);
    const b = planOf(world);
    expect(a.events).toEqual(b.events);
    const again = planOf({ ...world, workers: [entry("w", { phase: "WaitingForAgent", attemptCount: 2, attemptStartedAt: iso(-31 * MIN) })] });
    expect(again.events.map((e) => e.key)).toEqual(["AgentRegistrationTimeout/w/2", "WorkerFailed/w/2"]);
  });

  test("no event message or key carries the ignition content", () => {
    const secret = JSON.stringify({ ignition: { version: "3.2.0" }, storage: { files: [{ contents: { source: "data:,PULL-SECRET-XYZ" } }] } });
    const p = planOf({ ignition: { ok: true, content: secret, bytes: 60_000 }, nodeRequests: [bmRequest("compute", 2)] });
    expect(p.events.length).toBeGreaterThan(0);
    expect(JSON.stringify(p.events)).not.toContain("PULL-SECRET-XYZ");
    expect(JSON.stringify(p.status)).not.toContain("PULL-SECRET-XYZ");
  });
});

describe("fingerprint", () => {
  const fp = (o: SnapOptions) => fingerprint(planOf(o));

  test("unchanged world → unchanged fingerprint; an unchanged replay needs no `up` (§11.6)", () => {
    expect(fp(readyWorld(2))).toBe(fp(readyWorld(2)));
    expect(fp(readyWorld(2))).toMatch(/^[0-9a-f]{64}$/);
  });

  test("it changes with replicas, bindings, workers and the InfraEnv", () => {
    const base = fp(readyWorld(2));
    expect(fp(readyWorld(2, { nodeRequests: [bmRequest("compute", 1)] }))).not.toBe(base);
    expect(fp(readyWorld(2, { orderPatch: (o) => { o.spec.sshPublicKey = "ssh-ed25519 other"; } }))).not.toBe(base);
    expect(fp(readyWorld(2, { clusterDeployment: { name: "cd2", namespace: NS } }))).not.toBe(base);
    expect(fp(readyWorld(3))).not.toBe(base);
  });

  test("an adopted BMI's create-only inputs (ignition, image) do not matter; a create's ignition enters as sha256", () => {
    expect(fp(readyWorld(2, { ignition: { ok: true, content: "{\"other\":1}", bytes: 11 } }))).toBe(fp(readyWorld(2)));
    expect(fp(readyWorld(2, { diskImage: { ok: false, reason: "NotLinked", message: "m" } }))).toBe(fp(readyWorld(2)));
    const create = (content: string) => fp({ nodeRequests: [bmRequest("compute", 1)], ignition: { ok: true, content, bytes: content.length } });
    expect(create("{\"a\":1}")).not.toBe(create("{\"a\":2}"));
  });

  test("key order does not matter", () => {
    const p = planOf(readyWorld(1));
    const reordered: Plan = JSON.parse(JSON.stringify({ workers: p.workers, nodePoolReplicas: p.nodePoolReplicas, infraEnv: p.infraEnv, status: p.status, fence: p.fence, events: p.events }));
    expect(fingerprint(reordered)).toBe(fingerprint(p));
  });
});

describe("purity and determinism", () => {
  test("the same snapshot (fresh name generator) gives the same plan, and the snapshot is not mutated", () => {
    const make = () => snap({ nodeRequests: [bmRequest("compute", 3)], workers: [entry("w", { phase: "WaitingForAgent" })], bmis: [bmiFor("w")] });
    const s1 = make();
    const before = JSON.stringify(s1.order);
    const p1 = plan(s1);
    expect(JSON.stringify(s1.order)).toBe(before);
    const p2 = plan({ ...make(), newName: counterNames() });
    expect(p2).toEqual(p1);
  });
});

describe("create-only inputs of live BMIs (I2, issue 15 finding 1)", () => {
  const liveSpec = { catalogItem: "cat-system", instanceType: "bm.small", networkAttachment: { subnet: "subnet-1", securityGroups: ["sg-1", "sg-2"], interface: "eth1" } };
  const edited = (o: SnapOptions = {}) => readyWorld(2, {
    bmis: ["r1", "r2"].map((x) => bmiFor(x, { spec: liveSpec })),
    orderPatch: (order) => { order.spec.networkAttachment = { subnetRef: "subnet-1", securityGroupRefs: ["sg-3"] }; },
    ...o,
  });

  test("an edited securityGroupRefs on a Ready order: live BMIs are declared with their own values and the edit is reported", () => {
    const p = planOf(edited());
    for (const w of p.workers) expect(w.bmi.networkAttachment.securityGroups).toEqual(["sg-1", "sg-2"]);
    expect(p.drift).toEqual(["r1", "r2"].map((slot) => ({
      slot, bmiName: `${ORDER}-b-${slot}`, field: "networkAttachment.securityGroups", live: "sg-1,sg-2", requested: "sg-3",
    })));
    const c = conditionOf(p, "WorkerSpecDrift");
    expect(c).toMatchObject({ status: "True", reason: "CreateOnlyFieldsDiffer" });
    expect(c?.message).toContain(`worker r1 (${ORDER}-b-r1) networkAttachment.securityGroups: live "sg-1,sg-2", requested "sg-3"`);
  });

  test("the edit changes nothing the stack sees for existing BMIs (same fingerprint)", () => {
    const before = planOf(readyWorld(2, { bmis: ["r1", "r2"].map((x) => bmiFor(x, { spec: liveSpec })) }));
    expect(fingerprint(planOf(edited()))).toBe(fingerprint(before));
  });

  test("only new incarnations get the requested values", () => {
    const p = planOf(edited({ nodeRequests: [bmRequest("compute", 3)] }));
    const fresh = p.workers.find((w) => w.requiresFence)!;
    expect(fresh.bmi.networkAttachment.securityGroups).toEqual(["sg-3"]);
    expect(p.workers.filter((w) => !w.requiresFence).map((w) => w.bmi.networkAttachment.securityGroups)).toEqual([["sg-1", "sg-2"], ["sg-1", "sg-2"]]);
  });

  test("a re-created catalog item, a renamed fabric port and another instance type are declared live and reported", () => {
    const p = planOf(readyWorld(1, {
      bmis: [bmiFor("r1", { spec: { ...liveSpec, catalogItem: "cat-old", networkAttachment: { ...liveSpec.networkAttachment, interface: "eno1" } } })],
      nodeRequests: [bmRequest("compute", 1, "bm.gpu")],
    }));
    expect(p.workers[0].bmi).toMatchObject({ catalogItem: "cat-old", instanceType: "bm.small", networkAttachment: { interface: "eno1" } });
    expect(p.drift?.map((d) => [d.field, d.live, d.requested])).toEqual([
      ["catalogItem", "cat-old", "cat-system"], ["instanceType", "bm.small", "bm.gpu"], ["networkAttachment.interface", "eno1", "ens3f0"],
    ]);
  });

  test("no difference: WorkerSpecDrift False, no drift", () => {
    const p = planOf(readyWorld(2, { bmis: ["r1", "r2"].map((x) => bmiFor(x, { spec: liveSpec })) }));
    expect(p.drift).toEqual([]);
    expect(conditionOf(p, "WorkerSpecDrift")).toMatchObject({ status: "False", reason: "NoDrift" });
  });

  test("a BMI that is not observed (unlisted) is declared with the requested values, as before", () => {
    const p = planOf(edited({ bmis: [bmiFor("r1", { spec: liveSpec })], goneBmiIds: [] }));
    expect(p.workers.find((w) => w.slot === "r2")?.bmi).toMatchObject({ adoptId: "id-r2", networkAttachment: { securityGroups: ["sg-3"] } });
    expect(p.drift?.map((d) => d.slot)).toEqual(["r1"]);
  });
});
