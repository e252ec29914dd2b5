// The engine's event log (`pulumi up|preview --event-log`, one JSON event per line): the change summary,
// the root stack's outputs and every step, read from the file instead of asking the CLI again.
import type { OpMap } from "@pulumi/pulumi/automation";

/** Resource changes of an operation, always with the four counts the status and logs use. */
export interface ChangeCounts {
  create: number;
  update: number;
  delete: number;
  replace: number;
  same: number;
}

export function changeCounts(m: OpMap | undefined): ChangeCounts {
  const n = (k: keyof OpMap) => m?.[k] ?? 0;
  return { create: n("create"), update: n("update"), delete: n("delete"), replace: n("replace"), same: n("same") };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The counts of a summary event's resourceChanges (an op name → count map); other entries are dropped. */
function opMapOf(v: unknown): OpMap {
  const out: Record<string, number> = {};
  if (isObject(v)) for (const [op, n] of Object.entries(v)) if (typeof n === "number") out[op] = n;
  return out;
}

/** One step of the engine: what it does (or, in a preview, would do) to one resource. */
export interface EngineStep {
  urn: string;
  /** The engine's operation: same, create, update, delete, replace, refresh, read, … */
  op: string;
}

export interface EventLogSummary {
  changes: OpMap | undefined;
  outputs: Record<string, unknown>;
  /** Every step, in the order the engine began them (one resourcePreEvent per step). */
  steps: EngineStep[];
}

/**
 * The change summary, the root stack's outputs and the steps of an engine event log.
 * Secret outputs appear masked in events; they are reported as "[secret]".
 */
export function summarizeEventLog(text: string): EventLogSummary {
  let changes: OpMap | undefined;
  const outputs: Record<string, unknown> = {};
  const steps: EngineStep[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let ev: unknown;
    try {
      ev = JSON.parse(line);
    } catch {
      continue; // a line cut short by a crash: the exit code already says what happened
    }
    if (!isObject(ev)) continue;
    if (isObject(ev.summaryEvent)) changes = opMapOf(ev.summaryEvent.resourceChanges);
    const pre = isObject(ev.resourcePreEvent) ? ev.resourcePreEvent.metadata : undefined;
    if (isObject(pre) && typeof pre.urn === "string" && typeof pre.op === "string") steps.push({ urn: pre.urn, op: pre.op });
    const md = isObject(ev.resOutputsEvent) ? ev.resOutputsEvent.metadata : undefined;
    if (isObject(md) && md.type === "pulumi:pulumi:Stack") {
      const news = isObject(md.new) && isObject(md.new.outputs) ? md.new.outputs : {};
      for (const [k, v] of Object.entries(news)) outputs[k] = v === "[secret]" ? "[secret]" : v;
    }
  }
  return { changes, outputs, steps };
}
