// Faults of the environment rather than of the reconciler: the fulfillment simulator's injected faults
// (UNAVAILABLE bursts, latency past the client deadline, a Create committed whose response is lost,
// BMIs stuck in DELETING, hosts that never report MACs, no free host), a kube-apiserver restart, and
// two reconciler replicas at once. One order, taken through the steps in turn by one reconciler (a
// second one joins for the replica step). After each step: no duplicate and no orphaned BMI, no healthy
// worker deleted, convergence within a bound, and the conditions set during the fault and cleared after.
//
// This file owns its control plane (startLab without a kubeconfig) so it can restart the apiserver
// without disturbing the other suites.
import * as fs from "node:fs";
import * as path from "node:path";
import { Filter, withInstanceType, type BareMetalInstance, type FulfillmentClient } from "../../clients/fulfillment";
import { startLab, type Lab } from "../../lab";
import { restartApiserver, stopControlPlane } from "../../lab/controlplane";
import type { ClusterOrder } from "../../planner/types";
import { runDir } from "../support/env";
import { eventually, eventuallyPasses } from "../support/eventually";
import type { ReconcilerProcess } from "../support/reconciler";
import { isReady, Lane, sleep } from "./support";

jest.setTimeout(600_000);

const INTERVAL_S = 2;
/** Convergence bound after a fault clears, in timer ticks. */
const MAX_TICKS = 30;
const CONVERGE_MS = MAX_TICKS * INTERVAL_S * 1000;
const DEADLINE_MS = 2_000;

const condition = (o: ClusterOrder | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);

