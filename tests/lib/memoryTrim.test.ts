// lib/memoryTrim.ts: on glibc, a trim returns the pages freed below live blocks (which free() keeps), and
// the trimmer runs it on its timer and reports what it gave back.
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { glibcMallocTrim, MemoryTrimmer } from "../../lib/memoryTrim";

const glibc = Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);

describe("glibcMallocTrim", () => {
  (glibc ? it : it.skip)("returns freed native memory that free() kept to the system", () => {
    const out = execFileSync(process.execPath, ["--expose-gc", "-r", "ts-node/register/transpile-only",
      path.join(__dirname, "fragmentHeap.js"), path.join(__dirname, "../../lib/memoryTrim.ts")], { encoding: "utf8", timeout: 60_000 });
    const r = JSON.parse(out.trim().split("\n").pop() ?? "{}") as { filled: number; freed: number; trimmed: number; trim: boolean };
    expect(r.trim).toBe(true);
    expect(r.filled).toBeGreaterThan(250);
    // All but 4 MiB of the 256 MiB were freed; the trim gives back at least 150 MiB of it.
    expect(r.freed - r.trimmed).toBeGreaterThan(150);
  });

  it("is absent, not failing, where there is no glibc", () => {
    const trim = glibcMallocTrim();
    expect(trim === undefined).toBe(!glibc || process.platform !== "linux");
  });
});

describe("MemoryTrimmer", () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("trims on its timer and reports the RSS each trim released", () => {
    let rss = 500;
    const reports: { releasedBytes: number }[] = [];
    const trimmer = new MemoryTrimmer({ trim: () => void (rss -= 100), intervalMs: 1_000, rss: () => rss, onTrim: (r) => reports.push(r) });
    trimmer.start();
    jest.advanceTimersByTime(999);
    expect(reports).toHaveLength(0);
    jest.advanceTimersByTime(2_001);
    expect(reports.map((r) => r.releasedBytes)).toEqual([100, 100, 100]);
    trimmer.stop();
    jest.advanceTimersByTime(10_000);
    expect(reports).toHaveLength(3);
    expect(jest.getTimerCount()).toBe(0);
  });

  it("reports nothing released when the RSS did not fall, and never starts with an interval of 0", () => {
    let rss = 100;
    const trimmer = new MemoryTrimmer({ trim: () => void (rss += 5), intervalMs: 0, rss: () => rss });
    trimmer.start();
    expect(jest.getTimerCount()).toBe(0);
    expect(trimmer.trimNow().releasedBytes).toBe(0);
  });
});
