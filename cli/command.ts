// How the project's own scripts (demo, bench, tests) start the operators' CLI, as bin/baremetal-workers and
// the image's entry point (deploy/Containerfile) do: the project's Node with bounds on the V8 heap, running
// cli/launch.js (the CLI from its prebuilt bundle). tests/cli/launch.test.ts holds the three to the same flags.
import * as path from "node:path";
import { NODE_HEAP_FLAGS } from "../lib/nodeHeapFlags";
import { PROJECT_ROOT } from "../stack/toolchain";

export { NODE_HEAP_FLAGS };

/** The command line of `baremetal-workers <args>`, run with this process's Node. */
export function cliCommand(args: readonly string[]): { command: string; args: string[] } {
  return { command: process.execPath, args: [...NODE_HEAP_FLAGS, path.join(PROJECT_ROOT, "cli", "launch.js"), ...args] };
}
