// Invariant I1 where the effect happens: the BMI provider deletes a BMI only when the planner retired its
// slot (entry persisted as Unbinding, Deleting or Failed) or its ClusterOrder is gone or being deleted.
// The decision alone, then the provider's delete against the simulator and the test plane's apiserver.
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import fc from "fast-check";
import type { FulfillmentClient } from "../../clients/fulfillment";
import type { RunningSimulator } from "../../lab/fulfillment/server";
import { ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder, WorkerPhase, WorkerStatus } from "../../planner/types";
import { bareMetalInstanceProvider as provider } from "../../providers/bareMetalInstance";
import type { BareMetalInstanceInputs, BareMetalInstanceOutputs, DeleteGuard } from "../../providers/bareMetalInstance";
import { deleteDecision, unguardedDeleteDecision } from "../../providers/bareMetalInstanceOps";
import { parseDeleteRefusals } from "../../providers/deleteRefusal";
import { startProviderSimulator, type ProviderSimulator } from "./simulator";
import { createOrder, deleteOrder, releaseOrder, setWorkers, type TestOrder } from "./orders";

const PHASES: WorkerPhase[] = ["Provisioning", "WaitingForAgent", "Binding", "Ready", "Failed", "Unbinding", "Deleting"];
const RETIRED: WorkerPhase[] = ["Unbinding", "Deleting", "Failed"];

describe("deleteDecision", () => {
  const guard: DeleteGuard = { kubeconfigPath: "/k", namespace: "ns", orderName: "o", orderUid: "uid-1", slot: "slot-a" };
  const bmi = { id: "bmi-1", name: "o-w-1" };
  const order = (workers: WorkerStatus[], extra: Partial<ClusterOrder["metadata"]> = {}): ClusterOrder => ({
    metadata: { name: "o", namespace: "ns", uid: "uid-1", ...extra }, spec: {}, status: { workers },
  });
  const entry = (phase: WorkerPhase, ref: { name: string; id?: string } = { name: bmi.name, id: bmi.id }): WorkerStatus =>
    ({ name: "slot-a", nodeSet: "compute", kind: "BareMetalInstance", phase, bareMetalInstance: ref });

  it.each(PHASES)("an entry in phase %s allows the delete only when the planner retired it", (phase) => {
    const d = deleteDecision(order([entry(phase)]), guard, bmi);
    expect(d.allowed).toBe(RETIRED.includes(phase));
    if (!d.allowed) expect(d.reason).toContain(`worker slot-a is ${phase}`);
  });

  it("matches the entry by name only when it recorded no id", () => {
    expect(deleteDecision(order([entry("Deleting", { name: bmi.name })]), guard, bmi).allowed).toBe(true);
    expect(deleteDecision(order([entry("Deleting", { name: bmi.name, id: "another-id" })]), guard, bmi).allowed).toBe(false);
    // The Ready entry that holds this id wins over a retired one that merely shares the name.
    expect(deleteDecision(order([entry("Deleting", { name: bmi.name }), { ...entry("Ready"), name: "slot-b" }]), guard, bmi).allowed).toBe(false);
  });

  it("refuses when the order records no entry for the BMI", () => {
    const d = deleteDecision(order([]), guard, bmi);
    expect(d).toMatchObject({ allowed: false });
    expect(!d.allowed && d.reason).toContain("records no worker for this BareMetalInstance");
  });

  it("allows when the order is gone, re-created under the same name without this BMI, or being deleted", () => {
    expect(deleteDecision(undefined, guard, bmi).allowed).toBe(true);
    expect(deleteDecision(order([], { uid: "uid-2" }), guard, bmi).allowed).toBe(true);
    expect(deleteDecision(order([{ ...entry("Ready", { name: "o-w-9", id: "bmi-9" }), name: "slot-b" }], { uid: "uid-2" }), guard, bmi).allowed).toBe(true);
    expect(deleteDecision(order([entry("Ready")], { deletionTimestamp: "2025-01-01T00:00:00Z" }), guard, bmi).allowed).toBe(true);
  });

  it.each(PHASES)("an order with another uid whose %s worker names the BMI (by id or name) keeps it unless retired", (phase) => {
    const recreated = (ref: { name: string; id?: string }) => order([entry(phase, ref)], { uid: "uid-2" });
    for (const ref of [{ name: bmi.name, id: bmi.id }, { name: bmi.name }, { name: "renamed", id: bmi.id }, { name: bmi.name, id: "another-id" }]) {
      const d = deleteDecision(recreated(ref), guard, bmi);
      expect(d.allowed).toBe(RETIRED.includes(phase));
      if (!d.allowed) expect(d.reason).toContain(`worker slot-a is ${phase}`);
    }
  });

  it("never allows a BMI that a not-retired worker of a same-named order with another uid names (property)", () => {
    const ref = fc.record({ name: fc.constantFrom("o-w-1", "o-w-2"), id: fc.option(fc.constantFrom("bmi-1", "bmi-2"), { nil: undefined }) });
    const workers = fc.array(fc.record({ phase: fc.constantFrom(...PHASES), ref }), { maxLength: 5 })
      .map((ws) => ws.map((w, i) => ({ ...entry(w.phase, w.ref), name: `slot-${i}` })));
    fc.assert(fc.property(workers, (ws) => {
      const claimed = ws.some((w) => !RETIRED.includes(w.phase) && (w.bareMetalInstance?.id === bmi.id || w.bareMetalInstance?.name === bmi.name));
      expect(deleteDecision(order(ws, { uid: "uid-2" }), guard, bmi).allowed).toBe(!claimed);
    }), { numRuns: 500 });
  });

  it("never allows a live order's BMI that no retired entry names (property)", () => {
    const ref = fc.record({ name: fc.constantFrom("o-w-1", "o-w-2", "o-w-3"), id: fc.option(fc.constantFrom("bmi-1", "bmi-2", "bmi-3"), { nil: undefined }) });
    const workers = fc.array(fc.record({ phase: fc.constantFrom(...PHASES), ref }), { maxLength: 6 })
      .map((ws) => ws.map((w, i) => ({ ...entry(w.phase, w.ref), name: `slot-${i}` })));
    fc.assert(fc.property(workers, (ws) => {
      const byId = ws.find((w) => w.bareMetalInstance?.id === bmi.id);
      const byName = ws.find((w) => !w.bareMetalInstance?.id && w.bareMetalInstance?.name === bmi.name);
      const matched = byId ?? byName;
      expect(deleteDecision(order(ws), guard, bmi).allowed).toBe(matched !== undefined && RETIRED.includes(matched.phase));
    }), { numRuns: 500 });
  });
});

