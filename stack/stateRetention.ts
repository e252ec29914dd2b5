// Bounds what a DIY backend (file or postgres://) keeps per stack. Pulumi writes, for every update, refresh, destroy and
// import (failed ones included), a `.history.json` and a full `.checkpoint.json` copy under
// .pulumi/history/<project>/<stack>/, plus a timestamped copy under .pulumi/backups/ and a `.json.bak` of
// the previous checkpoint, and never prunes any of them: an hourly refresh per order fills the volume.
// The backups/ copies are turned off with PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS (set for every
// pulumi process the reconciler starts); after each operation the oldest history entries beyond the
// retention are deleted, with any backups/ copy and the `.json.bak` (the newest history checkpoint holds
// the same state). How many were pruned is kept in the history directory itself, so history numbers stay
// stable (`rollback --to N`) and `pulumi stack rm` removes the count with the history.
import * as path from "node:path";
import type { StateStore } from "./stateStore";

/** Set for every pulumi process: no timestamped checkpoint copies under .pulumi/backups/. */
export const DISABLE_BACKUPS_ENV = "PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS";

const PRUNED_FILE = "bmw-pruned.json";
/**
 * `<stack>-<unixnano>.history.json[.gz|.zst]` and the matching `.checkpoint.json[...]`, each with the `.attrs`
 * sidecar that the file bucket (gocloud fileblob) writes beside every object.
 */
const ENTRY = /^(.*)-(\d+)\.(history|checkpoint)\.json(\.gz|\.zst)?(\.attrs)?$/;

/** The key prefix of a stack's history. */
export function historyKeys(project: string, stack: string): string {
  return `.pulumi/history/${project}/${stack}/`;
}

/** A file backend's history directory of a stack (tests look at it). */
export function historyDir(stateDir: string, project: string, stack: string): string {
  return path.join(stateDir, ...historyKeys(project, stack).slice(0, -1).split("/"));
}

const backupKeys = (project: string, stack: string) => `.pulumi/backups/${project}/${stack}/`;
const checkpointKey = (project: string, stack: string) => `.pulumi/stacks/${project}/${stack}`;

/** How many of the stack's oldest history entries were pruned (0 for a new stack). */
export async function prunedCount(store: StateStore, project: string, stack: string): Promise<number> {
  try {
    const doc: unknown = JSON.parse((await store.read(historyKeys(project, stack) + PRUNED_FILE))?.toString("utf8") ?? "");
    const n = typeof doc === "object" && doc !== null && "pruned" in doc ? doc.pruned : undefined;
    return typeof n === "number" && Number.isInteger(n) && n >= 0 ? n : 0;
  } catch {
    return 0;
  }
}

export interface PruneResult {
  /** History entries deleted now. */
  removed: number;
  /** History entries left. */
  kept: number;
  /** Entries pruned over the stack's life (the first kept entry is number pruned + 1). */
  pruned: number;
}

/**
 * Keeps the newest `keep` history entries of a stack and deletes older ones, backup copies and the
 * `.json.bak`. Runs after an operation of this process, under its per-stack mutex; the engine only ever
 * adds newer entries, so a concurrent operation of another process cannot lose one it needs.
 */
export async function pruneStackState(store: StateStore, project: string, stack: string, keep: number): Promise<PruneResult> {
  if (!Number.isInteger(keep) || keep < 1) throw new Error(`history retention must be a positive integer, got ${keep}`);
  const dir = historyKeys(project, stack);
  const stamps = new Map<bigint, string[]>();
  const withHistory = new Set<bigint>();
  for (const { name: n } of await store.list(dir)) {
    const m = ENTRY.exec(n);
    if (!m || m[1] !== stack) continue;
    const t = BigInt(m[2]);
    stamps.set(t, [...(stamps.get(t) ?? []), n]);
    if (m[3] === "history" && !m[5]) withHistory.add(t);
  }
  const entries = [...withHistory].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const drop = entries.slice(0, Math.max(0, entries.length - keep));
  const oldestKept = entries[drop.length];
  let pruned = await prunedCount(store, project, stack);
  if (drop.length > 0) {
    // Count first: a crash in between leaves a number too high (a gap), never two entries with one number.
    pruned += drop.length;
    await store.write(dir + PRUNED_FILE, JSON.stringify({ pruned }));
  }
  // Older blobs of dropped entries, and checkpoint copies without a history entry older than the oldest kept one.
  for (const [t, files] of stamps) {
    const doomed = drop.includes(t) || (!withHistory.has(t) && oldestKept !== undefined && t < oldestKept);
    if (doomed) for (const f of files) await store.remove(dir + f);
  }
  await store.removeUnder(backupKeys(project, stack));
  for (const ext of [".json.bak", ".json.gz.bak", ".json.zst.bak"]) {
    for (const f of [ext, `${ext}.attrs`]) await store.remove(checkpointKey(project, stack) + f);
  }
  return { removed: drop.length, kept: entries.length - drop.length, pruned };
}

