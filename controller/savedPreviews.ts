// The operator's side of saved previews (planner/savedPreview.ts holds the rules): `preview --save` runs
// the engine's preview of the update the loop would run from this very observation, and records its
// changes and steps on the order; `approve --plan <id>` approves a saved preview by its id.
import { ConflictError, type HubApi } from "../clients/kube";
import type { Observation, OrderRef } from "../io/observe";
import { RefusedError } from "../lib/refused";
import { APPROVED_PLAN_ANNOTATION } from "../planner/changeControl";
import {
  normalizedSteps, readSavedPreview, SAVED_PREVIEW_ANNOTATION, savedPreviewOf, type SavedPreview,
} from "../planner/savedPreview";
import type { ClusterOrder, Plan } from "../planner/types";
import type { PreviewResult } from "../stack/operations";
import type { StackManager } from "../stack/stacks";

export interface SavePreviewDeps {
  kube: Pick<HubApi, "patchClusterOrderMetadata">;
  stacks: Pick<StackManager, "preview">;
  /** A read-only observation of the order and the plan a reconcile would make from it. */
  observe: (ref: OrderRef) => Promise<{ observation: Observation; plan: Plan }>;
}

function stringsOutput(outputs: Record<string, unknown>, key: string): string[] {
  const v = outputs[key];
  if (!Array.isArray(v) || !v.every((s) => typeof s === "string")) {
    throw new Error(`the program's preview reported no ${key} (is the stack's program older than this CLI?)`);
  }
  return v;
}

function namesOutput(outputs: Record<string, unknown>): Record<string, string> {
  const v = outputs.newNames;
  if (!v || typeof v !== "object") throw new Error("the program's preview reported no newNames (is the stack's program older than this CLI?)");
  return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === "string"));
}

/**
 * Previews the next update from one observation, handed to the program so that both plan alike; a plan
 * that waits for approval is previewed as approved (only a preview may plan so), since that is what it
 * would do once approved. The saved preview is written only if the order is still as observed.
 */
export async function saveUpdatePreview(deps: SavePreviewDeps, ref: OrderRef, now = new Date()):
  Promise<PreviewResult & { plan: Plan; saved: SavedPreview }> {
  const { observation, plan } = await deps.observe(ref);
  const snapshot = plan.approval ? { ...observation.snapshot, previewApproval: plan.approval.fingerprint } : observation.snapshot;
  const result = await deps.stacks.preview(ref, { observation: { ...observation, snapshot } });
  const order = observation.snapshot.order;
  const saved = savedPreviewOf(order.metadata.uid, stringsOutput(result.outputs, "plannedChanges"),
    normalizedSteps(result.steps, namesOutput(result.outputs)), now.toISOString());
  try {
    await deps.kube.patchClusterOrderMetadata(ref, { annotations: { [SAVED_PREVIEW_ANNOTATION]: JSON.stringify(saved) } },
      order.metadata.resourceVersion);
  } catch (err) {
    if (!(err instanceof ConflictError)) throw err;
    throw new RefusedError(`ClusterOrder ${ref.namespace}/${ref.name} changed while it was previewed; nothing was saved: preview it again`);
  }
  return { ...result, plan, saved };
}

/**
 * Approves the order's saved preview when `named` names it (12+ characters of its id); undefined when the
 * order has no saved preview or `named` is another fingerprint (the caller then approves waiting changes).
 */
export async function approveSavedPreview(kube: Pick<HubApi, "patchClusterOrderMetadata">, ref: OrderRef, order: ClusterOrder,
  named: string): Promise<SavedPreview | undefined> {
  const { saved } = readSavedPreview(order);
  const id = named.trim();
  if (!saved || id.length < 12 || !saved.id.startsWith(id)) return undefined;
  await kube.patchClusterOrderMetadata(ref, { annotations: { [APPROVED_PLAN_ANNOTATION]: saved.id } }, order.metadata.resourceVersion);
  return saved;
}
