// How the project's own scripts (demo, bench, tests) start the operators' CLI, as bin/baremetal-workers and
// the image's entry point (deploy/Containerfile) do: the project's Node with bounds on the V8 heap, running
// cli/launch.js (the CLI from its prebuilt bundle). tests/cli/launch.test.ts holds the three to the same flags.
import * as path from "node:path";
import { PROJECT_ROOT } from "../stack/toolchain";

/**
 * Bounds on the reconciler's V8 heap. Without them V8 sizes its heap from the machine's memory, not the
 * process's needs: on a 24 GiB machine the young generation grew to 128 MiB and the old one to 3× its live
 * data before a full collection (`npm run bench`, docs/benchmarks.md). With a 16 MiB semi-space the young
 * generation stayed at 32 MiB; a 1 GiB old generation is a budget far above the live data at 500 orders and makes
 * V8 collect at 1.6× the live size rather than 4×.
 */
export const NODE_HEAP_FLAGS: readonly string[] = ["--max-semi-space-size=16", "--max-old-space-size=1024"];

/** The command line of `baremetal-workers <args>`, run with this process's Node. */
export function cliCommand(args: readonly string[]): { command: string; args: string[] } {
  return { command: process.execPath, args: [...NODE_HEAP_FLAGS, path.join(PROJECT_ROOT, "cli", "launch.js"), ...args] };
}
