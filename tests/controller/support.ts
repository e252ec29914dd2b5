// Shared set-up of the StackManager suites: a temp file backend, passphrase file, work directory and
// the fixture project's "world" (records on disk) and desired-state file.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PROJECT_ROOT } from "../../stack/toolchain";
import { StackManager, StackManagerOptions } from "../../stack/stacks";

export const FIXTURE_PROJECT = path.join(PROJECT_ROOT, "tests", "fixtures", "stack-project");

export interface DesiredRecord {
  name: string;
  content: string;
  sleepMs?: number;
}

export interface StackSandbox {
  tmp: string;
  stateDir: string;
  workDir: string;
  world: string;
  manager: StackManager;
  /** Sets the records the program declares for one order ("ns/name"). */
  setDesired(order: string, records: DesiredRecord[]): void;
  /** Directory of one order's records. */
  orderDir(order: string): string;
  /** Lines of the order's ops.log ("create a", "adopt a", ...). */
  ops(order: string): string[];
  cleanup(): void;
}

export function stackSandbox(extra: Partial<StackManagerOptions> = {}): StackSandbox {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-stacks-"));
  const stateDir = path.join(tmp, "state");
  const workDir = path.join(tmp, "work");
  const world = path.join(tmp, "world");
  const desiredFile = path.join(tmp, "desired.json");
  const passphraseFile = path.join(tmp, "passphrase");
  fs.mkdirSync(world);
  fs.writeFileSync(passphraseFile, "stack-test-passphrase\n", { mode: 0o600 });
  fs.writeFileSync(desiredFile, "{}");
  const desired: Record<string, { records: DesiredRecord[] }> = {};
  const manager = new StackManager({
    programDir: FIXTURE_PROJECT, workDir, stateDir, passphraseFile, parallelism: 4,
    envVars: { BMW_FIXTURE_WORLD: world, BMW_FIXTURE_DESIRED: desiredFile },
    ...extra,
  });
  const orderDir = (order: string) => path.join(world, order.replace("/", "--"));
  return {
    tmp, stateDir, workDir, world, manager, orderDir,
    setDesired(order, records) {
      desired[order] = { records };
      fs.writeFileSync(desiredFile, JSON.stringify(desired));
    },
    ops(order) {
      const f = path.join(orderDir(order), "ops.log");
      return fs.existsSync(f) ? fs.readFileSync(f, "utf8").trim().split("\n").filter(Boolean) : [];
    },
    cleanup() {
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** Resources of a given type in an exported deployment. */
export function resourcesOfType(deployment: unknown, type: string): { urn: string; id?: string; outputs?: Record<string, unknown> }[] {
  const d = deployment as { resources?: { urn: string; type: string; id?: string; outputs?: Record<string, unknown> }[] };
  return (d.resources ?? []).filter((r) => r.type === type);
}

export const RECORD_TYPE = "pulumi-nodejs:dynamic:Resource";