describe("unguardedDeleteDecision (no guard in the state)", () => {
  const bmi = { id: "bmi-1", name: "o-w-1" };
  const order = (uid: string, workers: WorkerStatus[], extra: Partial<ClusterOrder["metadata"]> = {}): ClusterOrder => ({
    metadata: { name: `o-${uid}`, namespace: "ns", uid, ...extra }, spec: {}, status: { workers },
  });
  const ready = { name: "slot-a", nodeSet: "compute", kind: "BareMetalInstance", phase: "Ready", bareMetalInstance: bmi } as WorkerStatus;

  it("allows when no ClusterOrder has the BMI's order uid, or the one that has it is being deleted", () => {
    expect(unguardedDeleteDecision([order("uid-2", [ready])], "uid-1", bmi).allowed).toBe(true);
    expect(unguardedDeleteDecision([], "uid-1", bmi).allowed).toBe(true);
    expect(unguardedDeleteDecision([order("uid-1", [ready], { deletionTimestamp: "2025-01-01T00:00:00Z" })], "uid-1", bmi).allowed).toBe(true);
  });

  it("applies the guarded rule to the order that has the uid: a live worker refuses (naming its slot), a retired one allows", () => {
    const d = unguardedDeleteDecision([order("uid-2", []), order("uid-1", [ready])], "uid-1", bmi);
    expect(d).toMatchObject({ allowed: false, slot: "slot-a" });
    expect(unguardedDeleteDecision([order("uid-1", [])], "uid-1", bmi)).toMatchObject({ allowed: false, slot: "unknown" });
    expect(unguardedDeleteDecision([order("uid-1", [{ ...ready, phase: "Deleting" }])], "uid-1", bmi).allowed).toBe(true);
  });
});

