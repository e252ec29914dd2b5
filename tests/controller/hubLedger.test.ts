// The reconciler's hub-wide count of creates and deletes in flight (controller/hubLedger.ts): what each
// plan records, what a read of the world replaces, and what it must not.
import { HubLedger } from "../../controller/hubLedger";
import type { InFlight } from "../../planner/types";
import { bmRequest, bmiFor, planOf, snap } from "../planner/builders";

function ledger(world: () => Promise<ReadonlyMap<string, InFlight>>) {
  let now = 0;
  const l = new HubLedger({ observe: world, maxAgeMs: 1_000, now: () => now });
  return { l, advance: (ms: number) => { now += ms; } };
}

const counts = (entries: Record<string, [number, number]>) =>
  new Map(Object.entries(entries).map(([uid, [creates, deletes]]) => [uid, { creates, deletes }]));

describe("the hub ledger", () => {
  it("is unknown until the world was read, then counts every order but the asking one", async () => {
    const { l } = ledger(async () => counts({ a: [2, 1], b: [1, 0] }));
    expect(l.others("a")).toBeUndefined();
    await l.refresh();
    expect(l.others("a")).toEqual({ creates: 1, deletes: 0 });
    expect(l.others("c")).toEqual({ creates: 3, deletes: 1 });
  });

  it("records what a plan leaves in flight at once, so the next order's plan sees it before any read", async () => {
    const { l } = ledger(async () => counts({}));
    await l.refresh();
    const o = { nodeRequests: [bmRequest("compute", 3)] };
    const p = planOf(o);
    l.record(snap(o), p);
    expect(l.others("another order")).toEqual({ creates: 3, deletes: 0 });
    const deleting = { nodeRequests: [bmRequest("compute", 0)], bmis: [bmiFor("w9", { deleting: true, state: "Deleting" as const })] };
    l.record(snap(deleting), planOf(deleting));
    expect(l.others("another order")?.deletes).toBe(1);
  });

  it("a read replaces what finished, but not a count recorded after it began, nor the plan of a reconcile under way", async () => {
    let answer = counts({ a: [0, 0], b: [0, 0] });
    const { l, advance } = ledger(async () => answer);
    await l.refresh();
    const three = { nodeRequests: [bmRequest("compute", 3)] };
    const uid = snap(three).order.metadata.uid;
    l.begin(uid);
    l.record(snap(three), planOf(three));
    advance(2_000);
    await l.refresh(); // the world does not show the fenced creates yet: the reconcile is under way
    expect(l.others("x")?.creates).toBe(3);
    l.end(uid);
    answer = counts({ [uid]: [1, 0] }); // two of them bound since
    advance(2_000);
    await l.refresh();
    expect(l.others("x")?.creates).toBe(1);
  });

  it("a reconcile that ended while the world was read keeps its count: the read may predate its fence", async () => {
    let release!: () => void;
    let answer = counts({});
    const { l, advance } = ledger(() => new Promise((resolve) => { release = () => resolve(answer); }));
    const first = l.refresh();
    release();
    await first;
    const three = { nodeRequests: [bmRequest("compute", 3)] };
    const uid = snap(three).order.metadata.uid;
    l.begin(uid);
    l.record(snap(three), planOf(three)); // planned before the read
    advance(2_000);
    const reading = l.refresh(); // the read starts: the world does not show the fence yet
    advance(10);
    l.end(uid); // the reconcile ends while the read is out
    answer = counts({ [uid]: [0, 0] });
    release();
    await reading;
    expect(l.others("x")?.creates).toBe(3);
  });

  it("reads the world once per interval, and a failed read makes the count unknown (nothing under a hub cap starts)", async () => {
    let reads = 0;
    let fail = false;
    const { l, advance } = ledger(async () => {
      reads++;
      if (fail) throw new Error("apiserver down");
      return counts({ a: [1, 0] });
    });
    await Promise.all([l.refresh(), l.refresh()]);
    await l.refresh();
    expect(reads).toBe(1);
    fail = true;
    advance(1_500);
    await l.refresh();
    expect(l.others("b")).toBeUndefined();
  });
});
