// `run --mode observe`: the loop runs, observes and plans every order, and acts on nothing. No stack
// operation, no fulfillment-service mutation (the observation creates nothing, not even the system
// catalog item), no finalizer, status or event: the only write is the report annotation, ours alone,
// and only when it changed (planner/observeReport.ts).
import type { HubApi } from "../clients/kube";
import { OBSERVE_REPORT_ANNOTATION, observeReport } from "../planner/observeReport";
import { isBareMetalRequest } from "../planner/status";
import type { Plan } from "../planner/types";
import type { OrderRef } from "../io/observe";
import type { ReconcileResult } from "./reconcileDeps";

export interface ObserveOnlyDeps {
  kube: Pick<HubApi, "getClusterOrder" | "patchClusterOrderMetadata">;
  /** The plan a reconcile would make now, from a read-only observation (App.currentPlan). */
  currentPlan(ref: OrderRef): Promise<Plan>;
}

export async function observeOnly(deps: ObserveOnlyDeps, ref: OrderRef): Promise<ReconcileResult> {
  const order = await deps.kube.getClusterOrder(ref.namespace, ref.name);
  if (!order) return { action: "gone" };
  if (!(order.spec.nodeRequests ?? []).some(isBareMetalRequest) && !(order.status?.workers ?? []).length) return { action: "ignored" };
  const plan = await deps.currentPlan(ref);
  const report = observeReport(order, plan);
  const text = JSON.stringify(report);
  if (order.metadata.annotations?.[OBSERVE_REPORT_ANNOTATION] !== text) {
    await deps.kube.patchClusterOrderMetadata(ref, { annotations: { [OBSERVE_REPORT_ANNOTATION]: text } });
  }
  return { action: "observed", plan, message: report.agrees ? "agrees with the recorded workers" : report.differences.join("; ") };
}
