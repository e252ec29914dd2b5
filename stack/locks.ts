// Recovery after a runner died mid-operation (kill -9, OOM, node loss).
//
// 1. Locks. A Pulumi DIY backend locks a stack with a blob (a file of the file backend, a row of the
//    postgres:// backend, see stateStore.ts), .pulumi/locks/organization/<project>/<stack>/<uuid>.json =
//    {pid, username, hostname, timestamp}, with no lease: a killed `pulumi` leaves it forever and every
//    later operation fails with "the stack is currently locked". `pulumi cancel` would delete *every* lock
//    of the stack, including one held by a live process, so we never call it. Instead each lock is judged on
//    its own: stale when its host is ours and its pid is gone (or now belongs to a process that is
//    not pulumi, i.e. the pid was reused), or when it is older than a bound (a lock of another host
//    whose liveness we cannot check), or when the caller knows that host is gone, or when the
//    process that took it ran for a leader that no longer holds the Lease. Only those locks are
//    deleted.
//
//    Pulumi's lock cannot carry our leader identity, so whoever starts a pulumi process while
//    leading writes a holder record beside the state, .bmw/lock-holders/<hostname>--<pid>.json
//    = {identity, stack, startedAt}, keyed by the host and pid the lock names, and removes it
//    when the process exits. A lock of another host whose holder record names a leader that has lost
//    the Lease (it changed hands, which happens only after that leader's lease expired or it
//    released it) is recovered at once instead of after the age bound. A lock without a record
//    (an admin's CLI run) never is.
//
// 2. Pending operations. Before each provider call the engine records a pending operation in the
//    checkpoint; a kill leaves them behind. Pending updates and deletes are harmless (the next `up`
//    drops them and re-diffs), but a pending *create* is carried forward, and the engine cannot know
//    whether the real object was made. We clear all pending operations by exporting the state,
//    emptying `pending_operations` and importing it back (a pure state edit: no provider calls, so it
//    works while the fulfillment-service is down, unlike `refresh --clear-pending-creates`). The
//    next `up` then calls `create` again for those resources, and every create of this program is
//    idempotent: the BareMetalInstance provider lists by name/label before creating and adopts an
//    existing BMI (clients/fulfillment createOrAdopt), and @pulumi/kubernetes' server-side apply
//    upserts an existing object. So a create cut off by a kill can never duplicate a BMI.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { procStat } from "../lib/procfs";
import type { StateStore } from "./stateStore";

export interface DiyLock {
  /** The lock's blob key (`.pulumi/locks/organization/<project>/<stack>/<uuid>.json`). */
  key: string;
  pid: number;
  username: string;
  hostname: string;
  timestamp: Date;
  /** Leader identity of the process that took the lock, from its holder record (see the header). */
  holder?: string;
}

/** Who started a pulumi process: the Lease identity it acted for. */
export interface LockHolder {
  identity: string;
  hostname: string;
  pid: number;
  stack: string;
  startedAt: Date;
}

export interface LockAssessment {
  lock: DiyLock;
  stale: boolean;
  reason: string;
}

export interface StaleLockPolicy {
  /** Our host name; default os.hostname(). */
  hostname?: string;
  /** A lock older than this is stale whatever its host. Default 2 h (longer than any sane `up`). */
  maxAgeMs?: number;
  now?: () => number;
  /** Whether pid runs a pulumi process on this host; default checks /proc. */
  isPulumiAlive?: (pid: number) => boolean;
  /** Optional knowledge about other hosts (e.g. "no pod of that name exists"). */
  isHostGone?: (hostname: string) => boolean;
  /**
   * Whether the leader `identity` certainly no longer runs anything: it lost the Lease (LeaderElector.isHolderGone).
   * Must be false whenever that leader's Lease may still be live.
   */
  isHolderGone?: (identity: string) => boolean;
}

export const DEFAULT_MAX_LOCK_AGE_MS = 2 * 60 * 60 * 1000;

/**
 * A holder record matches a lock only when the lock was taken after the process started, and soon after: a
 * later process that reuses the pid (a restarted container) is not mistaken for the recorded one.
 */
const HOLDER_MATCH_WINDOW_MS = 10 * 60 * 1000;
/** Both times come from the same host's clock; this only absorbs the lock file's second rounding. */
const HOLDER_CLOCK_SLACK_MS = 2000;

/** Where holder records are kept, beside the backend's own blobs (the CLI never reads or lists `.bmw/`). */
export const LOCK_HOLDER_DIR = ".bmw/lock-holders/";

/** The holder records' directory of a file backend (tests look at it). */
export function lockHolderDir(stateDir: string): string {
  return path.join(stateDir, ...LOCK_HOLDER_DIR.slice(0, -1).split("/"));
}

function holderKey(hostname: string, pid: number): string {
  return `${LOCK_HOLDER_DIR}${hostname.replace(/[^A-Za-z0-9._-]/g, "_")}--${pid}.json`;
}

