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

/** glibc's mallinfo2(), through koffi; undefined where the C library has none (musl, other systems). */
export function glibcMallocInfo(): (() => CHeapInfo) | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const koffi: typeof import("koffi") = require("koffi");
    const fields = ["arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost"] as const;
    const struct = koffi.struct(Object.fromEntries(fields.map((f) => [f, "size_t"])));
    const mallinfo2 = koffi.load("libc.so.6").func("mallinfo2", struct, []) as () => Record<(typeof fields)[number], number | bigint>;
    return () => {
      const m = mallinfo2();
      const n = (f: (typeof fields)[number]) => Number(m[f]);
      return { inUseBytes: n("uordblks") + n("hblkhd"), freeBytes: n("fordblks"), mmappedBytes: n("hblkhd") };
    };
  } catch {
    return undefined;
  }
}

export interface ResidentParts {
  rssBytes: number;
  /** Anonymous pages: V8's heap, the C heap, thread stacks. */
  anonymousBytes: number;
  /** Pages of mapped files: the Node binary, shared libraries. */
  fileBytes: number;
}

/** The RSS of a process split by kind of page; undefined where /proc has no smaps_rollup. */
export function residentParts(pid: number | "self" = "self"): ResidentParts | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  } catch {
    return undefined;
  }
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0) * 1024;
  const rssBytes = kib("Rss");
  const anonymousBytes = kib("Anonymous");
  return { rssBytes, anonymousBytes, fileBytes: Math.max(0, rssBytes - anonymousBytes) };
}
