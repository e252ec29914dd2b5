// lib/deadline.ts: a promise bounded by time gives its own outcome when it comes first, the late value (or
// error) when the time comes first, and leaves no timer behind either way.
import { within } from "../../lib/deadline";

describe("within", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("gives the promise's value when it comes first, and clears its timer", async () => {
    await expect(within(Promise.resolve(7), 1_000, () => 0)).resolves.toBe(7);
    expect(jest.getTimerCount()).toBe(0);
  });

  it("gives the promise's rejection when it comes first", async () => {
    await expect(within(Promise.reject(new Error("refused")), 1_000, () => 0)).rejects.toThrow("refused");
    expect(jest.getTimerCount()).toBe(0);
  });

  it("gives what onLate returns once the time has passed", async () => {
    const never = new Promise<number>(() => undefined);
    const r = within(never, 1_000, () => "late");
    jest.advanceTimersByTime(999);
    await Promise.resolve();
    let settled = false;
    void r.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    jest.advanceTimersByTime(1);
    await expect(r).resolves.toBe("late");
    expect(jest.getTimerCount()).toBe(0);
  });

  it("rejects with what onLate throws", async () => {
    const r = within(new Promise<number>(() => undefined), 50, (): never => {
      throw new Error("no answer within 50 ms");
    });
    jest.advanceTimersByTime(50);
    await expect(r).rejects.toThrow("no answer within 50 ms");
  });
});
