// Change control by kind (issue 17, point 2). Every BMI create and delete a plan makes is classified; the
// kinds an approval policy names (the reconciler's setting, or the order's own annotation) wait for
// `baremetal-workers approve`, which approves exactly the changes that wait, by their fingerprint: a plan
// whose changes differ since is not approved. A waiting plan is a paused one (it declares what is there and
// changes nothing) that lists what waits in the ApprovalRequired condition.
import { cond, COND_APPROVAL_REQUIRED, type ConditionInput } from "./conditions";
import { CHANGE_KINDS, parseChangeKinds } from "./config";
import { orderEvent } from "./events";
import { canonicalJson, sha256 } from "./fingerprint";
import { isDeleting } from "./management";
import { labelledAgent } from "./correlation";
import { desiredBinding, desiredBmi, observedBmiOf } from "./desired";
import type { ChangeKind, DesiredWorker, Plan, PlannedEvent, Snapshot, WorkerStatus } from "./types";

/** An order's own policy: "none" or a comma-separated list of kinds; it replaces the reconciler's setting. */
export const APPROVAL_REQUIRED_ANNOTATION = "osac.openshift.io/approval-required";
/** The fingerprint of the changes an operator approved (written by `baremetal-workers approve`). */
export const APPROVED_PLAN_ANNOTATION = "osac.openshift.io/approved-plan";
/** Ours: the fingerprint of the changes that wait, so that `approve` can check they are still the ones. */
export const PENDING_PLAN_ANNOTATION = "osac.openshift.io/approval-pending";
export const REASON_APPROVAL_REQUIRED = "ApprovalRequired";
export const EV_APPROVAL_REQUIRED = "ApprovalRequired";

export interface PlannedChange {
  kind: ChangeKind;
  op: "create" | "delete";
  slot: string;
  nodeSet: string;
  bmi: string;
}

/**
 * The BMI of a recorded worker that may still exist: the live one observed (not being deleted), or, while
 * the BMIs cannot be listed, any recorded incarnation (unknown is not absent: fail closed).
 */
function liveBmiOf(snapshot: Snapshot, entry: WorkerStatus): { name: string; id?: string } | undefined {
  if (snapshot.bmis === undefined) {
    const { id, name } = entry.bareMetalInstance ?? {};
    return name && (id || entry.bmiCreateState === "Attempted") ? { name, ...(id ? { id } : {}) } : undefined;
  }
  const b = observedBmiOf(snapshot, entry);
  return b && b.state !== "Deleting" ? b : undefined;
}

/**
 * What an approval approves: the order and its changes, each by what stays the same from one observation
 * to the next (a new slot's and a new incarnation's names derive from the resourceVersion, which every
 * write moves): a create by kind, node set and (for a retry) slot; a delete by kind, slot and BMI name.
 */
export function changesFingerprint(orderUid: string, changes: readonly PlannedChange[]): string {
  return sha256(canonicalJson({ order: orderUid, changes: changes.map(changeKey).sort() }));
}

/** A change by what stays the same from one observation to the next (see changesFingerprint). */
export function changeKey(c: PlannedChange): string {
  return c.op === "create" ? `create/${c.kind}/${c.nodeSet}/${c.kind === "retry" ? c.slot : ""}` : `delete/${c.kind}/${c.slot}/${c.bmi}`;
}

/** Why a live BMI leaves the declared set, from the phase its worker had when the plan was made. */
function deleteKind(snapshot: Snapshot, prev: WorkerStatus): ChangeKind {
  if (isDeleting(snapshot.order)) return "clusterDeletion";
  switch (prev.phase) {
    case "Unbinding": return "scaleDown"; // CAPI released its Agent
    case "Deleting": return "retire"; // an unbound slot retired by a scale-down
    case "Failed": return "retry"; // the failed incarnation goes before the next one
    default: return "other";
  }
}

/** The BMI creates and deletes `plan` makes, each with its kind. */
export function plannedChanges(snapshot: Snapshot, plan: Plan): PlannedChange[] {
  const previous = (snapshot.order.status?.workers ?? []).filter((w) => w.kind === "BareMetalInstance");
  const prevBySlot = new Map(previous.map((w) => [w.name, w]));
  const declared = new Map(plan.workers.map((w) => [w.slot, w.bmi.name]));
  const out: PlannedChange[] = [];
  for (const w of plan.workers) {
    if (!w.requiresFence) continue;
    out.push({ kind: prevBySlot.get(w.slot)?.phase === "Failed" ? "retry" : "create", op: "create", slot: w.slot, nodeSet: w.nodeSet, bmi: w.bmi.name });
  }
  for (const prev of previous) {
    const live = liveBmiOf(snapshot, prev);
    if (!live || declared.get(prev.name) === live.name) continue;
    out.push({ kind: deleteKind(snapshot, prev), op: "delete", slot: prev.name, nodeSet: prev.nodeSet, bmi: live.name });
  }
  return out;
}

/** The kinds that wait for approval for this order: its annotation if it has a valid one, else the setting. */
export function approvalPolicy(snapshot: Snapshot): { kinds: Set<ChangeKind>; invalid?: string } {
  const raw = snapshot.order.metadata.annotations?.[APPROVAL_REQUIRED_ANNOTATION];
  if (raw === undefined) return { kinds: new Set(snapshot.config.approvalRequired) };
  try {
    return { kinds: new Set(parseChangeKinds(APPROVAL_REQUIRED_ANNOTATION, raw)) };
  } catch (err) {
    // A bad override must not loosen the policy: every kind waits until it is fixed.
    return { kinds: new Set(CHANGE_KINDS), invalid: (err as Error).message };
  }
}