/** Records that `holder.pid` on `holder.hostname` acts for the leader `holder.identity` (a whole write). */
export async function recordLockHolder(store: StateStore, holder: LockHolder): Promise<void> {
  await store.write(holderKey(holder.hostname, holder.pid), JSON.stringify({ ...holder, startedAt: holder.startedAt.toISOString() }));
}

export async function forgetLockHolder(store: StateStore, hostname: string, pid: number): Promise<void> {
  await store.remove(holderKey(hostname, pid));
}

/** The leader identity recorded for the process that took `lock` on `stack`, if any. */
export async function lockHolderOf(store: StateStore, stack: string, lock: Pick<DiyLock, "hostname" | "pid" | "timestamp">): Promise<string | undefined> {
  let parsed: unknown;
  try {
    parsed = JSON.parse((await store.read(holderKey(lock.hostname, lock.pid)))?.toString("utf8") ?? "");
  } catch {
    return undefined;
  }
  if (typeof parsed !== "object" || parsed === null) return undefined;
  const o: Record<string, unknown> = { ...parsed };
  if (typeof o.identity !== "string" || o.identity === "" || o.stack !== stack || o.hostname !== lock.hostname || o.pid !== lock.pid) return undefined;
  const started = new Date(typeof o.startedAt === "string" ? o.startedAt : NaN).getTime();
  const lockedAt = lock.timestamp.getTime();
  if (!Number.isFinite(started) || lockedAt < started - HOLDER_CLOCK_SLACK_MS || lockedAt - started > HOLDER_MATCH_WINDOW_MS) return undefined;
  return o.identity;
}

/**
 * Whether the backend holds a checkpoint of the stack. Only this stack's blob is looked for: `pulumi stack
 * ls` parses every stack's checkpoint, so one corrupted blob would fail the reconcile of every other order.
 */
/** Where a DIY backend may keep a stack's checkpoint: project-scoped or the older layout, gzipped or not. */
function checkpointKeys(project: string, stack: string): string[] {
  return [`.pulumi/stacks/${project}/`, ".pulumi/stacks/"].flatMap((dir) => [".json", ".json.gz"].map((ext) => `${dir}${stack}${ext}`));
}

export async function checkpointExists(store: StateStore, project: string, stack: string): Promise<boolean> {
  for (const key of checkpointKeys(project, stack)) if (await store.exists(key)) return true;
  return false;
}

/** The key prefix of a stack's locks. */
export function stackLockKeys(project: string, stack: string): string {
  return `.pulumi/locks/organization/${project}/${stack}/`;
}

/** A file backend's lock directory of a stack (tests look at it). */
export function stackLockDir(stateDir: string, project: string, stack: string): string {
  return path.join(stateDir, ...stackLockKeys(project, stack).slice(0, -1).split("/"));
}

export async function readLocks(store: StateStore, project: string, stack: string): Promise<DiyLock[]> {
  const dir = stackLockKeys(project, stack);
  const locks: DiyLock[] = [];
  for (const n of (await store.list(dir)).map((b) => b.name).filter((name) => name.endsWith(".json"))) {
    const key = `${dir}${n}`;
    try {
      const text = (await store.read(key))?.toString("utf8");
      if (text === undefined) continue; // removed meanwhile: its owner finished
      const raw: unknown = JSON.parse(text);
      const o = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
      const lock: DiyLock = {
        key,
        pid: typeof o.pid === "number" ? o.pid : -1,
        username: typeof o.username === "string" ? o.username : "",
        hostname: typeof o.hostname === "string" ? o.hostname : "",
        timestamp: new Date(typeof o.timestamp === "string" ? o.timestamp : 0),
      };
      const holder = await lockHolderOf(store, stack, lock);
      locks.push(holder === undefined ? lock : { ...lock, holder });
    } catch {
      // Half-written by a live writer: not ours to judge.
    }
  }
  return locks;
}

/** True when pid exists, is not a zombie, and runs pulumi (guards against pid reuse). */
export function pulumiProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (!fs.existsSync("/proc/self")) return true; // no procfs: trust kill(0)
  const stat = procStat(pid);
  if (!stat || stat.state === "Z" || stat.state === "X") return false;
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return path.basename(cmdline[0] ?? "").startsWith("pulumi");
  } catch {
    return false;
  }
}

