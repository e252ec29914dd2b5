// lib/nativeHeap.ts: mallinfo2 follows what a process mallocs and frees (in a process of its own, so that
// nothing else allocates beside it); smaps_rollup splits the RSS.
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { residentParts } from "../../lib/nativeHeap";

const glibc = Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);
const MiB = 2 ** 20;

(glibc ? test : test.skip)("the C heap's bytes in use follow malloc and free, and its anonymous pages the RSS", () => {
  const out = execFileSync(process.execPath, ["-r", "ts-node/register/transpile-only", path.join(__dirname, "nativeHeapProbe.js"),
    path.join(__dirname, "../../lib/nativeHeap.ts")], { encoding: "utf8", timeout: 60_000 });
  type Figures = { inUseBytes: number; mmappedBytes: number; anonymous: number };
  const r = JSON.parse(out.trim().split("\n").pop() ?? "{}") as { glibc: boolean; before: Figures; filled: Figures; freed: Figures };
  expect(r.glibc).toBe(true);
  // 144 MiB allocated and touched: 64 MiB in 64-KiB blocks, 80 MiB in two mmapped blocks. Node's own threads
  // (GC, compiler) malloc and free beside it: CI once saw 0.4 MiB fewer in use, so 4 MiB of slack.
  const slack = 4 * MiB;
  expect(r.filled.inUseBytes - r.before.inUseBytes).toBeGreaterThanOrEqual(144 * MiB - slack);
  expect(r.filled.mmappedBytes - r.before.mmappedBytes).toBeGreaterThanOrEqual(80 * MiB);
  expect(r.filled.anonymous - r.before.anonymous).toBeGreaterThanOrEqual(128 * MiB);
  expect(r.filled.inUseBytes - r.freed.inUseBytes).toBeGreaterThanOrEqual(144 * MiB - slack);
  expect(r.freed.mmappedBytes).toBeLessThanOrEqual(r.before.mmappedBytes + MiB);
});

(glibc ? test : test.skip)("can be set up by more than one copy of the module in a process (a named koffi type could not)", () => {
  // Each a fresh copy of the module, as each jest test file or bundle loads its own, over one koffi.
  for (let i = 0; i < 3; i++) {
    jest.isolateModules(() => {
      const { cHeapInfo } = require("../../lib/nativeHeap") as typeof import("../../lib/nativeHeap");
      expect(cHeapInfo()?.inUseBytes).toBeGreaterThan(0);
    });
  }
});

test("splits the RSS into anonymous pages and mapped files", () => {
  const parts = residentParts();
  if (process.platform !== "linux") return expect(parts).toBeUndefined();
  expect(parts!.rssBytes).toBeGreaterThan(0);
  expect(parts!.anonymousBytes + parts!.fileBytes).toBe(parts!.rssBytes);
  expect(parts!.fileBytes).toBeGreaterThan(10 * MiB); // the Node binary's pages at least
  expect(Math.abs(parts!.rssBytes - process.memoryUsage.rss())).toBeLessThan(64 * MiB);
});
