// The loop's scheduling rules, with a fake hub: debounce, one runner per order, the concurrency bound,
// requeue times, error requeue, leader gating and watch-driven enqueue.
import { ConflictError, type Kube } from "../../clients/kube";
import type { OrderRef } from "../../io/observe";
import { NotLeaderError } from "../../lib/notLeader";
import { ReconcileLoop } from "../../controller/loop";
import { PulumiCommandError } from "../../stack/pulumiProcess";
import { Slots } from "../../controller/slots";
import type { ReconcileResult } from "../../controller/reconcile";
import type { ClusterOrder } from "../../planner/types";
import { SettledOrders } from "../../controller/settledOrders";
import { bmiDigest } from "../../io/orderBmiDigests";
import { eventually } from "../support/eventually";

type WatchHandler = (type: string, obj: unknown) => void;
type WatchDone = (err?: unknown) => void;

function fakeKube(orders: ClusterOrder[]): {
  kube: Kube; emit: (path: string, obj: unknown, type?: string) => void; end: (path: string, err?: unknown) => void;
  queries: Map<string, Record<string, unknown>[]>;
} {
  const handlers = new Map<string, { onEvent: WatchHandler; onDone: WatchDone }>();
  const queries = new Map<string, Record<string, unknown>[]>();
  const kube = {
    listClusterOrders: async () => orders,
    collectionVersion: async () => "100",
    watch: (path: string, query: Record<string, unknown>, onEvent: WatchHandler, onDone: WatchDone) => {
      handlers.set(path, { onEvent, onDone });
      queries.set(path, [...(queries.get(path) ?? []), query]);
      return () => handlers.delete(path);
    },
  } as unknown as Kube;
  return {
    kube, queries,
    emit: (path, obj, type = "MODIFIED") => handlers.get(path)?.onEvent(type, obj),
    end: (path, err) => {
      const h = handlers.get(path);
      handlers.delete(path);
      h?.onDone(err);
    },
  };
}

const order = (ns: string, name: string, uid = `${ns}-${name}-uid`): ClusterOrder =>
  ({ metadata: { namespace: ns, name, uid }, spec: {} });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const noLog = () => undefined;

