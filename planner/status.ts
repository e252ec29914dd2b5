// Aggregate counts and the order phase (OSAC-2135 §3.1 counting, §3.3 phase).
import { ACTIVE_PHASES } from "./phases";
import type { NodeRequest, WorkerStatus } from "./types";

export interface WorkerCounts {
  /** Provisioning + WaitingForAgent + Binding + Ready. */
  current: number;
  ready: number;
  failed: number;
}

export function countWorkers(workers: readonly WorkerStatus[]): WorkerCounts {
  let current = 0;
  let ready = 0;
  let failed = 0;
  for (const w of workers) {
    if (ACTIVE_PHASES.has(w.phase)) current++;
    if (w.phase === "Ready") ready++;
    if (w.phase === "Failed") failed++;
  }
  return { current, ready, failed };
}

/** A node request is bare metal when it names a BareMetalInstanceType. */
export function isBareMetalRequest(r: NodeRequest): boolean {
  return Boolean(r.bareMetal?.instanceType);
}

/** desiredWorkers: the sum of positive numberOfNodes of bare-metal node sets. */
export function desiredWorkers(requests: readonly NodeRequest[] | undefined): number {
  let sum = 0;
  for (const r of requests ?? []) {
    if (isBareMetalRequest(r) && Number.isInteger(r.numberOfNodes) && r.numberOfNodes > 0) sum += r.numberOfNodes;
  }
  return sum;
}

/** Progressing unless every desired worker is Ready and nothing else is in flight. */
export function orderPhase(deleting: boolean, desired: number, workers: readonly WorkerStatus[]): string {
  if (deleting) return "Deleting";
  const c = countWorkers(workers);
  return c.ready === desired && c.current === desired && c.failed === 0 ? "Ready" : "Progressing";
}
