// glibc's malloc gives freed memory back to the system only from the top of its heap. The reconciler's
// native allocations (the inline program's gRPC messages, the CLI's output, pages of BMIs with their
// ignition) come and go in bursts, so after a burst most of the heap is free but interleaved with a few
// live blocks, and the process keeps those pages: at 500 orders a third of its RSS (docs/benchmarks.md).
// malloc_trim(0) returns every free page inside the heap (madvise). Calling it now and then keeps the RSS
// near the memory in use. Where the C library is not glibc (musl) there is no such call and nothing is done.
import { glibc } from "./nativeHeap";

/** Returns the free pages of the C heap to the system. */
export type NativeTrim = () => void;

/** glibc's malloc_trim(0), called through koffi; undefined where the C library has none. */
export function glibcMallocTrim(): NativeTrim | undefined {
  try {
    const mallocTrim = glibc()?.func("int malloc_trim(size_t pad)") as ((pad: number) => number) | undefined;
    return mallocTrim && (() => void mallocTrim(0));
  } catch {
    return undefined;
  }
}

export interface TrimReport {
  /** RSS before minus RSS after (0 when it did not fall). */
  releasedBytes: number;
  durationMs: number;
}

export interface MemoryTrimmerOptions {
  trim: NativeTrim;
  /** Between trims; the timer does not keep the process alive. */
  intervalMs: number;
  rss?: () => number;
  onTrim?: (report: TrimReport) => void;
}

/** Trims the C heap on a timer and reports what each trim gave back. */
export class MemoryTrimmer {
  private timer?: NodeJS.Timeout;

  constructor(private readonly opts: MemoryTrimmerOptions) {}

  start(): void {
    if (this.timer || this.opts.intervalMs <= 0) return;
    this.timer = setInterval(() => this.trimNow(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  trimNow(): TrimReport {
    const rss = this.opts.rss ?? (() => process.memoryUsage.rss());
    const before = rss();
    const started = performance.now();
    this.opts.trim();
    const report = { releasedBytes: Math.max(0, before - rss()), durationMs: performance.now() - started };
    this.opts.onTrim?.(report);
    return report;
  }
}