/** Bytes a stack occupies in the state: its checkpoint (with any backup), history and backups/. */
export async function stackStateBytes(store: StateStore, project: string, stack: string): Promise<number> {
  const checkpoints = (await store.list(`.pulumi/stacks/${project}/`)).filter((b) => b.name.startsWith(`${stack}.json`));
  return checkpoints.reduce((n, b) => n + b.bytes, 0) + (await store.bytesUnder(historyKeys(project, stack))) +
    (await store.bytesUnder(backupKeys(project, stack)));
}

/**
 * The size of the state for the `bmw_state_bytes` gauge, without walking every file on each
 * scrape: a full walk at most every `fullScanMs`, and in between each stack this process changed is
 * measured again after its operation (what other processes write shows at the next full walk).
 *
 * A full walk counts the total as the sum of what it measured per stack plus everything outside the
 * stacks' directories, so that a later re-measure of one stack corrects exactly that stack's share. A
 * stack changed while a walk runs is measured again once the walk is done, never applied to the figures
 * the walk is replacing.
 */
export class StateSize {
  private total?: number;
  private scannedAt = -Infinity;
  private scanning?: Promise<number>;
  private inScan = false;
  /** Incremented by each walk: a re-measure that started before a walk is taken again after it. */
  private epoch = 0;
  private readonly changedDuringScan = new Set<string>();
  private perStack = new Map<string, number>();

  constructor(private readonly store: StateStore, private readonly project: string, private readonly fullScanMs = 10 * 60_000,
    private readonly now: () => number = Date.now) {}

  async bytes(): Promise<number> {
    if (this.total === undefined || this.now() - this.scannedAt >= this.fullScanMs) {
      this.scanning ??= this.scan().finally(() => (this.scanning = undefined));
      return this.scanning;
    }
    return this.total;
  }

  /** Re-measures one stack after an operation on it. */
  async stackChanged(stack: string): Promise<void> {
    if (this.inScan) {
      this.changedDuringScan.add(stack);
      return;
    }
    if (this.total === undefined) return; // the first scrape walks everything anyway
    const epoch = this.epoch;
    const now = await stackStateBytes(this.store, this.project, stack);
    if (epoch !== this.epoch) return this.stackChanged(stack); // a walk replaced the figures meanwhile
    this.total += now - (this.perStack.get(stack) ?? 0);
    this.perStack.set(stack, now);
  }

  private async scan(): Promise<number> {
    this.inScan = true;
    this.epoch++;
    this.changedDuringScan.clear();
    try {
      const started = this.now();
      const dirs = ["history", "stacks", "backups"].map((d) => `.pulumi/${d}/${this.project}/`);
      const stacks = new Set<string>();
      for (const d of dirs) for (const n of await this.store.children(d)) stacks.add(n.replace(/\.json.*$/, ""));
      const perStack = new Map<string, number>();
      for (const stack of stacks) perStack.set(stack, await stackStateBytes(this.store, this.project, stack));
      // Everything outside the stacks' directories, plus each stack as measured.
      let total = await this.store.bytesUnder("", dirs);
      for (const n of perStack.values()) total += n;
      while (this.changedDuringScan.size > 0) {
        const [stack] = this.changedDuringScan;
        this.changedDuringScan.delete(stack);
        const now = await stackStateBytes(this.store, this.project, stack);
        total += now - (perStack.get(stack) ?? 0);
        perStack.set(stack, now);
      }
      this.perStack = perStack;
      this.total = total;
      this.scannedAt = started;
      return total;
    } finally {
      this.inScan = false;
    }
  }
}
