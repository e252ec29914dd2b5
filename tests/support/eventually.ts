// The test suite's one polling helper: controllers and simulators act asynchronously.

/** Polls `probe` until it returns a value (not undefined), or fails after timeoutMs. */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 10_000, intervalMs = 25): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Retries an assertion until it passes; after timeoutMs its last failure is thrown. */
export async function eventuallyPasses(assertion: () => Promise<void>, timeoutMs = 30_000, intervalMs = 200): Promise<void> {
  let last: unknown;
  const passed = await eventually(async () => {
    try {
      await assertion();
      return true;
    } catch (e) {
      last = e;
      return undefined;
    }
  }, timeoutMs, intervalMs).catch(() => false);
  if (!passed) throw last;
}
