// `run --mode observe`: the loop runs, observes, plans and previews every order, and acts on nothing. No
// update, no fulfillment-service mutation (the observation creates nothing, not even the system catalog
// item), no finalizer, status or event: the only write to the order is the report annotation, ours alone,
// and only when it changed (planner/observeReport.ts). The preview runs the program and its providers on
// a stack of the observer's own (App.observePreviews), once per plan, so a dormant controller proves it
// can run against the incumbent's world before it is switched on.
import type { HubApi } from "../clients/kube";
import type { Observation, OrderRef } from "../io/observe";
import { redact } from "../planner/redact";
import { changeKey } from "../planner/changeControl";
import { fingerprint } from "../planner/fingerprint";
import { OBSERVE_REPORT_ANNOTATION, observeReport, type PreviewOutcome } from "../planner/observeReport";
import { isBareMetalRequest } from "../planner/status";
import type { Plan } from "../planner/types";
import type { PreviewResult } from "../stack/operations";
import type { ReconcileResult } from "./reconcileDeps";

export interface ObserveOnlyDeps {
  kube: Pick<HubApi, "getClusterOrder" | "patchClusterOrderMetadata">;
  /** A read-only observation and the plan a reconcile would make from it (App.observeAndPlan). */
  observeAndPlan(ref: OrderRef): Promise<{ observation: Observation; plan: Plan }>;
  /** The engine's preview of the update that plan would run, on a stack that is not the acting backend's. */
  preview(ref: OrderRef, observation: Observation): Promise<Pick<PreviewResult, "changeSummary">>;
  /** Per order: the plan last previewed, what its preview showed, and when. */
  previewed: Map<string, { plan: string; outcome: PreviewOutcome; at: number }>;
}

/** A failed preview is tried again after this long, even for the same plan (the cause may have been passing). */
export const FAILED_PREVIEW_RETRY_MS = 10 * 60_000;

/** The preview of this plan: run once per plan (a preview costs a pulumi run), remembered otherwise. */
async function previewOnce(deps: ObserveOnlyDeps, ref: OrderRef, observation: Observation, plan: Plan): Promise<PreviewOutcome | undefined> {
  // A paused or held plan runs no update (the program refuses it): there is nothing to preview.
  if (plan.paused) return undefined;
  const key = `${ref.namespace}/${ref.name}`;
  // New workers' names move with the order's resourceVersion: key by what stays (existing workers, changes by kind).
  const planned = `${fingerprint({ ...plan, workers: plan.workers.filter((w) => !w.requiresFence) })}/${(plan.changes ?? []).map(changeKey).sort().join(",")}`;
  const last = deps.previewed.get(key);
  if (last?.plan === planned && (last.outcome.ok || Date.now() - last.at < FAILED_PREVIEW_RETRY_MS)) return last.outcome;
  let outcome: PreviewOutcome;
  try {
    const c = (await deps.preview(ref, observation)).changeSummary;
    outcome = { ok: true, create: c.create ?? 0, update: c.update ?? 0, delete: (c.delete ?? 0) + (c.replace ?? 0) };
  } catch (err) {
    outcome = { ok: false, error: redact(String((err as Error).message ?? err)).slice(0, 300) };
  }
  deps.previewed.set(key, { plan: planned, outcome, at: Date.now() });
  return outcome;
}

export async function observeOnly(deps: ObserveOnlyDeps, ref: OrderRef): Promise<ReconcileResult> {
  const order = await deps.kube.getClusterOrder(ref.namespace, ref.name);
  if (!order) {
    deps.previewed.delete(`${ref.namespace}/${ref.name}`);
    return { action: "gone" };
  }
  if (!(order.spec.nodeRequests ?? []).some(isBareMetalRequest) && !(order.status?.workers ?? []).length) return { action: "ignored" };
  const { observation, plan } = await deps.observeAndPlan(ref);
  const report = observeReport(order, plan, await previewOnce(deps, ref, observation, plan));
  const text = JSON.stringify(report);
  if (order.metadata.annotations?.[OBSERVE_REPORT_ANNOTATION] !== text) {
    await deps.kube.patchClusterOrderMetadata(ref, { annotations: { [OBSERVE_REPORT_ANNOTATION]: text } });
  }
  return { action: "observed", plan, message: report.agrees ? "agrees with the recorded workers" : report.differences.join("; ") };
}