describe("the reconciler under fulfillment-service and control-plane faults", () => {
  let lab: Lab;
  let f: FulfillmentClient;
  let lane: Lane;
  let leader: ReconcilerProcess;
  const others: ReconcilerProcess[] = [];
  const timings: string[] = [];
  const started = Date.now();

  /** Sound after every step: no duplicates, no orphans, and `keep` (healthy BMIs) all still live. */
  async function sound(keep: string[] = []): Promise<void> {
    const inv = await lane.probe.invariants(lane.uid);
    expect(inv.duplicates).toEqual([]);
    expect(inv.orphans).toEqual([]);
    const live = await lane.liveBmiNames();
    expect(keep.filter((n) => !live.includes(n))).toEqual([]);
  }

  /** n Ready workers within the tick bound; returns the ticks it took. */
  async function converge(n: number, step: string, from = Date.now()): Promise<number> {
    const ok = await lane.converge(n, CONVERGE_MS);
    const ticks = Math.ceil((Date.now() - from) / (INTERVAL_S * 1000));
    timings.push(`${step.padEnd(40)} ${String(ticks).padStart(3)} ticks ${((Date.now() - from) / 1000).toFixed(1).padStart(6)} s`);
    if (!ok) throw new Error(`${step}: no convergence to ${n} within ${MAX_TICKS} ticks (${await lane.describe()})`);
    expect(ticks).toBeLessThanOrEqual(MAX_TICKS);
    return ticks;
  }

  async function creates(): Promise<number> {
    return (await lab.stats()).fulfillment.calls["BareMetalInstances/Create"] ?? 0;
  }

  beforeAll(async () => {
    lab = await startLab({ dir: path.join(runDir(), "lab-faults-service"), preset: "fast", hosts: 16, detached: false });
    f = lab.fulfillmentClient();
    lane = new Lane(lab, f, "svc", "fault-svc", "svc", INTERVAL_S, {
      BMW_REFRESH_INTERVAL_MS: "0",
      BMW_FULFILLMENT_DEADLINE_MS: String(DEADLINE_MS),
      BMW_AGENT_REGISTRATION_TIMEOUT_MS: "15000",
    });
    await lane.createOrder([{ nodeSet: "compute", numberOfNodes: 2, instanceType: "compute" }, { nodeSet: "gpu", numberOfNodes: 1, instanceType: "gpu" }]);
    leader = lane.start("leader");
    await converge(3, "initial create");
    await sound();
  });

  // A step that fails must not leave its fault behind for the next one.
  afterEach(async () => {
    await lab?.clearFaults();
  });

  afterAll(async () => {
    for (const r of [leader, ...others]) await r?.stop();
    if (process.env.BMW_FAULT_LOG_DIR && lab) fs.cpSync(path.join(lab.dir, "lanes"), path.join(process.env.BMW_FAULT_LOG_DIR, "service"), { recursive: true });
    process.stdout.write(`fault suite (service): ${((Date.now() - started) / 1000).toFixed(0)} s\n${timings.join("\n")}\n`);
    f?.close();
    // The restarted apiserver has a PID the lab's own record does not know: stop the control plane by its file first.
    if (lab) await stopControlPlane(path.join(lab.dir, "controlplane"));
    await lab?.stop();
  });

  it("UNAVAILABLE bursts: FulfillmentServiceUnavailable after 3 failed reconciles, nothing deleted, cleared on recovery", async () => {
    const healthy = await lane.readyBmiNames();
    const deletesBefore = (await lab.stats()).fulfillment.calls["BareMetalInstances/Delete"] ?? 0;
    // Listing and the event stream down (a settled order is skipped while its BMIs are known unchanged: the
    // broken stream sends passes back to listing, which fails); Get still answers.
    await lab.fault({ method: "BareMetalInstances/List", code: "UNAVAILABLE" });
    await lab.fault({ method: "Events/Watch", code: "UNAVAILABLE" });
    await eventuallyPasses(async () => {
      expect(condition(await lane.probe.order(), "FulfillmentServiceUnavailable")?.status).toBe("True");
    }, 90_000, 500);
    // While it lasts (List and the stream fail; Get still answers) no BMI is deleted and no worker dropped from the status.
    await sleep(3 * INTERVAL_S * 1000);
    const o = await lane.probe.order();
    expect(o?.status?.workers).toHaveLength(3);
    for (const w of o?.status?.workers ?? []) {
      const bmi = await f.bareMetalInstances.get(w.bareMetalInstance!.id!);
      expect(bmi.metadata?.deletion_timestamp).toBeFalsy();
    }
    expect((await lab.stats()).fulfillment.calls["BareMetalInstances/Delete"] ?? 0).toBe(deletesBefore);
    const t0 = Date.now();
    await lab.clearFaults();
    await eventuallyPasses(async () => {
      expect(condition(await lane.probe.order(), "FulfillmentServiceUnavailable")?.status).toBe("False");
    }, CONVERGE_MS, 500);
    await converge(3, "UNAVAILABLE burst cleared", t0);
    await sound(healthy);
  });

  it("latency past the client deadline on Create: the late commit is adopted, one BMI per slot", async () => {
    const healthy = await lane.readyBmiNames();
    const before = await creates();
    await lab.fault({ method: "BareMetalInstances/Create", latencyMs: DEADLINE_MS * 2, times: 1 });
    const t0 = Date.now();
    await lane.probe.setCount(0, 3);
    await converge(4, "Create slower than the deadline", t0);
    await sound(healthy);
    expect(await creates()).toBeGreaterThan(before);
  });

  it("commit then drop on Create: exactly one BMI for the new slot", async () => {
    const healthy = await lane.readyBmiNames();
    await lab.fault({ method: "BareMetalInstances/Create", commitThenDrop: true, times: 1 });
    const t0 = Date.now();
    await lane.probe.setCount(0, 4);
    await converge(5, "Create committed, response dropped", t0);
    await sound(healthy);
  });

  it("BMI stuck in DELETING: the worker stays Deleting with no replacement, then completes when the fault clears", async () => {
    const healthy = await lane.readyBmiNames();
    await lab.fault({ namePrefix: "svc-", stuckDeleting: true });
    await lane.probe.setCount(0, 3);
    const stuck = await eventually(async () => {
      const all = await lane.probe.bmis(lane.uid);
      return all.find((b) => b.metadata?.deletion_timestamp)?.metadata?.name;
    }, 90_000, 500);
    const createsDuring = await creates();
    // The update waits in the provider's delete; the progress reports (every 10 s by default) show it.
    await eventuallyPasses(async () => {
      const o = await lane.probe.order();
      expect(o?.status?.workers?.find((w) => w.bareMetalInstance?.name === stuck)?.phase).toBe("Deleting");
    }, 30_000, 500);
    await sleep(5 * INTERVAL_S * 1000); // five more ticks stuck
    expect((await lane.probe.order())?.status?.workers?.find((w) => w.bareMetalInstance?.name === stuck)?.phase).toBe("Deleting");
    expect(await creates()).toBe(createsDuring); // no replacement while it is stuck
    expect((await lane.probe.bmis(lane.uid)).map((b) => b.metadata?.name)).toContain(stuck);
    const t0 = Date.now();
    await lab.clearFaults();
    await converge(4, "stuck DELETING cleared", t0);
    await eventuallyPasses(async () => {
      expect((await lane.probe.bmis(lane.uid)).map((b) => b.metadata?.name)).not.toContain(stuck);
    }, CONVERGE_MS, 500);
    await sound(healthy.filter((n) => n !== stuck));
    const live = await lane.liveBmiNames();
    expect(healthy.filter((n) => !live.includes(n))).toEqual([stuck]); // only the scaled-down worker went
  });

  it("a host that never reports MACs: AgentRegistrationTimeout → Failed, WorkersFailed set; retried and cleared after", async () => {
    const healthy = await lane.readyBmiNames();
    await lab.fault({ namePrefix: "svc-", withholdMacs: true });
    await lane.probe.setCount(0, 4);
    await eventuallyPasses(async () => {
      const o = await lane.probe.order();
      const failed = o?.status?.workers?.find((w) => w.phase === "Failed");
      expect(failed?.lastFailureReason).toBe("AgentRegistrationTimeout");
      expect(condition(o, "WorkersFailed")?.status).toBe("True");
    }, 120_000, 500);
    await sound(healthy);
    const t0 = Date.now();
    await lab.clearFaults();
    await converge(5, "MACs reported again", t0);
    await eventuallyPasses(async () => {
      expect(condition(await lane.probe.order(), "WorkersFailed")?.status).toBe("False");
    }, CONVERGE_MS, 500);
    await sound(healthy);
  });

  it("no free host: Failed naming the resource class, retried once a host is free", async () => {
    const healthy = await lane.readyBmiNames();
    // Occupy every free gpu host (the order holds one of the four).
    const catalogItem = (await f.catalogItems.listAll(Filter.nameEquals("system-bmi-passthrough")))[0].id;
    const blockers: string[] = [];
    for (let i = 0; i < 3; i++) {
      const b: BareMetalInstance = withInstanceType({
        metadata: { name: `blocker-${i}`, tenant: "system", labels: { "faults/blocker": "true" } },
        spec: { catalog_item: { id: catalogItem }, user_data: "{}",
          network_attachments: [{ subnet: { id: "acme-workers-subnet" }, interface: "ens2f0", primary: true }] },
      }, "gpu");
      blockers.push((await f.bareMetalInstances.create(b)).id);
    }
    await lane.probe.setCount(1, 2);
    await eventuallyPasses(async () => {
      const o = await lane.probe.order();
      const failed = o?.status?.workers?.find((w) => w.phase === "Failed" && w.nodeSet === "gpu");
      expect(failed?.lastFailureReason).toBeDefined();
      expect(failed?.lastFailureMessage).toContain("gpu");
      expect(failed?.nextRetryTime).toBeDefined();
      expect(condition(o, "WorkersFailed")?.status).toBe("True");
    }, 90_000, 500);
    await sound(healthy);
    const t0 = Date.now();
    await f.bareMetalInstances.delete(blockers[0]);
    await converge(6, "a gpu host freed", t0);
    await eventuallyPasses(async () => {
      expect(condition(await lane.probe.order(), "WorkersFailed")?.status).toBe("False");
    }, CONVERGE_MS, 500);
    for (const id of blockers.slice(1)) await f.bareMetalInstances.delete(id);
    await sound(healthy);
  });

  it("a kube-apiserver restart mid-run: the reconciler rides it out and converges", async () => {
    const healthy = await lane.readyBmiNames();
    const t0 = Date.now();
    await lane.probe.setCount(0, 5);
    // Restart while the scale-up is being worked on.
    await eventually(async () => ((await lane.probe.order())?.status?.desiredWorkers === 7 ? true : undefined), 60_000, 200);
    await restartApiserver(path.join(lab.dir, "controlplane"), 2_000);
    expect(leader.exited()).toBe(false);
    await converge(7, "apiserver restarted mid scale-up", t0);
    await sound(healthy);
  });

  it("two replicas at once: only the Lease holder acts; after the leader dies the standby takes over", async () => {
    const standby = lane.start("standby", {}, "svc-standby");
    others.push(standby);
    await sleep(3 * INTERVAL_S * 1000);
    const healthy = await lane.readyBmiNames();
    let t0 = Date.now();
    await lane.probe.setCount(0, 6);
    await converge(8, "scale-up with two replicas", t0);
    await sound(healthy);
    const acted = (r: ReconcilerProcess) => fs.readFileSync(r.logFile, "utf8").includes('"msg":"reconciled"');
    expect(acted(standby)).toBe(false);
    leader.kill9();
    const healthy2 = await lane.readyBmiNames();
    t0 = Date.now();
    await lane.probe.setCount(0, 5);
    // The Lease (15 s) must expire before the standby acts: allow for it on top of the tick bound.
    const ok = await lane.converge(7, CONVERGE_MS + 20_000);
    timings.push(`${"standby takes over, scale-down".padEnd(40)} ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s`);
    expect(ok).toBe(true);
    expect(acted(standby)).toBe(true);
    const live = await lane.liveBmiNames();
    expect(healthy2.filter((n) => !live.includes(n))).toHaveLength(1);
    await sound();
    expect((await lab.stats()).fulfillment.creates_without_system_tenant).toBe(0);
  });

  it("the order stays consistent to the end", async () => {
    expect(isReady(await lane.probe.order(), 7)).toBe(true);
    await sound();
  });
});
