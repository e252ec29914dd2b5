// The observe and plan phases of a reconcile: one observation of the order's world, completed with what
// this process remembers of the order (rollback pin, last update's outcome, rejected Creates, the run of
// fulfillment errors), and the planner's plan of it.
import type { HubReader } from "../clients/kube";
import { plan as makePlan } from "../planner";
import type { ClusterOrder, Snapshot } from "../planner/types";
import { observe, type OrderRef } from "../io/observe";
import { clockOf, type Observed, type OrderMemory, type ReconcileDeps } from "./reconcileDeps";

export interface ObserveOptions {
  /** Whether a fulfillment failure of this observation counts toward FulfillmentServiceUnavailable (default true). */
  countErrors?: boolean;
  /** The order as this reconcile just read (or wrote) it: observation reads it no second time. */
  order?: ClusterOrder;
}

export async function observeAndPlan(deps: ReconcileDeps, ref: OrderRef, mem: OrderMemory, opts: ObserveOptions = {}):
  Promise<Observed> {
  const kube = opts.order ? knowing(deps.kube, opts.order) : deps.kube;
  // A reconcile applies changes, so it may create the system catalog item the updates need.
  const obs = await observe({ kube, fulfillment: deps.fulfillment, config: deps.config, ignitionCaFile: deps.ignitionCaFile,
    cache: deps.observeCache, createCatalogItem: true }, ref, clockOf(deps)());
  // Only a reconcile's own observations count toward FulfillmentServiceUnavailable, not the extra ones of
  // progress reports and conflict retries.
  if (opts.countErrors !== false) mem.consecutiveFulfillmentErrors = obs.fulfillmentError ? mem.consecutiveFulfillmentErrors + 1 : 0;
  const pin = await deps.stacks.pin(ref);
  await deps.hub?.refresh();
  // From here to the ledger's record, nothing awaits: no other order's plan can take the same hub budget.
  const hub = deps.hub?.others(obs.snapshot.order.metadata.uid);
  const snapshot: Snapshot = {
    ...obs.snapshot, fulfillmentErrors: mem.consecutiveFulfillmentErrors, ...(pin ? { pin } : {}),
    ...(mem.lastUpdate ? { lastUpdate: mem.lastUpdate } : {}),
    ...(mem.createRejections?.length ? { createRejections: mem.createRejections } : {}),
    ...(mem.savedPreview ? { savedPreviewOutcome: mem.savedPreview } : {}),
    ...(hub ? { hub } : {}),
  };
  const plan = makePlan(snapshot);
  deps.hub?.record(snapshot, plan);
  return { observation: { ...obs, snapshot }, snapshot, plan, ...(pin ? { pin } : {}) };
}

/** The hub as observation reads it, answering for the order with the version already in hand. */
function knowing(kube: HubReader, order: ClusterOrder): HubReader {
  return {
    getClusterOrder: async () => order,
    listAgents: (namespace, labelSelector) => kube.listAgents(namespace, labelSelector),
    listInfraEnvs: (namespace) => kube.listInfraEnvs(namespace),
    listNodePools: (namespace, labelSelector) => kube.listNodePools(namespace, labelSelector),
    listClusterDeployments: (namespace) => kube.listClusterDeployments(namespace),
  };
}
