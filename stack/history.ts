// A stack's update history as the operators' `history` and `rollback` see it: entries numbered from
// the stack's first update (stable after the retention prunes old ones), and one-line update messages.
import type { OpMap, Stack, UpdateKind, UpdateResult } from "@pulumi/pulumi/automation";

export interface HistoryEntry {
  /** 1 for the first update of the stack, consecutive, stable when old entries are pruned (the DIY backend reports version 0 for all). */
  number: number;
  /** Same as `number` (Pulumi's own version field is always 0 on a DIY backend). */
  version: number;
  kind: UpdateKind;
  result: UpdateResult;
  message: string;
  startTime: Date;
  endTime?: Date;
  resourceChanges: OpMap;
  /** Config at that update; secret values appear as "[secret]". */
  config: Record<string, { value: string; secret: boolean }>;
}

const HISTORY_PAGE = 100;
const MAX_MESSAGE = 1000;

/** Keeps the update message to one line of bounded length. */
export function oneLine(message: string): string {
  const flat = message.replace(/\s*[\r\n]+\s*/g, " ").trim();
  return flat.length > MAX_MESSAGE ? `${flat.slice(0, MAX_MESSAGE - 1)}…` : flat;
}

/** Why `rollback --to <update>` finds no such entry: pruned by the history retention, or never made. */
export function missingUpdateMessage(update: number, entries: HistoryEntry[]): string {
  const newest = entries[0]?.number ?? 0;
  const oldest = entries.at(-1)?.number ?? 1;
  if (Number.isInteger(update) && update >= 1 && update < oldest) {
    return `update ${update} was pruned: the stack keeps its last ${entries.length} updates (${oldest}..${newest}; BMW_HISTORY_RETENTION)`;
  }
  return `update ${update} does not exist (the stack has updates ${entries.length ? `${oldest}..${newest}` : "none"})`;
}

/** Every retained update, newest first; `pruned` entries older than the retained ones were removed. */
export async function readHistory(stack: Stack, pruned: number): Promise<HistoryEntry[]> {
  const all: Awaited<ReturnType<Stack["history"]>> = [];
  // The CLI pages history 10 at a time unless told otherwise: walk every page.
  for (let page = 1; ; page++) {
    const batch = await stack.history(HISTORY_PAGE, page, false);
    all.push(...batch);
    if (batch.length < HISTORY_PAGE) break;
  }
  return all.map((h, i) => ({
    number: pruned + all.length - i,
    version: pruned + all.length - i,
    kind: h.kind,
    result: h.result,
    message: h.message,
    startTime: h.startTime,
    endTime: h.endTime,
    resourceChanges: h.resourceChanges ?? {},
    config: Object.fromEntries(Object.entries(h.config ?? {}).map(([k, v]) => [k, { value: String(v.value), secret: v.secret === true }])),
  }));
}
