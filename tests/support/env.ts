// Locations shared by the test suite: where the control plane of this run lives and the CRD sources.
import * as os from "node:os";
import * as path from "node:path";
import { PROJECT_ROOT } from "../../stack/toolchain";

/** The upstream CRDs, vendored in lab/crds (see its README for their origins). */
export const SHARED_CRDS = path.join(PROJECT_ROOT, "lab", "crds");
export const PROJECT_CRDS = path.join(PROJECT_ROOT, "deploy", "crds");

/** One control plane per test run, in a temp dir recorded in the environment for the workers. */
export function runDir(): string {
  const dir = process.env.BMW_TEST_RUN_DIR;
  if (!dir) throw new Error("BMW_TEST_RUN_DIR is not set: tests must run through jest's global setup");
  return dir;
}

export function newRunDir(): string {
  return path.join(os.tmpdir(), `bmw-test-${process.pid}-${Date.now()}`);
}

/**
 * The program mode of an App that runs inside jest and may see its program fail: the on-disk program in a
 * process of its own. A failing inline program reaches the SDK as an unhandled rejection, which the SDK
 * handles in a real process (stack/inlineProgram.ts) but jest turns into a failure of the running test.
 * Reconcilers run as processes (tests/support/reconciler.ts) keep the product's default, inline.
 */
export const PROGRAM_PROCESS_IN_JEST = { BMW_PROGRAM_MODE: "process" } as const;