describe("ReconcileLoop", () => {
  let loop: ReconcileLoop | undefined;
  afterEach(() => loop?.stop());

  /** Starts a loop over `kube` that records the orders it reconciles, from after its first tick. */
  async function startRecording(kube: Kube, debounceMs: number): Promise<string[]> {
    const seen: string[] = [];
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 60_000, debounceMs,
      reconcile: async (ref) => { seen.push(`${ref.namespace}/${ref.name}`); return { action: "skipped" }; },
    });
    await loop.start();
    await sleep(100);
    seen.length = 0;
    return seen;
  }

  it("reconciles every order on the timer tick and never runs one order twice at a time", async () => {
    const active = new Map<string, number>();
    let maxSame = 0;
    let calls = 0;
    const { kube } = fakeKube([order("a", "one"), order("a", "two")]);
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 50, debounceMs: 0, concurrency: 4,
      reconcile: async (ref: OrderRef) => {
        const k = `${ref.namespace}/${ref.name}`;
        active.set(k, (active.get(k) ?? 0) + 1);
        maxSame = Math.max(maxSame, active.get(k)!);
        calls++;
        await sleep(120); // longer than the tick: the next ticks find it running
        active.set(k, active.get(k)! - 1);
        return { action: "skipped" };
      },
    });
    await loop.start();
    // Each order reconciled twice means ticks came while it ran; waited for, not slept for (a loaded machine
    // runs fewer ticks in a fixed time).
    await eventually(async () => (calls >= 4 ? true : undefined), 30_000);
    loop.stop();
    await loop.drain();
    expect(calls).toBeGreaterThanOrEqual(4);
    expect(maxSame).toBe(1);
  });

  it("bounds concurrency", async () => {
    let running = 0;
    let peak = 0;
    const { kube } = fakeKube(Array.from({ length: 6 }, (_, i) => order("b", `o${i}`)));
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 10_000, concurrency: 2,
      reconcile: async () => {
        running++;
        peak = Math.max(peak, running);
        await sleep(50);
        running--;
        return { action: "skipped" };
      },
    });
    await loop.start();
    await sleep(400);
    expect(peak).toBe(2);
  });

  // runLoop's split: many reconciles at once, few pulumi runs. Long updates must not hold back the pass
  // over unchanged orders (the old loop ran both in the same 4 slots), nor may more updates run than slots.
  it("reconciles unchanged orders while the updates hold every pulumi slot, and never runs more updates than slots", async () => {
    const slots = new Slots(2);
    let updating = 0;
    let peakUpdating = 0;
    let updatesEnded = 0;
    const skippedEnds: number[] = [];
    const { kube } = fakeKube([order("s", "up1"), order("s", "up2"), order("s", "up3"), ...Array.from({ length: 30 }, (_, i) => order("s", `o${i}`))]);
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 10_000, concurrency: 8,
      reconcile: async (ref) => {
        await sleep(20); // observation and planning
        if (!ref.name.startsWith("up")) {
          skippedEnds.push(Date.now());
          return { action: "skipped" };
        }
        await slots.run(async () => {
          peakUpdating = Math.max(peakUpdating, ++updating);
          await sleep(250);
          updating--;
        });
        updatesEnded = Math.max(updatesEnded, Date.now());
        return { action: "up" };
      },
    });
    await loop.start();
    await sleep(1000);
    expect(skippedEnds).toHaveLength(30);
    expect(peakUpdating).toBe(2);
    // The third update waited for a slot (two rounds of 250 ms); meanwhile the other reconcilers went through
    // all 30 unchanged orders (30 × 20 ms, 5 at a time, ~120 ms), long before the first updates ended.
    expect(Math.max(...skippedEnds)).toBeLessThan(updatesEnded - 250);
  });

  it("reports a pass once every order of a tick was reconciled after it, and warns when a tick overruns a pass", async () => {
    const passes: { orders: number; durationMs: number }[] = [];
    const warnings: string[] = [];
    const { kube } = fakeKube(Array.from({ length: 5 }, (_, i) => order("p", `o${i}`)));
    loop = new ReconcileLoop({
      kube, intervalMs: 10_000, concurrency: 2, onPass: (p) => passes.push(p),
      log: (level, msg) => void (level === "warn" && warnings.push(msg)),
      reconcile: async () => {
        await sleep(40);
        return { action: "skipped" };
      },
    });
    await loop.start();
    await sleep(400);
    // Five orders, two at a time, 40 ms each: three rounds.
    expect(passes).toHaveLength(1);
    expect(passes[0].orders).toBe(5);
    expect(passes[0].durationMs).toBeGreaterThanOrEqual(110);
    expect(warnings).toEqual([]);
    loop.stop();

    const slow = new ReconcileLoop({
      kube, intervalMs: 100, concurrency: 1, onPass: (p) => passes.push(p),
      log: (level, msg) => void (level === "warn" && warnings.push(msg)),
      reconcile: async () => {
        await sleep(60);
        return { action: "skipped" };
      },
    });
    loop = slow;
    await slow.start();
    await sleep(250);
    slow.stop();
    await slow.drain();
    expect(warnings.some((w) => w.includes("interval is shorter than a pass"))).toBe(true);
  });

  it("backs off a failing order exponentially up to the cap; ticks and status events do not shorten it, one spec edit per delay does", async () => {
    const ORDERS = "/apis/osac.openshift.io/v1alpha1/clusterorders";
    const at: number[] = [];
    let fail = true;
    const t0 = Date.now();
    const co = { ...order("f", "bad"), metadata: { ...order("f", "bad").metadata, generation: 1 } };
    const { kube, emit } = fakeKube([co]);
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 50, debounceMs: 10, errorRequeueMs: 200, maxErrorRequeueMs: 800,
      reconcile: async (): Promise<ReconcileResult> => {
        at.push(Date.now() - t0);
        if (fail) throw new Error("DeleteRefused");
        return { action: "up" };
      },
    });
    await loop.start();
    await sleep(1_550); // failures at ~0, 200, 600, 1400 (delays 200, 400, 800: the next at ~2200), a tick every 50 ms
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    expect(at.length).toBe(4);
    expect(gaps[0]).toBeGreaterThanOrEqual(180);
    expect(gaps[1]).toBeGreaterThanOrEqual(380);
    expect(gaps[2]).toBeGreaterThanOrEqual(780);
    // our own status write (same generation) is no reason to retry early
    const gen = (g: number) => ({ metadata: { ...co.metadata, generation: g } });
    emit(ORDERS, gen(1));
    await sleep(150);
    expect(at.length).toBe(4);
    // a spec edit is: one retry at once; a second edit within the delay waits for its end
    const before = at.length;
    emit(ORDERS, gen(2));
    await sleep(150);
    expect(at.length).toBe(before + 1);
    emit(ORDERS, gen(3));
    await sleep(400);
    expect(at.length).toBe(before + 1);
    // the delay's end retries; success resets the backoff (the ticks reconcile it again), and the next
    // failure waits the first delay again
    fail = false;
    await sleep(400);
    expect(at.length).toBeGreaterThanOrEqual(before + 2);
    fail = true;
    const resumed = at.length;
    await sleep(450);
    const again = at.slice(resumed);
    expect(again.length).toBe(2);
    expect(again[1] - again[0]).toBeGreaterThanOrEqual(180);
    expect(again[1] - again[0]).toBeLessThan(390);
  });

  it("requeues a reconcile refused for not leading without counting it as the order's failure", async () => {
    const at: number[] = [];
    const lines: string[] = [];
    const t0 = Date.now();
    const { kube } = fakeKube([order("g", "x")]);
    loop = new ReconcileLoop({
      kube, log: (level, msg) => lines.push(`${level} ${msg}`), intervalMs: 60_000, errorRequeueMs: 300,
      reconcile: async (): Promise<ReconcileResult> => {
        at.push(Date.now() - t0);
        if (at.length <= 2) throw new NotLeaderError("not the leader: up of stack g--x refused");
        throw new Error("boom");
      },
    });
    await loop.start();
    await sleep(2_500);
    // two refusals, each requeued after ~1 s; then failures back off from the first delay (300, 600)
    expect(lines.filter((l) => l.startsWith("error"))).toHaveLength(at.length - 2);
    expect(at[3] - at[2]).toBeLessThan(500);
  });

  it("reads an order again soon after a conflict, without the failure backoff; conflicts in a row double their own delay", async () => {
    const at: number[] = [];
    const lines: string[] = [];
    const t0 = Date.now();
    const { kube } = fakeKube([order("c", "x")]);
    // three conflicts, then a failure, then success
    const outcomes = ["conflict", "conflict", "conflict", "fail", "ok"];
    loop = new ReconcileLoop({
      kube, log: (level, msg) => lines.push(`${level} ${msg}`), intervalMs: 60_000, errorRequeueMs: 600, conflictRequeueMs: 100,
      reconcile: async (): Promise<ReconcileResult> => {
        at.push(Date.now() - t0);
        const o = outcomes[at.length - 1] ?? "ok";
        if (o === "conflict") throw new ConflictError("patch ClusterOrder c/x", 409, "Conflict", "the object has been modified");
        if (o === "fail") throw new Error("boom");
        return { action: "skipped" };
      },
    });
    await loop.start();
    await eventually(async () => (at.length >= 5 ? true : undefined), 5_000);
    const gaps = at.slice(1).map((t, i) => t - at[i]);
    // conflicts: 100, 200, 400 ms; the failure after them waits the first failure delay, 600 ms (not a fourth doubling)
    expect(gaps[0]).toBeGreaterThanOrEqual(90);
    expect(gaps[0]).toBeLessThan(400);
    expect(gaps[1]).toBeGreaterThanOrEqual(190);
    expect(gaps[2]).toBeGreaterThanOrEqual(390);
    expect(gaps[3]).toBeGreaterThanOrEqual(590);
    expect(gaps[3]).toBeLessThan(1_100);
    expect(lines.filter((l) => l.includes("met a newer version"))).toHaveLength(3);
    expect(lines.filter((l) => l.startsWith("info") && l.includes("met a newer version"))).toHaveLength(3);
    expect(lines.filter((l) => l.startsWith("error"))).toHaveLength(1);
  });

  it("a sharded replica dispatches only orders it owns, ends its pass without the others, and leaves a refused order of another shard alone", async () => {
    const passes: { orders: number }[] = [];
    const { kube, emit } = fakeKube([order("s", "mine", "uid-mine"), order("s", "theirs", "uid-theirs"), order("s", "moved", "uid-moved")]);
    const owned = new Set(["uid-mine", "uid-moved", "uid-new"]);
    const uids = new Map<string, string>();
    const seen: string[] = [];
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 60_000, debounceMs: 10, onPass: (p) => passes.push(p),
      ownership: {
        noteUid: (ref, uid) => void uids.set(`${ref.namespace}/${ref.name}`, uid),
        ownsRef: (ref) => (uids.has(`${ref.namespace}/${ref.name}`) ? owned.has(uids.get(`${ref.namespace}/${ref.name}`)!) : undefined),
      },
      reconcile: async (ref): Promise<ReconcileResult> => {
        seen.push(ref.name);
        // Re-created meanwhile under another uid, of a shard this replica does not hold: the reconcile refuses it.
        if (ref.name === "moved") {
          uids.set("s/moved", "uid-theirs-now");
          throw new NotLeaderError("not the leader: s/moved belongs to a shard this replica does not hold");
        }
        return { action: "skipped" };
      },
    });
    await loop.start();
    await sleep(300);
    expect(seen.sort()).toEqual(["mine", "moved"]);
    expect(passes).toEqual([expect.objectContaining({ orders: 3 })]);
    await sleep(1_300); // a refusal of an order still ours would come back after 1 s
    expect(seen.filter((n) => n === "moved")).toHaveLength(1);
    // A new order's event carries its uid: an owned one is reconciled, another replica's is not.
    emit("/apis/osac.openshift.io/v1alpha1/clusterorders", { metadata: { namespace: "s", name: "new", uid: "uid-new", generation: 1 } });
    emit("/apis/osac.openshift.io/v1alpha1/clusterorders", { metadata: { namespace: "s", name: "other", uid: "uid-other", generation: 1 } });
    await sleep(200);
    expect(seen.sort()).toEqual(["mine", "moved", "new"]);
  });

  it("logs a failed update redacted and bounded: a token echoed by the engine does not reach the log", async () => {
    const token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
    const opaque = "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy+/=";
    const stdout = `${"progress line\n".repeat(400)}error: BareMetalInstances/Create: INVALID_ARGUMENT: bad request {"user_data":"${opaque}","authorization":"Bearer ${token}"}\n`;
    const err = new PulumiCommandError({ code: 255, stdout, stderr: `token=${opaque}\n` }, ["up"]);
    const logged: string[] = [];
    const { kube } = fakeKube([order("h", "x")]);
    loop = new ReconcileLoop({
      kube, log: (level, msg, fields) => logged.push(JSON.stringify({ level, msg, ...fields })), intervalMs: 60_000,
      reconcile: async () => { throw err; },
    });
    await loop.start();
    await sleep(200);
    const line = logged.find((l) => l.includes("reconcile of h/x failed"));
    expect(line).toBeDefined();
    expect(line).not.toContain(token);
    expect(line).not.toContain(opaque);
    expect(line).not.toContain("eyJ");
    expect(line!.length).toBeLessThan(1_000);
    expect(line).toContain("INVALID_ARGUMENT");
  });

  it("honours requeueAt and requeues failures after errorRequeueMs", async () => {
    const times: Record<string, number[]> = { ok: [], bad: [] };
    const t0 = Date.now();
    const { kube } = fakeKube([order("c", "ok"), order("c", "bad")]);
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 60_000, errorRequeueMs: 150,
      reconcile: async (ref): Promise<ReconcileResult> => {
        times[ref.name].push(Date.now() - t0);
        if (ref.name === "bad") throw new Error("boom");
        return { action: "up", requeueAt: new Date(Date.now() + 1_200) };
      },
    });
    await loop.start();
    await sleep(1_600);
    expect(times.ok.length).toBe(2);
    expect(times.ok[1] - times.ok[0]).toBeGreaterThanOrEqual(1_100);
    expect(times.bad.length).toBeGreaterThanOrEqual(3);
  });

  it("idles while not the leader", async () => {
    let leader = false;
    let calls = 0;
    const { kube } = fakeKube([order("d", "x")]);
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 60_000, isLeader: () => leader,
      reconcile: async () => { calls++; return { action: "skipped" }; },
    });
    await loop.start();
    await sleep(300);
    expect(calls).toBe(0);
    leader = true;
    await sleep(1_300);
    expect(calls).toBe(1);
  });

  it("starts watches from the current version, restarts them from the last one seen, and lists again only after 410 Gone", async () => {
    const agents = "/apis/agent-install.openshift.io/v1beta1/agents";
    const { kube, emit, end, queries } = fakeKube([order("e", "co1", "uid-1")]);
    const seen = await startRecording(kube, 10);
    // The first watch starts from the collection's current version: the tick already enqueued every order.
    expect(queries.get(agents)).toEqual([{ allowWatchBookmarks: true, resourceVersion: "100" }]);
    emit(agents, { metadata: { namespace: "e", name: "a1", resourceVersion: "5", labels: { "osac.openshift.io/cluster-order": "uid-1" } } });
    // A bookmark moves the resume point but is no change of any order.
    emit(agents, { kind: "Agent", metadata: { resourceVersion: "9" } }, "BOOKMARK");
    await sleep(100);
    expect(seen).toEqual(["e/co1"]);
    // client-node's idle timeout: the restart resumes, so nothing is listed (and enqueued) again.
    end(agents, new DOMException("The operation was aborted due to timeout", "TimeoutError"));
    await sleep(50);
    expect(queries.get(agents)?.[1]).toEqual({ allowWatchBookmarks: true, resourceVersion: "9" });
    // The version was compacted away: the server says 410 in an ERROR event; the next start lists
    // everything again (events may have been lost: a full resync).
    emit(agents, { kind: "Status", code: 410, reason: "Expired" }, "ERROR");
    end(agents);
    await sleep(50);
    expect(queries.get(agents)?.[2]).toEqual({ allowWatchBookmarks: true });
    await sleep(100);
    expect(seen).toEqual(["e/co1"]);
  });

  it("maps watch events of Agents, NodePools and InfraEnvs to their order (debounced)", async () => {
    const { kube, emit } = fakeKube([order("e", "co1", "uid-1")]);
    const seen = await startRecording(kube, 100);
    // Three events within the debounce window: one reconcile.
    emit("/apis/agent-install.openshift.io/v1beta1/agents",
      { metadata: { namespace: "e", name: "a1", labels: { "osac.openshift.io/cluster-order": "uid-1" } } });
    emit("/apis/hypershift.openshift.io/v1beta1/nodepools",
      { metadata: { namespace: "e", name: "np", labels: { "osac.openshift.io/clusterorder": "co1" } } });
    emit("/apis/agent-install.openshift.io/v1beta1/infraenvs",
      { metadata: { namespace: "e", name: "co1-infraenv", ownerReferences: [{ kind: "ClusterOrder", name: "co1" }] } });
    await sleep(400);
    expect(seen).toEqual(["e/co1"]);
    // An unbound Agent of the order's InfraEnv maps through its InfraEnv label.
    emit("/apis/agent-install.openshift.io/v1beta1/agents",
      { metadata: { namespace: "e", name: "a2", labels: { "infraenvs.agent-install.openshift.io": "co1-infraenv" } } });
    await sleep(300);
    expect(seen).toEqual(["e/co1", "e/co1"]);
  });

  it("a timer pass skips an order still settled, and a watch event or a new version of the order sends it to a full reconcile", async () => {
    const orders = [{ ...order("e", "co1", "uid-1"), metadata: { ...order("e", "co1", "uid-1").metadata, resourceVersion: "7" } }];
    const { kube, emit } = fakeKube(orders);
    const settled = new SettledOrders({ listBmiDigests: async () => new Map(), pinOf: async () => "", resyncMs: 600_000 });
    const seen: string[] = [];
    const outcomes: string[] = [];
    const settledPlan = { nodePoolReplicas: {}, workers: [], fence: [], events: [],
      status: { workers: [], desiredWorkers: 0, currentWorkers: 0, readyWorkers: 0, conditions: [] } };
    loop = new ReconcileLoop({
      kube, log: noLog, intervalMs: 150, debounceMs: 0, settled,
      onSettledCheck: (_ref, outcome) => outcomes.push(outcome),
      reconcile: async (ref) => {
        seen.push(`${ref.namespace}/${ref.name}`);
        // What reconcileOrder does for a skip that leaves the order settled.
        settled.record(settled.begin(ref), { resourceVersion: "7", bmiDigest: bmiDigest([]), pin: "", plan: settledPlan });
        return { action: "skipped" };
      },
    });
    await loop.start();
    // Three more ticks, waited for (a loaded machine runs fewer in a fixed time; CI saw two in 500 ms).
    await eventually(async () => (outcomes.length >= 3 ? true : undefined), 30_000);
    expect(seen).toEqual(["e/co1"]);
    expect(outcomes[0]).toBe("none");
    expect(outcomes.slice(1).every((o) => o === "settled")).toBe(true);
    expect(outcomes.length).toBeGreaterThanOrEqual(3);
    emit("/apis/agent-install.openshift.io/v1beta1/agents",
      { metadata: { namespace: "e", name: "a1", labels: { "osac.openshift.io/cluster-order": "uid-1" } } });
    await sleep(100);
    expect(seen).toEqual(["e/co1", "e/co1"]);
    // A version the tick lists that differs from the settled one: reconciled in full.
    orders[0].metadata.resourceVersion = "8";
    await sleep(200);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(outcomes).toContain("order-changed");
  });
});
