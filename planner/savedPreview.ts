// Saved previews (issue 17, point 3). `baremetal-workers preview --save` records on the order what the
// next update will do: its planned changes (by stable keys) and the engine's changing steps, new names
// replaced by placeholders. Once `approve --plan <id>` names it, the next update must do exactly that:
// the plan's changes are checked here, the engine's steps by a preview just before the update and by the
// update's own steps after it. Anything else fails closed with PlanDiverged True, and the order is held.
//
// New BMIs and new workers are named from the order's resourceVersion (io/incarnationNames.ts), which the
// save and the approval themselves move, so a saved preview names them by node set, not by name.
import { cond, COND_PLAN_DIVERGED, type ConditionInput } from "./conditions";
import { changeKey, type PlannedChange } from "./changeControl";
import { canonicalJson, sha256 } from "./fingerprint";
import type { ClusterOrder, Snapshot } from "./types";

/** Ours to read, written by `preview --save`: the saved preview as JSON. */
export const SAVED_PREVIEW_ANNOTATION = "osac.openshift.io/saved-preview";
export const REASON_PLAN_DIVERGED = "PlanDiverged";

export interface SavedPreview {
  id: string;
  /** Stable keys of the planned changes (changeControl.ts changeKey), sorted. */
  changes: string[];
  /** `op URN` of every changing engine step, new names as placeholders, sorted (a multiset). */
  steps: string[];
  savedAt: string;
}

/** An engine step as the planner sees one (stack/eventLog.ts gives these). */
export interface StepRecord {
  urn: string;
  op: string;
}

/** What the last reconcile learned about a saved preview it checked or ran (kept in the reconciler's memory). */
export interface SavedPreviewOutcome {
  id: string;
  /** Whether its update ran (its annotations are then removed); false: the preview before it refused it. */
  ran: boolean;
  /** Why it diverged; undefined when the update did exactly what was saved. */
  diverged?: string;
}

const UNCHANGING = new Set(["same", "refresh", "read"]);

/** Placeholders for the names this plan gives new workers and BMIs: `new:<node set>:worker|bmi`. */
export function newNames(changes: readonly PlannedChange[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of changes) {
    if (c.op !== "create") continue;
    out[c.bmi] = `new:${c.nodeSet}:bmi`;
    if (c.kind === "create") out[c.slot] = `new:${c.nodeSet}:worker`;
  }
  return out;
}

/** A URN with its resource name (the part after the last `::`) in placeholder form when it names something new. */
function normalizeUrn(urn: string, names: Record<string, string>): string {
  const at = urn.lastIndexOf("::");
  const name = urn.slice(at + 2);
  for (const [real, placeholder] of Object.entries(names)) {
    if (name === real) return `${urn.slice(0, at + 2)}${placeholder}`;
    if (name.startsWith(`${real}-`)) return `${urn.slice(0, at + 2)}${placeholder}${name.slice(real.length)}`;
  }
  return urn;
}

/** The changing steps of a preview or update as a sorted list of `op URN`, new names as placeholders. */
export function normalizedSteps(steps: readonly StepRecord[], names: Record<string, string>): string[] {
  return steps.filter((s) => !UNCHANGING.has(s.op)).map((s) => `${s.op} ${normalizeUrn(s.urn, names)}`).sort();
}

export function savedPreviewOf(orderUid: string, changes: readonly string[], steps: readonly string[], savedAt: string): SavedPreview {
  const sortedChanges = [...changes].sort();
  const sortedSteps = [...steps].sort();
  // savedAt too: saving the same changes again is another preview, whose approval and outcome are its own.
  const id = sha256(canonicalJson({ order: orderUid, changes: sortedChanges, steps: sortedSteps, savedAt }));
  return { id, changes: sortedChanges, steps: sortedSteps, savedAt };
}

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === "string");

/** The order's saved preview; `invalid` says why the annotation cannot be one (it is then held, not ignored). */
export function readSavedPreview(order: ClusterOrder): { saved?: SavedPreview; invalid?: string } {
  const raw = order.metadata.annotations?.[SAVED_PREVIEW_ANNOTATION];
  if (raw === undefined) return {};
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch {
    return { invalid: `${SAVED_PREVIEW_ANNOTATION} is not JSON` };
  }
  const d = doc as Partial<SavedPreview> | null;
  if (!d || typeof d.id !== "string" || !isStrings(d.changes) || !isStrings(d.steps) || typeof d.savedAt !== "string") {
    return { invalid: `${SAVED_PREVIEW_ANNOTATION} is not a saved preview (id, changes, steps, savedAt)` };
  }
  const again = savedPreviewOf(order.metadata.uid, d.changes, d.steps, d.savedAt);
  if (again.id !== d.id) return { invalid: `${SAVED_PREVIEW_ANNOTATION} ${d.id.slice(0, 12)} does not match its content or this order` };
  return { saved: again };
}

/** What differs between two sorted multisets of strings: in `want` only, and in `got` only. */
export function multisetDifference(want: readonly string[], got: readonly string[]): { missing: string[]; extra: string[] } {
  const left = new Map<string, number>();
  for (const w of want) left.set(w, (left.get(w) ?? 0) + 1);
  const extra: string[] = [];
  for (const g of got) {
    const n = left.get(g) ?? 0;
    if (n > 0) left.set(g, n - 1);
    else extra.push(g);
  }
  const missing = [...left].flatMap(([k, n]) => Array.from({ length: n }, () => k));
  return { missing, extra };
}

