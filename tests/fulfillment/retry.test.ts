// The shared retry helper: backoff arithmetic, attempt and deadline bounds, and the retryable predicate.
import { backoffDelayMs, DEFAULT_RETRY_POLICY, retry, RetryClock } from "../../clients/retry";

function fakeClock(random = 0): RetryClock & { sleeps: number[] } {
  let now = 0;
  const sleeps: number[] = [];
  return { sleeps, now: () => now, random: () => random, sleep: async (ms) => { sleeps.push(ms); now += ms; } };
}

describe("backoffDelayMs", () => {
  const policy = { ...DEFAULT_RETRY_POLICY, initialDelayMs: 100, multiplier: 2, maxDelayMs: 1_000, jitter: 0.5 };
  it.each([
    [1, 0, 100], [2, 0, 200], [3, 0, 400], [4, 0, 800], [5, 0, 1_000], [9, 0, 1_000],
    [1, 0.999999, 50], [3, 0.5, 300],
  ])("attempt %i with random %d waits %i ms", (attempt, random, expected) => {
    expect(backoffDelayMs(attempt, policy, random)).toBe(expected);
  });
});

describe("retry", () => {
  const transient = new Error("transient");
  const fatal = new Error("fatal");
  const retryable = (e: unknown) => e === transient;

  it("retries retryable failures with growing delays until success", async () => {
    const clock = fakeClock();
    let calls = 0;
    const out = await retry(async () => (++calls < 3 ? Promise.reject(transient) : "ok"),
      { retryable, clock, policy: { initialDelayMs: 10, multiplier: 3, jitter: 0 } });
    expect(out).toBe("ok");
    expect(calls).toBe(3);
    expect(clock.sleeps).toEqual([10, 30]);
  });

  it("rethrows a non-retryable failure at once", async () => {
    const clock = fakeClock();
    let calls = 0;
    await expect(retry(async () => { calls++; throw fatal; }, { retryable, clock })).rejects.toBe(fatal);
    expect(calls).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("stops after maxAttempts and rethrows the last failure", async () => {
    const clock = fakeClock();
    let calls = 0;
    await expect(retry(async () => { calls++; throw transient; }, { retryable, clock, policy: { maxAttempts: 3 } }))
      .rejects.toBe(transient);
    expect(calls).toBe(3);
  });

  it("does not start a wait that would cross the overall deadline", async () => {
    const clock = fakeClock();
    let calls = 0;
    await expect(retry(async () => { calls++; throw transient; }, {
      retryable, clock, policy: { maxAttempts: 100, initialDelayMs: 100, multiplier: 2, jitter: 0, overallDeadlineMs: 500 },
    })).rejects.toBe(transient);
    expect(clock.sleeps).toEqual([100, 200]); // the next wait (400) would end at 700 > 500
    expect(calls).toBe(3);
  });
});
