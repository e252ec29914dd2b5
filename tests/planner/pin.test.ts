// The rollback pin is read from the stack's config on every reconcile: a value `rollback` did not write
// is refused with a message that says what it is, not turned into counts. A pinned order is honest about
// it: `desiredWorkers` keeps the request, and the Pinned condition names the update and what is ignored.
import { formatPin, parsePin } from "../../planner/pin";
import { bmiFor, bmRequest, boundAgent, conditionOf, entry, iso, MIN, planOf } from "./builders";

describe("parsePin", () => {
  it("reads what rollback writes, and the bare counts of earlier releases", () => {
    expect(parsePin(formatPin({ counts: { compute: 3, gpu: 0 }, update: 7 }))).toEqual({ counts: { compute: 3, gpu: 0 }, update: 7 });
    expect(parsePin(JSON.stringify({ compute: 3, gpu: 0 }))).toEqual({ counts: { compute: 3, gpu: 0 } });
    expect(parsePin("{}")).toEqual({ counts: {} });
  });

  it.each([
    ["not JSON", "compute=3"],
    ["a list", "[3]"],
    ["a number", "3"],
    ["a count that is a string", '{"compute":"3"}'],
    ["a negative count", '{"compute":-1}'],
    ["a fractional count", '{"compute":1.5}'],
    ["counts that are not a map", '{"counts":[1]}'],
    ["an update that is not a positive integer", '{"counts":{"compute":1},"update":0}'],
    ["a key it does not know", '{"counts":{"compute":1},"by":"admin"}'],
  ])("refuses %s", (_what, raw) => {
    expect(() => parsePin(raw)).toThrow(/^the stack config 'pin' is not a map of node set to worker count/);
  });
});

describe("a pinned order", () => {
  const ready = (name: string) => entry(name, { phase: "Ready", attemptCount: 0, readySince: iso(-3 * 60 * MIN) });
  // The tenant asks for 3 compute workers; an admin rolled back to update 4, which had 2.
  const world = {
    nodeRequests: [bmRequest("compute", 3)],
    workers: ["r1", "r2"].map(ready),
    bmis: ["r1", "r2"].map((x) => bmiFor(x)),
    agents: ["r1", "r2"].map((x) => boundAgent(x, x, "added-to-existing-cluster")),
  };

  it("plans the pinned counts, reports the request as desired and says which update it follows and what it ignores", () => {
    const p = planOf({ ...world, pin: { counts: { compute: 2 }, update: 4 } });
    expect(p.workers).toHaveLength(2);
    expect(p.fence).toHaveLength(0); // no third worker while pinned
    expect(p.status.desiredWorkers).toBe(3);
    expect(p.targetWorkers).toBe(2);
    const c = conditionOf(p, "Pinned");
    expect(c).toMatchObject({ status: "True", reason: "RolledBack" });
    expect(c?.message).toBe("rolled back: the workers follow the counts of update 4 (compute=2) until `baremetal-workers unpin`; " +
      "the requested compute=3 is ignored meanwhile");
  });

  it("unpinned, follows the request and says so", () => {
    const p = planOf(world);
    expect(p.fence).toHaveLength(1);
    expect(p.status.desiredWorkers).toBe(3);
    expect(p.targetWorkers).toBeUndefined();
    expect(conditionOf(p, "Pinned")).toMatchObject({ status: "False", reason: "FollowsRequest" });
  });
});
