// Run by tests/lib/nativeHeap.test.ts in a process of its own (no other allocations beside it): mallocs
// 1024 blocks of 64 KiB (from the arenas) and 2 of 40 MiB (above the largest mmap threshold, 32 MiB: each
// its own mapping), touches them, frees them, and prints lib/nativeHeap.ts's figures at each step.
const { cHeapInfo, residentParts } = require(process.argv[2]);
const koffi = require("koffi");
const MiB = 2 ** 20;
const info = cHeapInfo;
if (!info()) {
  console.log(JSON.stringify({ glibc: false }));
  process.exit(0);
}
const libc = koffi.load("libc.so.6");
const malloc = libc.func("void *malloc(size_t)");
const free = libc.func("void free(void *)");
const memset = libc.func("void *memset(void *, int, size_t)");
const before = { ...info(), anonymous: residentParts().anonymousBytes };
const small = Array.from({ length: 1024 }, () => malloc(64 * 1024));
const large = Array.from({ length: 2 }, () => malloc(40 * MiB));
for (const p of small) memset(p, 1, 64 * 1024);
for (const p of large) memset(p, 1, 40 * MiB);
const filled = { ...info(), anonymous: residentParts().anonymousBytes };
for (const p of [...small, ...large]) free(p);
const freed = { ...info(), anonymous: residentParts().anonymousBytes };
console.log(JSON.stringify({ glibc: true, before, filled, freed }));