/** "saved but not planned: …; planned but not saved: …", or undefined when both are the same. */
export function describeDivergence(what: string, want: readonly string[], got: readonly string[]): string | undefined {
  const { missing, extra } = multisetDifference(want, got);
  if (missing.length === 0 && extra.length === 0) return undefined;
  const parts: string[] = [];
  if (missing.length) parts.push(`saved but not ${what}: ${missing.join(", ")}`);
  if (extra.length) parts.push(`${what} but not saved: ${extra.join(", ")}`);
  return parts.join("; ");
}

export type SavedPreviewGate =
  /** No saved preview that applies: the plan goes on as usual. `ran`: the order's saved preview was run, remove it. */
  | { kind: "none"; condition?: ConditionInput; ran?: boolean }
  /** Approved and the plan's changes are the saved ones: the update must do exactly the saved steps. */
  | { kind: "run"; saved: SavedPreview; condition: ConditionInput }
  /** Fail closed: hold the order and say why. */
  | { kind: "diverged"; saved?: SavedPreview; message: string; condition: ConditionInput };

const held = (snapshot: Snapshot) =>
  (snapshot.order.status?.conditions ?? []).some((c) => c.type === COND_PLAN_DIVERGED && c.status === "True");

/**
 * The saved preview's say on a finished plan: none (not saved, or saved and not yet approved), run it, or
 * hold the order because it diverged. `approvedPlan` is the order's approved-plan annotation. PlanDiverged
 * is True only while the order is held by it.
 */
export function savedPreviewGate(snapshot: Snapshot, changes: readonly PlannedChange[], approvedPlan: string | undefined): SavedPreviewGate {
  const { saved, invalid } = readSavedPreview(snapshot.order);
  const outcome = snapshot.savedPreviewOutcome?.id === saved?.id || !saved ? snapshot.savedPreviewOutcome : undefined;
  const ref = `${snapshot.order.metadata.namespace}/${snapshot.order.metadata.name}`;
  const release = `nothing of this order is changed until it is saved and approved again or its ${SAVED_PREVIEW_ANNOTATION} annotation is removed`;
  if (invalid) {
    const message = `${invalid}; nothing of this order is changed until the annotation is fixed or removed`;
    return { kind: "diverged", message, condition: cond(COND_PLAN_DIVERGED, "True", "SavedPreviewInvalid", message) };
  }
  if (saved && outcome && !outcome.ran && outcome.diverged) {
    const message = `the preview before the update of approved saved preview ${saved.id.slice(0, 12)} showed other steps (${outcome.diverged}); ${release}`;
    return { kind: "diverged", saved, message, condition: cond(COND_PLAN_DIVERGED, "True", REASON_PLAN_DIVERGED, message) };
  }
  if (outcome?.ran) {
    // Run by this reconciler: its annotations go with this report; the condition says how it went.
    return { kind: "none", ran: Boolean(saved), condition: outcome.diverged
      ? cond(COND_PLAN_DIVERGED, "False", "DivergedDuringUpdate",
        `the update of saved preview ${outcome.id.slice(0, 12)} made other steps than its preview (the world moved in between): ${outcome.diverged}`)
      : cond(COND_PLAN_DIVERGED, "False", "Applied", `the update did exactly what saved preview ${outcome.id.slice(0, 12)} showed`) };
  }
  if (!saved) {
    return held(snapshot)
      ? { kind: "none", condition: cond(COND_PLAN_DIVERGED, "False", "NoSavedPreview", "no saved preview holds this order") }
      : { kind: "none" };
  }
  if (approvedPlan !== saved.id) {
    return { kind: "none", condition: cond(COND_PLAN_DIVERGED, "False", "SavedPreviewNotApproved",
      `saved preview ${saved.id.slice(0, 12)} waits for \`baremetal-workers approve ${ref} --plan ${saved.id.slice(0, 12)}\`; until then it binds nothing`) };
  }
  const diff = describeDivergence("planned", saved.changes, changes.map(changeKey).sort());
  if (diff) {
    const message = `the plan no longer makes the changes of approved saved preview ${saved.id.slice(0, 12)} (${diff}); ${release}`;
    return { kind: "diverged", saved, message, condition: cond(COND_PLAN_DIVERGED, "True", REASON_PLAN_DIVERGED, message) };
  }
  return { kind: "run", saved, condition: cond(COND_PLAN_DIVERGED, "False", "SavedPreviewApproved",
    `the next update must make exactly the ${saved.steps.length} step(s) of approved saved preview ${saved.id.slice(0, 12)}, or it is not run`) };
}

/** The new names an update's or preview's program reported (its `newNames` output), if well formed. */
function reportedNewNames(outputs: Record<string, unknown> | undefined): Record<string, string> {
  const names = outputs?.newNames;
  if (!names || typeof names !== "object") return {};
  return Object.fromEntries(Object.entries(names).filter((e): e is [string, string] => typeof e[1] === "string"));
}

/** How the steps of a preview or an update differ from the saved ones, or undefined when they are the same. */
export function stepsDivergence(saved: SavedPreview, run: { steps?: readonly StepRecord[]; outputs?: Record<string, unknown> },
  what: "previewed" | "done"): string | undefined {
  return describeDivergence(what, saved.steps, normalizedSteps(run.steps ?? [], reportedNewNames(run.outputs)));
}
