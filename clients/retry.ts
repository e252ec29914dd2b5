// The project's one retry helper: exponential backoff with jitter, bounded by attempts and by an
// overall deadline. Time and randomness are injected so callers and tests stay deterministic.

export interface RetryPolicy {
  /** Total attempts including the first; 1 disables retries. */
  maxAttempts: number;
  /** Delay before the second attempt, before jitter. */
  initialDelayMs: number;
  maxDelayMs: number;
  multiplier: number;
  /** Fraction of each delay that is randomised away: 0 = fixed delays, 1 = "full jitter". */
  jitter: number;
  /** No retry is started once this much time has passed since the first attempt (0 = no limit). */
  overallDeadlineMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  initialDelayMs: 200,
  maxDelayMs: 5_000,
  multiplier: 2,
  jitter: 0.5,
  overallDeadlineMs: 0,
};

export interface RetryClock {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Uniform in [0, 1). */
  random(): number;
}

export const systemClock: RetryClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: () => Math.random(),
};

export interface RetryOptions {
  policy?: Partial<RetryPolicy>;
  /** Decides whether a failure may be retried; anything else is rethrown at once. */
  retryable: (err: unknown) => boolean;
  clock?: RetryClock;
  /** Called before each wait, e.g. for logging; must not throw. */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
}

/** Delay before attempt `attempt + 1` (attempt counts from 1). Pure, for tests and planners. */
export function backoffDelayMs(attempt: number, policy: RetryPolicy, random: number): number {
  const exp = policy.initialDelayMs * Math.pow(policy.multiplier, Math.max(0, attempt - 1));
  const capped = Math.min(policy.maxDelayMs, exp);
  return Math.round(capped * (1 - policy.jitter * random));
}

/** Runs `op` until it succeeds, fails with a non-retryable error, or the attempts/deadline run out. */
export async function retry<T>(op: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const policy = { ...DEFAULT_RETRY_POLICY, ...options.policy };
  const clock = options.clock ?? systemClock;
  const started = clock.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await op(attempt);
    } catch (error) {
      if (attempt >= policy.maxAttempts || !options.retryable(error)) throw error;
      const delayMs = backoffDelayMs(attempt, policy, clock.random());
      if (policy.overallDeadlineMs > 0 && clock.now() - started + delayMs >= policy.overallDeadlineMs) throw error;
      options.onRetry?.({ attempt, delayMs, error });
      await clock.sleep(delayMs);
    }
  }
}