export function assessLock(lock: DiyLock, policy: StaleLockPolicy = {}): LockAssessment {
  const host = policy.hostname ?? os.hostname();
  const now = (policy.now ?? Date.now)();
  const maxAge = policy.maxAgeMs ?? DEFAULT_MAX_LOCK_AGE_MS;
  const alive = policy.isPulumiAlive ?? pulumiProcessAlive;
  const age = now - lock.timestamp.getTime();
  const who = `pid ${lock.pid} on ${lock.hostname || "?"}`;
  if (lock.hostname === host) {
    return alive(lock.pid)
      ? { lock, stale: false, reason: `held by live ${who}` }
      : { lock, stale: true, reason: `${who} is no longer running` };
  }
  if (policy.isHostGone?.(lock.hostname)) return { lock, stale: true, reason: `host of ${who} is gone` };
  if (lock.holder !== undefined && policy.isHolderGone?.(lock.holder)) {
    return { lock, stale: true, reason: `${who} ran for leader ${lock.holder}, which no longer holds the Lease` };
  }
  if (age > maxAge) return { lock, stale: true, reason: `${who} is ${Math.round(age / 1000)} s old (bound ${maxAge / 1000} s)` };
  return { lock, stale: false, reason: `held by ${who} on another host, ${Math.round(age / 1000)} s old` };
}

export interface LockSweep {
  cleared: LockAssessment[];
  held: LockAssessment[];
}

/** Deletes exactly the stale locks of a stack; live ones are reported, never touched. */
export async function clearStaleLocks(store: StateStore, project: string, stack: string, policy: StaleLockPolicy = {}): Promise<LockSweep> {
  const sweep: LockSweep = { cleared: [], held: [] };
  for (const lock of await readLocks(store, project, stack)) {
    const a = assessLock(lock, policy);
    if (!a.stale) {
      sweep.held.push(a);
      continue;
    }
    await store.remove(lock.key);
    await forgetLockHolder(store, lock.hostname, lock.pid);
    sweep.cleared.push(a);
  }
  return sweep;
}

export interface PendingOperation {
  /** creating | updating | deleting | reading | importing */
  type: string;
  urn: string;
  resourceType: string;
}

/** The part of an Automation API Stack this module needs (export and import of the latest state). */
export interface DeploymentStore {
  exportStack(): Promise<{ version: number; deployment: unknown }>;
  importStack(state: { version: number; deployment: unknown }): Promise<void>;
}

export function pendingOperationsOf(deployment: unknown): PendingOperation[] {
  const d = (deployment && typeof deployment === "object" ? deployment : {}) as Record<string, unknown>;
  const ops = Array.isArray(d.pending_operations) ? (d.pending_operations as unknown[]) : [];
  return ops.map((op) => {
    const o = (op && typeof op === "object" ? op : {}) as Record<string, unknown>;
    const r = (o.resource && typeof o.resource === "object" ? o.resource : {}) as Record<string, unknown>;
    return {
      type: typeof o.type === "string" ? o.type : "unknown",
      urn: typeof r.urn === "string" ? r.urn : "",
      resourceType: typeof r.type === "string" ? r.type : "",
    };
  });
}

/**
 * Removes every pending operation from the stack's latest state (see the header for why this never
 * duplicates a BMI). Must run with the stack unlocked and no other runner. Returns what was removed.
 */
export async function resolvePendingOperations(stack: DeploymentStore): Promise<PendingOperation[]> {
  const state = await stack.exportStack();
  const pending = pendingOperationsOf(state.deployment);
  if (pending.length === 0) return [];
  const deployment = { ...(state.deployment as Record<string, unknown>) };
  delete deployment.pending_operations;
  await stack.importStack({ ...state, deployment });
  return pending;
}


/**
 * The pending operations of the stack's latest checkpoint, read from the backend's blobs without a pulumi
 * process (each costs about 0.3 CPU-s, most of it deriving the passphrase's key). Undefined when that
 * cannot be told for certain (no checkpoint, two of them, one that is not a checkpoint): the caller then
 * exports through pulumi as before. Pending operations are never encrypted, so no key is needed.
 */
export async function storedPendingOperations(store: StateStore, project: string, stack: string): Promise<PendingOperation[] | undefined> {
  const found: { key: string; blob: Buffer }[] = [];
  for (const key of checkpointKeys(project, stack)) {
    const blob = await store.read(key);
    if (blob) found.push({ key, blob });
  }
  if (found.length !== 1) return undefined;
  let doc: unknown;
  try {
    const { key, blob } = found[0];
    doc = JSON.parse((key.endsWith(".gz") ? zlib.gunzipSync(blob) : blob).toString("utf8"));
  } catch {
    return undefined;
  }
  const checkpoint = (doc as { checkpoint?: unknown } | null)?.checkpoint;
  if (!checkpoint || typeof checkpoint !== "object" || !("latest" in checkpoint)) return undefined;
  const latest = (checkpoint as { latest: unknown }).latest;
  if (latest === null) return []; // a stack never updated
  if (typeof latest !== "object" || Array.isArray(latest)) return undefined;
  const ops = (latest as { pending_operations?: unknown }).pending_operations;
  if (ops !== undefined && !Array.isArray(ops)) return undefined;
  return pendingOperationsOf(latest);
}
