// Invariant I1 where the effect happens: the BMI provider deletes a BMI only when the planner retired its
// slot (entry persisted as Unbinding, Deleting or Failed) or its ClusterOrder is gone or being deleted.
// The decision alone, then the provider's delete against the simulator and the test plane's apiserver.
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import { Filter, FulfillmentClient } from "../../clients/fulfillment";
import { PROJECT_ROOT } from "../../automation/toolchain";
import { RunningSimulator, startSimulator } from "../../lab/fulfillment/server";
import { ORDER_LABEL } from "../../planner/names";
import type { ClusterOrder, WorkerPhase, WorkerStatus } from "../../planner/types";
import { bareMetalInstanceProvider as provider } from "../../providers/bareMetalInstance";
import type { BareMetalInstanceInputs, BareMetalInstanceOutputs, DeleteGuard } from "../../providers/bareMetalInstance";
import { deleteDecision } from "../../providers/bareMetalInstanceOps";
import { parseDeleteRefusals } from "../../providers/deleteRefusal";
import { ADMIN_TOKEN, SYSTEM_ITEM, tempDir, testSeed } from "../fulfillment/helpers";
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

  it("allows when the order is gone, re-created under the same name, or being deleted", () => {
    expect(deleteDecision(undefined, guard, bmi).allowed).toBe(true);
    expect(deleteDecision(order([entry("Ready")], { uid: "uid-2" }), guard, bmi).allowed).toBe(true);
    expect(deleteDecision(order([entry("Ready")], { deletionTimestamp: "2025-01-01T00:00:00Z" }), guard, bmi).allowed).toBe(true);
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

describe("remove", () => {
  const IGNITION = JSON.stringify({ ignition: { version: "3.4.0" }, secret: "assisted-pull-token-guard" });
  let sim: RunningSimulator;
  let dir: string;
  let tokenFile: string;
  let admin: FulfillmentClient;
  let catalogItemId: string;

  beforeAll(async () => {
    process.env.BMW_PROJECT_ROOT = PROJECT_ROOT;
    dir = tempDir("bmi-guard");
    sim = await startSimulator({ seed: testSeed(), stateDir: dir });
    tokenFile = path.join(dir, "token");
    fs.writeFileSync(tokenFile, `${ADMIN_TOKEN}\n`, { mode: 0o600 });
    admin = new FulfillmentClient({ address: sim.address, transport: { kind: "plaintext" }, tokenFile, deadlineMs: 5_000 });
    catalogItemId = (await admin.catalogItems.list({ filter: Filter.nameEquals(SYSTEM_ITEM) })).items[0].id;
  });

  afterAll(async () => {
    admin.close();
    await sim.stop();
    fs.rmSync(dir, { recursive: true, force: true });
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

  it("refuses without an entry for the BMI, without a guard, and when the order cannot be read", async () => {
    const order = await createOrder();
    const a = await bmiOf(order, "w-noentry");
    await setWorkers(order, [{ slot: "slot-other", phase: "Deleting", bmi: { name: "w-other", id: "other-id" } }]);
    expect((await refused(a.id, a.outs)).reason).toContain("records no worker");

    const b = await bmiOf(undefined, "w-noguard", undefined);
    expect(await refused(b.id, b.outs)).toMatchObject({ slot: "unknown", bmiName: "w-noguard" });

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

  it("deletes when the order is being deleted, gone, or re-created (another uid)", async () => {
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
    await setWorkers(live, [{ slot: "slot-c", phase: "Ready", bmi: { name: "w-order-recreated", id: c.id } }]);
    await provider.delete!(c.id, c.outs);
    expect(await exists(c.id).catch(() => false)).toBe(false);
  });
});
