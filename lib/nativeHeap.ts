// Where the process's resident memory is, beyond what V8 reports for its own heap: the C heap (glibc's
// mallinfo2: bytes in use, bytes free but kept, bytes in mmapped blocks) and the split of the RSS into
// anonymous memory and mapped files (/proc/self/smaps_rollup). The RSS goal is for the whole process, and
// these say which part to work on.
import * as fs from "node:fs";

export interface CHeapInfo {
  /** Bytes handed out by malloc and not freed (arena blocks and mmapped blocks). */
  inUseBytes: number;
  /** Bytes of the arenas that are free but kept by malloc (what malloc_trim may return, page by page). */
  freeBytes: number;
  /** Bytes of blocks above the mmap threshold, each its own mapping (returned to the system on free). */
  mmappedBytes: number;
}

/** glibc through koffi (loaded once, here for memoryTrim.ts too); undefined where there is none (musl, other systems). */
export function glibc(): import("koffi").LibraryHandle | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const koffi: typeof import("koffi") = require("koffi");
    return (libc ??= koffi.load("libc.so.6"));
  } catch {
    return undefined;
  }
}
let libc: import("koffi").LibraryHandle | undefined;

const MALLINFO2 = ["arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost"] as const;
let mallinfo2: (() => Record<(typeof MALLINFO2)[number], number | bigint>) | null | undefined;

/** glibc's mallinfo2() now; undefined where the C library has none. The function is looked up once per process. */
export function cHeapInfo(): CHeapInfo | undefined {
  if (mallinfo2 === undefined) {
    try {
      const koffi: typeof import("koffi") = require("koffi");
      // An anonymous struct: a named koffi type cannot be defined twice in a process.
      const struct = koffi.struct(Object.fromEntries(MALLINFO2.map((f) => [f, "size_t"])));
      mallinfo2 = (glibc()?.func("mallinfo2", struct, []) as typeof mallinfo2) ?? null;
    } catch {
      mallinfo2 = null;
    }
  }
  if (!mallinfo2) return undefined;
  const m = mallinfo2();
  const n = (f: (typeof MALLINFO2)[number]) => Number(m[f]);
  return { inUseBytes: n("uordblks") + n("hblkhd"), freeBytes: n("fordblks"), mmappedBytes: n("hblkhd") };
}

export interface ResidentParts {
  rssBytes: number;
  /** Anonymous pages: V8's heap, the C heap, thread stacks. */
  anonymousBytes: number;
  /** Pages of mapped files: the Node binary, shared libraries. */
  fileBytes: number;
}

/** This process's RSS split by kind of page; undefined where /proc has no smaps_rollup. */
export function residentParts(): ResidentParts | undefined {
  let text: string;
  try {
    text = fs.readFileSync("/proc/self/smaps_rollup", "utf8");
  } catch {
    return undefined;
  }
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0) * 1024;
  const rssBytes = kib("Rss");
  const anonymousBytes = kib("Anonymous");
  return { rssBytes, anonymousBytes, fileBytes: Math.max(0, rssBytes - anonymousBytes) };
}
