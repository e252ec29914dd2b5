// Names of new slots and BMI incarnations derive from the observation (order uid, resourceVersion) and a
// counter within one planning pass: the same observation planned twice names the same BMIs, an observation
// after the fence (a new resourceVersion) names new ones, and every name is valid where it is used.
import { incarnationNames, nameSeed } from "../../io/incarnationNames";
import { fingerprint, plan } from "../../planner";
import { bmiName, DNS_LABEL } from "../../planner/names";
import type { ClusterOrder, Snapshot } from "../../planner/types";
import { bmiFor, bmRequest, entry, snap } from "../planner/builders";

function withSeededNames(s: Snapshot): Snapshot {
  return { ...s, newName: incarnationNames(nameSeed(s.order)) };
}

/** A scale-up of compute 2 -> 4 with one Failed worker due for its replacement: new slots and a new incarnation. */
function scaleUp(resourceVersion = "100"): Snapshot {
  const s = snap({
    nodeRequests: [bmRequest("compute", 4)],
    workers: [entry("a", { phase: "Ready" }), entry("b", { phase: "Failed", bareMetalInstance: { name: "co1-old-b" }, attemptCount: 1 })],
    bmis: [bmiFor("a")],
  });
  return { ...s, order: { ...s.order, metadata: { ...s.order.metadata, resourceVersion } } };
}

/** The names this plan drew: the BMI of every fenced incarnation, and the name of every new slot. */
function newNamesOf(p: ReturnType<typeof plan>, s: Snapshot): string[] {
  const existing = new Set((s.order.status?.workers ?? []).map((w) => w.name));
  return p.fence.flatMap((f) => [...(existing.has(f.name) ? [] : [f.name]), f.bareMetalInstance?.name ?? ""]);
}

describe("incarnation names", () => {
  it("are the same sequence for the same seed, distinct within a pass, and 8 hex digits like the random ones before", () => {
    const a = incarnationNames("uid-1/100");
    const b = incarnationNames("uid-1/100");
    const first = Array.from({ length: 2000 }, () => a());
    expect(Array.from({ length: 2000 }, () => b())).toEqual(first);
    expect(new Set(first).size).toBe(2000);
    for (const n of first) expect(n).toMatch(/^[0-9a-f]{8}$/);
  });

  it("differ for another resourceVersion or another order", () => {
    const base = Array.from({ length: 5 }, incarnationNames("uid-1/100"));
    const later = Array.from({ length: 5 }, incarnationNames("uid-1/101"));
    const other = Array.from({ length: 5 }, incarnationNames("uid-2/100"));
    expect(later.filter((n) => base.includes(n))).toEqual([]);
    expect(other.filter((n) => base.includes(n))).toEqual([]);
  });

  it("are random for an order without resourceVersion (never one read from an apiserver)", () => {
    expect(nameSeed({ metadata: { uid: "u" } })).toBe("");
    const names = Array.from({ length: 50 }, incarnationNames(""));
    expect(new Set(names).size).toBe(50);
    expect(names.every((n) => /^[0-9a-f]{8}$/.test(n))).toBe(true);
  });

  it("give valid slot and BMI names for short, long and dotted order names", () => {
    const next = incarnationNames("uid-x/7");
    for (const order of ["co1", "a".repeat(53), "x".repeat(200), "my.cluster.example", "c-1.2"]) {
      const opaque = next();
      expect(opaque).toMatch(DNS_LABEL);
      expect(bmiName(order, opaque)).toMatch(DNS_LABEL);
    }
  });

  it("make the same snapshot plan to the same slots and BMIs, in every field", () => {
    const s = scaleUp();
    const p1 = plan(withSeededNames(s));
    const p2 = plan(withSeededNames(s));
    expect(p1.fence).toHaveLength(3); // b's new incarnation and two new slots
    expect(newNamesOf(p1, s)).toHaveLength(5);
    expect(p2).toEqual(p1);
    expect(fingerprint(p2)).toBe(fingerprint(p1));
    for (const n of newNamesOf(p1, s)) expect(n).toMatch(DNS_LABEL);
  });

  it("name new BMIs differently once the fence moved the resourceVersion", () => {
    const s = scaleUp("100");
    const before = plan(withSeededNames(s));
    // The same world seen after a fence write that did not land for these workers: the resourceVersion moved.
    const after = plan(withSeededNames(scaleUp("101")));
    expect(newNamesOf(after, s)).toHaveLength(5);
    expect(newNamesOf(after, s).filter((n) => newNamesOf(before, s).includes(n))).toEqual([]);
    // The observation after the fence that did land: its entries are planned under the names it recorded, none drawn anew.
    const fencedOrder: ClusterOrder = { ...s.order, metadata: { ...s.order.metadata, resourceVersion: "102" },
      status: { ...s.order.status, workers: before.status.workers.map((w) => before.fence.find((f) => f.name === w.name) ?? w) } };
    const third = plan(withSeededNames({ ...s, order: fencedOrder }));
    expect(third.fence).toEqual([]);
    expect(third.workers.map((w) => w.bmi.name)).toEqual(expect.arrayContaining(before.fence.map((f) => f.bareMetalInstance!.name)));
  });
});
