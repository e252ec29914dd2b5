// Every preview a suite takes is checked for the one step that must never appear (issue 15, I1/I2): a
// BareMetalInstance replaced, or deleted when the test did not say it expects that delete. A replace of
// an adopted BMI deletes the live host, so this is checked on whatever form of preview a suite has: the
// engine's events (exact), the `--diff` text of `pulumi preview` / the Automation API, or the change
// summary the `preview --output json` CLI prints (counts only).
import type { EngineEvent, OpMap, OpType } from "@pulumi/pulumi/automation";
import type { EngineStep } from "../../stack/eventLog";

/** The BMI's type token: a dynamic resource of module `baremetal-workers` (providers/bareMetalInstance.ts). */
export const BMI_TYPE = "pulumi-nodejs:dynamic/baremetal-workers:BareMetalInstance";

/** Steps that take a live BMI away. Reads, sames, creates and updates are harmless. */
const REPLACING: ReadonlySet<string> = new Set<OpType>(["replace", "create-replacement", "delete-replaced", "discard-replaced", "import-replacement", "read-replacement"]);
const DELETING: ReadonlySet<string> = new Set<OpType>(["delete", "discard"]);

export interface BmiStep {
  op: string;
  urn: string;
  /** The resource name: the BMI's name (components/bareMetalWorker.ts names each BMI resource after it). */
  name: string;
  /** Keys that force the replacement, when the engine reports them. */
  keys?: string[];
}

export interface PreviewCheckOptions {
  /** BMI names whose delete the test expects (a scale-down CAPI chose, a retired Failed worker, deletion). */
  expectedDeletes?: Iterable<string>;
  /** Summary form only: how many deletes of any resource are expected (default 0). */
  expectedDeleteCount?: number;
}

/** A preview in any of the shapes the suites see. */
export type PreviewLike =
  | { steps: EngineStep[]; stdout?: string; changeSummary?: OpMap }
  | { events: EngineEvent[]; stdout?: string; changeSummary?: OpMap }
  | { stdout: string; changeSummary?: OpMap }
  | string;

const nameOf = (urn: string) => urn.slice(urn.lastIndexOf("::") + 2);

/** The BMI steps among the engine's events (resourcePreEvent: one per step, replacements split in three). */
export function bmiStepsFromEvents(events: EngineEvent[]): BmiStep[] {
  const out: BmiStep[] = [];
  for (const e of events) {
    const m = e.resourcePreEvent?.metadata;
    if (!m || m.type !== BMI_TYPE) continue;
    out.push({ op: m.op, urn: m.urn, name: nameOf(m.urn), keys: m.keys });
  }
  return out;
}

/** The type of a URN (`urn:pulumi:<stack>::<project>::<parent types $ ...>$<type>::<name>`). */
function typeOfUrn(urn: string): string {
  const qualified = urn.split("::")[2] ?? "";
  return qualified.slice(qualified.lastIndexOf("$") + 1);
}

/** The BMI steps among the steps of an engine event log (StackManager.preview and up report them). */
export function bmiStepsFromSteps(steps: EngineStep[]): BmiStep[] {
  return steps.filter((s) => typeOfUrn(s.urn) === BMI_TYPE).map((s) => ({ op: s.op, urn: s.urn, name: nameOf(s.urn) }));
}

/**
 * The BMI steps of a `--diff` display: each step is a header line `<prefix><type>: (<op>)` followed by
 * bracketed `[id=…]`/`[urn=…]` lines; without a URN line (a non-diff display) the name is unknown.
 */
export function bmiStepsFromText(text: string): BmiStep[] {
  const lines = text.split("\n");
  const out: BmiStep[] = [];
  const header = /^\s*[-+~<>=*]*\s*([A-Za-z0-9_./:-]+): \(([a-z-]+)\)/;
  for (let i = 0; i < lines.length; i++) {
    const h = header.exec(lines[i]);
    if (!h || h[1] !== BMI_TYPE) continue;
    let urn = "";
    for (let j = i + 1; j < Math.min(lines.length, i + 4); j++) {
      const u = /\[urn=([^\]]+)\]/.exec(lines[j]);
      if (u) {
        urn = u[1];
        break;
      }
    }
    out.push({ op: h[2], urn, name: urn ? nameOf(urn) : "" });
  }
  return out;
}

/** The steps that break I1/I2: any replacement of a BMI, any delete of a BMI not in `expectedDeletes`. */
export function forbiddenBmiSteps(steps: BmiStep[], opts: PreviewCheckOptions = {}): BmiStep[] {
  const expected = new Set(opts.expectedDeletes ?? []);
  return steps.filter((s) => REPLACING.has(s.op) || (DELETING.has(s.op) && !expected.has(s.name)));
}

function describe(steps: BmiStep[]): string {
  return steps.map((s) => `${s.op} ${s.name || "(unnamed)"}${s.keys?.length ? ` (keys ${s.keys.join(", ")})` : ""}`).join("; ");
}

/** Throws, naming every offending step, when the preview replaces a BMI or deletes one not expected. */
export function assertNoBmiReplace(preview: PreviewLike, opts: PreviewCheckOptions = {}): BmiStep[] {
  const text = typeof preview === "string" ? preview : preview.stdout ?? "";
  const steps = typeof preview === "string" ? bmiStepsFromText(text)
    : "steps" in preview ? bmiStepsFromSteps(preview.steps)
      : "events" in preview ? bmiStepsFromEvents(preview.events) : bmiStepsFromText(text);
  const bad = forbiddenBmiSteps(steps, opts);
  if (bad.length > 0) throw new Error(`the preview would take a live BareMetalInstance away: ${describe(bad)}\n${text.slice(-4000)}`);
  return steps;
}

/**
 * The summary form (`preview --output json`): counts per op over every resource, so no replacement of
 * anything and no more deletes than expected. Weaker than the other forms; suites that only have the
 * summary also assert what they expect of it.
 */
export function assertSummaryKeepsHosts(summary: OpMap | Record<string, number>, opts: PreviewCheckOptions = {}): void {
  const s = summary as Record<string, number | undefined>;
  const replaced = [...REPLACING].map((op) => [op, s[op] ?? 0] as const).filter(([, n]) => n > 0);
  const deletes = (s.delete ?? 0) + (s.discard ?? 0);
  if (replaced.length > 0 || deletes > (opts.expectedDeleteCount ?? 0)) {
    throw new Error(`the preview would replace or delete resources: ${JSON.stringify(summary)} (expected at most ${opts.expectedDeleteCount ?? 0} deletes)`);
  }
}
