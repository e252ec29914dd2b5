// A bound on how many of a kind of work run at once, first come first served. The loop reconciles many
// orders at once (observation is a few cheap reads), but at most a few of them may run pulumi at the same
// time (each update is three Node processes and the CLI: the machine's CPU). Without this split, a timer
// pass over hundreds of unchanged orders held the same slots as the updates, and every update waited
// behind the pass (2026-12-03 bench: a 31 s pass of every 60 s interval at 300 orders).

export class Slots {
  private active = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`a slot limit must be a positive integer, not ${limit}`);
  }

  /** Work running now. */
  get inUse(): number {
    return this.active;
  }

  /** Work waiting for a slot. */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Runs fn once a slot is free, and frees the slot when fn settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiters.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      // Hand the slot straight to the next waiter (active stays the same), so no newcomer can overtake it.
      const next = this.waiters.shift();
      if (next) next();
      else this.active--;
    }
  }
}
