// Slots: the bound on pulumi runs that the loop's many concurrent reconciles share.
import { Slots } from "../../controller/slots";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("Slots", () => {
  it("runs at most `limit` at once and the rest in arrival order", async () => {
    const slots = new Slots(2);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const job = (i: number) => slots.run(async () => {
      started.push(i);
      running++;
      peak = Math.max(peak, running);
      await sleep(20);
      running--;
      return i;
    });
    const all = Promise.all([0, 1, 2, 3, 4, 5].map(job));
    await sleep(5);
    expect(slots.inUse).toBe(2);
    expect(slots.waiting).toBe(4);
    expect(await all).toEqual([0, 1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(slots.inUse).toBe(0);
    expect(slots.waiting).toBe(0);
  });

  it("frees the slot when the work throws", async () => {
    const slots = new Slots(1);
    await expect(slots.run(async () => { throw new Error("update failed"); })).rejects.toThrow("update failed");
    expect(slots.inUse).toBe(0);
    await expect(slots.run(async () => "next")).resolves.toBe("next");
  });

  it("refuses a limit that is not a positive integer", () => {
    expect(() => new Slots(0)).toThrow(/positive integer/);
    expect(() => new Slots(1.5)).toThrow(/positive integer/);
  });
});
