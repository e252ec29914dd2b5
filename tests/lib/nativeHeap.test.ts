// lib/nativeHeap.ts: mallinfo2 follows what the process mallocs and frees; smaps_rollup splits the RSS.
import { glibcMallocInfo, residentParts } from "../../lib/nativeHeap";

const glibc = Boolean((process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime);
const MiB = 2 ** 20;

(glibc ? test : test.skip)("the C heap's bytes in use follow malloc and free, and its anonymous pages the RSS", () => {
  const info = glibcMallocInfo()!;
  const koffi: typeof import("koffi") = require("koffi");
  const libc = koffi.load("libc.so.6");
  const malloc = libc.func("void *malloc(size_t)") as (n: number) => unknown;
  const free = libc.func("void free(void *)") as (p: unknown) => void;
  const memset = libc.func("void *memset(void *, int, size_t)") as (p: unknown, c: number, n: number) => unknown;
  const before = info();
  const anonBefore = residentParts()!.anonymousBytes;
  // Blocks of 64 KiB (below the mmap threshold: from the arenas) and of 40 MiB (above the largest the
  // threshold grows to, 32 MiB: each its own mapping).
  const small = Array.from({ length: 1024 }, () => malloc(64 * 1024));
  const large = Array.from({ length: 2 }, () => malloc(40 * MiB));
  for (const p of small) memset(p, 1, 64 * 1024);
  for (const p of large) memset(p, 1, 40 * MiB);
  const filled = info();
  expect(filled.inUseBytes - before.inUseBytes).toBeGreaterThanOrEqual(144 * MiB);
  expect(filled.mmappedBytes - before.mmappedBytes).toBeGreaterThanOrEqual(80 * MiB);
  expect(residentParts()!.anonymousBytes - anonBefore).toBeGreaterThanOrEqual(100 * MiB); // some of the arena was resident already
  for (const p of [...small, ...large]) free(p);
  const freed = info();
  expect(filled.inUseBytes - freed.inUseBytes).toBeGreaterThanOrEqual(144 * MiB);
  expect(freed.mmappedBytes).toBeLessThanOrEqual(before.mmappedBytes + MiB);
});

test("splits the RSS into anonymous pages and mapped files", () => {
  const parts = residentParts();
  if (process.platform !== "linux") return expect(parts).toBeUndefined();
  expect(parts!.rssBytes).toBeGreaterThan(0);
  expect(parts!.anonymousBytes + parts!.fileBytes).toBe(parts!.rssBytes);
  expect(parts!.fileBytes).toBeGreaterThan(10 * MiB); // the Node binary's pages at least
  expect(Math.abs(parts!.rssBytes - process.memoryUsage.rss())).toBeLessThan(64 * MiB);
});