/** A stand-in apiserver that answers every request with one 404 body (a kind not served, a wrong path). */
async function notServedServer(body: string, contentType: string): Promise<{ kubeconfig: (dir: string) => string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(404, { "Content-Type": contentType });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    kubeconfig: (dir) => {
      const file = path.join(dir, `not-served-${port}.kubeconfig`);
      fs.writeFileSync(file, [
        "apiVersion: v1", "kind: Config", "current-context: x",
        `clusters: [{name: x, cluster: {server: 'http://127.0.0.1:${port}', insecure-skip-tls-verify: true}}]`,
        "users: [{name: x, user: {token: not-a-real-token}}]", "contexts: [{name: x, context: {cluster: x, user: x}}]",
      ].join("\n"));
      return file;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("remove", () => {
  const IGNITION = JSON.stringify({ ignition: { version: "3.4.0" }, secret: "assisted-pull-token-guard" });
  let sim: RunningSimulator;
  let dir: string;
  let tokenFile: string;
  let admin: FulfillmentClient;
  let catalogItemId: string;

  let fixture: ProviderSimulator;

  beforeAll(async () => {
    fixture = await startProviderSimulator("bmi-guard");
    ({ sim, dir, tokenFile, admin, catalogItemId } = fixture);
  });

  afterAll(async () => {
    await fixture.stop();
  });

  function inputs(name: string, guard: DeleteGuard | undefined): BareMetalInstanceInputs {
    return {
      name, tenant: "system", labels: { [ORDER_LABEL]: guard?.orderUid ?? "old-order" }, annotations: {},
      catalogItem: catalogItemId, instanceType: "compute", diskImage: "di-rhcos-417", userData: IGNITION,
      networkAttachment: { subnet: "tenant-subnet", securityGroups: [], interface: "ens1f0", primary: true },
      connection: { address: sim.address, tokenFile, plaintext: true },
      ...(guard ? { guard } : {}),
    };
  }

  async function bmiOf(order: TestOrder | undefined, name: string, guard = order?.guard(`slot-${name}`)): Promise<{ id: string; outs: BareMetalInstanceOutputs }> {
    const r = await provider.create(inputs(name, guard));
    return { id: r.id, outs: r.outs as BareMetalInstanceOutputs };
  }

  const deletes = () => sim.engine.calls.get("BareMetalInstances/Delete") ?? 0;
  const exists = async (id: string) => !(await admin.bareMetalInstances.get(id)).metadata?.deletion_timestamp;

  async function refused(id: string, outs: BareMetalInstanceOutputs): Promise<ReturnType<typeof parseDeleteRefusals>[number]> {
    const before = deletes();
    const err = await provider.delete!(id, outs).then(() => undefined, (e: Error) => e);
    expect(err).toBeDefined();
    expect(deletes()).toBe(before);
    expect(await exists(id)).toBe(true);
    expect(err!.message).not.toContain("assisted-pull-token-guard");
    const [r] = parseDeleteRefusals(err!.message);
    expect(r).toBeDefined();
    return r;
  }

  it.each(["Provisioning", "WaitingForAgent", "Binding", "Ready"] as WorkerPhase[])(
    "refuses to delete the BMI of a %s worker, naming the slot", async (phase) => {
      const order = await createOrder();
      const name = `w-${phase.toLowerCase()}`;
      const { id, outs } = await bmiOf(order, name);
      await setWorkers(order, [{ slot: `slot-${name}`, phase, bmi: { name, id } }]);
      const r = await refused(id, outs);
      expect(r).toMatchObject({ slot: `slot-${name}`, bmiName: name });
      expect(r.reason).toContain(`is ${phase}`);
    });

  it.each(RETIRED)("deletes the BMI of a worker the planner retired (%s)", async (phase) => {
    const order = await createOrder();
    const name = `w-${phase.toLowerCase()}`;
    const { id, outs } = await bmiOf(order, name);
    await setWorkers(order, [{ slot: `slot-${name}`, phase, bmi: { name, id } }]);
    await provider.delete!(id, outs);
    expect(await exists(id).catch(() => false)).toBe(false);
  });

  it("refuses without an entry for the BMI, and when the order cannot be read", async () => {
    const order = await createOrder();
    const a = await bmiOf(order, "w-noentry");
    await setWorkers(order, [{ slot: "slot-other", phase: "Deleting", bmi: { name: "w-other", id: "other-id" } }]);
    expect((await refused(a.id, a.outs)).reason).toContain("records no worker");

    const kubeconfig = path.join(dir, "unreachable.kubeconfig");
    fs.writeFileSync(kubeconfig, [
      "apiVersion: v1", "kind: Config", "current-context: x",
      "clusters: [{name: x, cluster: {server: 'https://127.0.0.1:9', insecure-skip-tls-verify: true}}]",
      "users: [{name: x, user: {token: not-a-real-token}}]", "contexts: [{name: x, context: {cluster: x, user: x}}]",
    ].join("\n"));
    const c = await bmiOf(order, "w-unreadable", { ...order.guard("slot-c"), kubeconfigPath: kubeconfig });
    const r = await refused(c.id, c.outs);
    expect(r.slot).toBe("slot-c");
    expect(r.reason).toContain("could not be read");
    expect(r.reason).not.toContain("not-a-real-token");
    const d = await bmiOf(order, "w-nokubeconfig", { ...order.guard("slot-d"), kubeconfigPath: path.join(dir, "missing") });
    expect((await refused(d.id, d.outs)).reason).toContain("could not be read");
  });

  it.each([
    ["a kind that is not served (Status without details)", JSON.stringify({
      kind: "Status", apiVersion: "v1", status: "Failure", message: "the server could not find the requested resource", reason: "NotFound", details: {}, code: 404,
    }), "application/json"],
    ["a path the server does not know (plain text)", "404 page not found\n", "text/plain"],
    ["another object's 404", JSON.stringify({
      kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404,
      details: { name: "another-order", group: "osac.openshift.io", kind: "clusterorders" },
    }), "application/json"],
  ])("refuses when the order reads as 404 for %s: only a 404 naming the order proves it gone", async (_case, body, type) => {
    const order = await createOrder();
    const server = await notServedServer(body, type);
    try {
      const a = await bmiOf(order, `w-notserved-${type.length}-${body.length}`, { ...order.guard("slot-n"), kubeconfigPath: server.kubeconfig(dir) });
      const r = await refused(a.id, a.outs);
      expect(r.slot).toBe("slot-n");
      expect(r.reason).toContain("could not be read (404 NotFound)");
      expect(r.reason).not.toContain("not-a-real-token");
    } finally {
      await server.close();
    }
  });

  it("refuses when the order was re-created (another uid) and a not-retired worker of it names the BMI", async () => {
    const live = await createOrder("order-restored");
    const c = await bmiOf(live, "w-order-restored", { ...live.guard("slot-c"), orderUid: "uid-of-the-earlier-order" });
    await setWorkers(live, [{ slot: "slot-c", phase: "Ready", bmi: { name: "w-order-restored", id: c.id } }]);
    const r = await refused(c.id, c.outs);
    expect(r.reason).toContain("another uid");
    expect(r.reason).toContain("worker slot-c is Ready");
    await setWorkers(live, [{ slot: "slot-c", phase: "Ready", bmi: { name: "w-order-restored" } }]);
    await refused(c.id, c.outs);
  });

  it("without a guard in the state, finds the order by the BMI's order label: deletes when none has that uid or it is being deleted, refuses a live one", async () => {
    const gone = await bmiOf(undefined, "w-noguard-gone", undefined);
    await provider.delete!(gone.id, gone.outs);
    expect(await exists(gone.id).catch(() => false)).toBe(false);

    const order = await createOrder("order-unguarded", { hold: true });
    const unguarded = (name: string) => provider.create({ ...inputs(name, undefined), labels: { [ORDER_LABEL]: order.uid } })
      .then((r) => ({ id: r.id, outs: r.outs as BareMetalInstanceOutputs }));
    const live = await unguarded("w-noguard-live");
    const retired = await unguarded("w-noguard-retired");
    await setWorkers(order, [
      { slot: "slot-live", phase: "Ready", bmi: { name: "w-noguard-live", id: live.id } },
      { slot: "slot-retired", phase: "Deleting", bmi: { name: "w-noguard-retired", id: retired.id } },
    ]);
    expect(await refused(live.id, live.outs)).toMatchObject({ slot: "slot-live", bmiName: "w-noguard-live" });
    await provider.delete!(retired.id, retired.outs);
    expect(await exists(retired.id).catch(() => false)).toBe(false);

    await deleteOrder(order);
    await provider.delete!(live.id, live.outs);
    expect(await exists(live.id).catch(() => false)).toBe(false);
    await releaseOrder(order);
  });

  it("deletes when the order is being deleted, gone, or re-created (another uid) without this BMI", async () => {
    const deleting = await createOrder("order-deleting", { hold: true });
    const a = await bmiOf(deleting, "w-order-deleting");
    await setWorkers(deleting, [{ slot: "slot-w-order-deleting", phase: "Ready", bmi: { name: "w-order-deleting", id: a.id } }]);
    await deleteOrder(deleting);
    await provider.delete!(a.id, a.outs);
    expect(await exists(a.id).catch(() => false)).toBe(false);
    await releaseOrder(deleting);

    const gone = await createOrder("order-gone");
    const b = await bmiOf(gone, "w-order-gone");
    await deleteOrder(gone);
    await provider.delete!(b.id, b.outs);
    expect(await exists(b.id).catch(() => false)).toBe(false);

    const live = await createOrder("order-recreated");
    const c = await bmiOf(live, "w-order-recreated", { ...live.guard("slot-c"), orderUid: "uid-of-the-earlier-order" });
    await setWorkers(live, [{ slot: "slot-c", phase: "Ready", bmi: { name: "w-order-recreated-2", id: "a-new-bmi" } }]);
    await provider.delete!(c.id, c.outs);
    expect(await exists(c.id).catch(() => false)).toBe(false);
  });
});
