// The engine's event log (`pulumi up --event-log`, one JSON event per line): the change summary and
// the root stack's outputs, read from the file instead of asking the CLI again after every update.
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

/**
 * The change summary and the root stack's outputs from an engine event log.
 * Secret outputs appear masked in events; they are reported as "[secret]".
 */
export function summarizeEventLog(text: string): { changes: OpMap | undefined; outputs: Record<string, unknown> } {
  let changes: OpMap | undefined;
  const outputs: Record<string, unknown> = {};
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
    const md = isObject(ev.resOutputsEvent) ? ev.resOutputsEvent.metadata : undefined;
    if (isObject(md) && md.type === "pulumi:pulumi:Stack") {
      const news = isObject(md.new) && isObject(md.new.outputs) ? md.new.outputs : {};
      for (const [k, v] of Object.entries(news)) outputs[k] = v === "[secret]" ? "[secret]" : v;
    }
  }
  return { changes, outputs };
}