/**
 * The changes in words that stay the same from one observation to the next, like the fingerprint's: a
 * create is named by its node set (and a retry by its worker), not by the BMI and worker names a new
 * incarnation gets from the resourceVersion. A condition naming those would change with every report
 * that moves the resourceVersion, and so be written again on every pass.
 */
export function describeChanges(changes: readonly PlannedChange[]): string {
  return changes.map((c) => (c.op === "create"
    ? c.kind === "retry" ? `create a new BMI for worker ${c.slot} (retry, node set ${c.nodeSet})` : `create a new worker's BMI (create, node set ${c.nodeSet})`
    : `delete ${c.bmi} (${c.kind}, worker ${c.slot})`)).join("; ");
}

export interface ApprovalGate {
  /** Undefined: nothing waits, apply the plan. Else what waits and the plan's fingerprint. */
  waiting?: { fingerprint: string; changes: PlannedChange[] };
  condition: ConditionInput;
  events: PlannedEvent[];
  annotations: Record<string, string | null>;
}

/**
 * What a held plan must declare beyond a paused plan's: every live BMI of the order's workers (a paused
 * plan declares only active ones), with its binding while its Agent is there, so that nothing is deleted.
 */
export function holdDeclarations(snapshot: Snapshot, held: Plan): DesiredWorker[] {
  const declared = new Set(held.workers.map((w) => w.slot));
  const out: DesiredWorker[] = [];
  for (const entry of snapshot.order.status?.workers ?? []) {
    const live = entry.kind === "BareMetalInstance" && !declared.has(entry.name) ? liveBmiOf(snapshot, entry) : undefined;
    if (!live) continue;
    const adopted: WorkerStatus = { ...entry, bareMetalInstance: { name: live.name, ...(live.id ? { id: live.id } : {}) } };
    const worker: DesiredWorker = { slot: entry.name, nodeSet: entry.nodeSet, bmi: desiredBmi(snapshot, adopted, undefined) };
    const agent = labelledAgent(snapshot.agents, snapshot.order, entry.name, undefined);
    const binding = agent && entry.phase !== "Deleting" ? desiredBinding(snapshot, entry, agent) : undefined;
    if (binding) worker.binding = binding;
    out.push(worker);
  }
  return out;
}

/** Whether `full` (a finished, managed plan, its `changes` classified) must wait for approval under the order's policy. */
export function approvalGate(snapshot: Snapshot, full: Plan): ApprovalGate {
  const annotations = snapshot.order.metadata.annotations ?? {};
  const policy = approvalPolicy(snapshot);
  // A cluster deletion under way (every worker reported Deleting) was approved, or not gated, when it began.
  const workers = snapshot.order.status?.workers ?? [];
  const underway = isDeleting(snapshot.order) && workers.every((w) => w.phase === "Deleting");
  const changes = full.changes ?? plannedChanges(snapshot, full);
  const gated = underway ? [] : changes.filter((c) => policy.kinds.has(c.kind));
  const bad = policy.invalid ? ` (the order's ${APPROVAL_REQUIRED_ANNOTATION} is not valid, so every kind waits: ${policy.invalid})` : "";
  if (gated.length === 0) {
    // Nothing waits (any more): an approval given earlier has been used and must not approve a later plan.
    const clear: Record<string, string | null> = {};
    for (const k of [PENDING_PLAN_ANNOTATION, APPROVED_PLAN_ANNOTATION]) if (annotations[k] !== undefined) clear[k] = null;
    return { condition: cond(COND_APPROVAL_REQUIRED, "False", "NothingWaits", `no planned change waits for approval${bad}`), events: [], annotations: clear };
  }
  const fp = changesFingerprint(snapshot.order.metadata.uid, changes);
  // previewApproval: `preview --save` shows a waiting plan as it would apply once approved (never an update).
  if (annotations[APPROVED_PLAN_ANNOTATION] === fp || snapshot.previewApproval === fp) {
    const clear: Record<string, string | null> = annotations[PENDING_PLAN_ANNOTATION] !== undefined ? { [PENDING_PLAN_ANNOTATION]: null } : {};
    return { condition: cond(COND_APPROVAL_REQUIRED, "False", "Approved", `changes ${fp.slice(0, 12)} were approved: ${describeChanges(gated)}`),
      events: [], annotations: clear };
  }
  const message = `${gated.length} planned change(s) wait for approval: ${describeChanges(gated)}; nothing of this plan is applied until ` +
    `\`baremetal-workers approve ${snapshot.order.metadata.namespace}/${snapshot.order.metadata.name} --plan ${fp.slice(0, 12)}\`${bad}`;
  return {
    waiting: { fingerprint: fp, changes: gated },
    condition: cond(COND_APPROVAL_REQUIRED, "True", REASON_APPROVAL_REQUIRED, message),
    events: [orderEvent(EV_APPROVAL_REQUIRED, [fp], message)],
    annotations: { [PENDING_PLAN_ANNOTATION]: fp },
  };
}
