// What the program (index.ts) plans from. Run by the reconciler's `up`, it gets the reconciler's
// observation (handoff.ts) and plans from that, after ONE read of the ClusterOrder proves the order is
// still at the handed-off resourceVersion; otherwise (an admin's `pulumi preview` or `up`, a changed
// order, a bad handoff file) it observes for itself as it always did. Every planning pass gets its own
// name generator from the observation's seed, so the plan here names the BMIs the reconciler's plan named.
import type { HubReader } from "../clients/kube";
import { plan as makePlan } from "../planner";
import type { Pin } from "../planner/pin";
import type { IgnitionFetch, Plan, PlannerConfig, Snapshot } from "../planner/types";
import { HandoffError, readHandoffSource, WITHHELD_IGNITION, type HandedOff, type HandoffSource } from "./handoff";
import { incarnationNames } from "./incarnationNames";
import { ownedInfraEnv, type Observation, type OrderRef } from "./observe";

export interface ProgramPlanDeps {
  kube: Pick<HubReader, "getClusterOrder" | "listInfraEnvs">;
  config: PlannerConfig;
  /** The program's own observation of the order (io/observe.ts observe). */
  observe: () => Promise<Observation>;
  /** Fetches the discovery ignition at an URL (clients/ignition.ts fetchIgnition with the program's CA and limits). */
  loadIgnition: (url: string) => Promise<IgnitionFetch>;
  log: (message: string) => void;
  /** A preview (dry run): only then may a handed-off snapshot plan as if approved (Snapshot.previewApproval). */
  preview?: boolean;
}

export interface ProgramPlan {
  snapshot: Snapshot;
  plan: Plan;
  fulfillmentError?: string;
  /** Where the snapshot came from: the reconciler's handoff, or the program's own observation. */
  source: "handoff" | "observed";
}

/** One planning pass: the rollback pin (the program's own stack config), and a fresh name generator from the observation's seed. */
export function planPass(snapshot: Snapshot, nameSeed: string, pin: Pin | undefined): Plan {
  const { pin: _handed, ...rest } = snapshot;
  return makePlan({ ...rest, ...(pin ? { pin } : {}), newName: incarnationNames(nameSeed) });
}

/** Whether the plan declares a BMI that this update may create (not one adopted by id): it needs the ignition. */
export function mayCreateBmi(plan: Plan): boolean {
  return plan.workers.some((w) => !w.bmi.adoptId);
}

/** The handoff, if it is valid and the order is still at its resourceVersion; undefined otherwise (logged why). */
async function currentHandoff(deps: ProgramPlanDeps, ref: OrderRef, source: HandoffSource): Promise<HandedOff | undefined> {
  let handed: HandedOff;
  try {
    handed = readHandoffSource(source, ref, deps.config);
  } catch (err) {
    if (!(err instanceof HandoffError)) throw err;
    deps.log(`the reconciler's observation is not usable (${err.message}); observing the order again`);
    return undefined;
  }
  const order = await deps.kube.getClusterOrder(ref.namespace, ref.name);
  const handedVersion = handed.snapshot.order.metadata.resourceVersion;
  if (order?.metadata.resourceVersion !== handedVersion) {
    deps.log(`ClusterOrder ${ref.namespace}/${ref.name} changed since the reconciler observed it (resourceVersion ${handedVersion} → ` +
      `${order?.metadata.resourceVersion ?? "gone"}); observing it again`);
    return undefined;
  }
  return handed;
}

async function observed(deps: ProgramPlanDeps, pin: Pin | undefined): Promise<ProgramPlan> {
  const obs = await deps.observe();
  return { snapshot: obs.snapshot, plan: planPass(obs.snapshot, obs.nameSeed, pin), fulfillmentError: obs.fulfillmentError, source: "observed" };
}

/**
 * The handed-off snapshot with the ignition of the order's InfraEnv fetched, or undefined when that
 * InfraEnv is no longer the one observed (recreated: the stale-ignition rules need a new observation).
 */
async function withIgnition(deps: ProgramPlanDeps, snapshot: Snapshot): Promise<Snapshot | undefined> {
  const owned = ownedInfraEnv(await deps.kube.listInfraEnvs(snapshot.order.metadata.namespace), snapshot.order);
  if (!owned?.ignitionUrl || owned.uid !== snapshot.infraEnv?.uid) return undefined;
  return { ...snapshot, ignition: await deps.loadIgnition(owned.ignitionUrl) };
}

export async function programPlan(deps: ProgramPlanDeps, ref: OrderRef, handoff: HandoffSource | undefined,
  pin: Pin | undefined): Promise<ProgramPlan> {
  const handed = handoff ? await currentHandoff(deps, ref, handoff) : undefined;
  if (!handed) return observed(deps, pin);
  const { previewApproval, ...rest } = handed.snapshot;
  let snapshot: Snapshot = deps.preview && previewApproval ? { ...rest, previewApproval } : rest;
  let plan = planPass(snapshot, handed.nameSeed, pin);
  if (handed.ignitionWithheld && mayCreateBmi(plan)) {
    const complete = await withIgnition(deps, snapshot);
    if (!complete) {
      deps.log(`the InfraEnv of ClusterOrder ${ref.namespace}/${ref.name} changed since the reconciler observed it; observing it again`);
      return observed(deps, pin);
    }
    snapshot = complete;
    plan = planPass(snapshot, handed.nameSeed, pin);
  }
  // The stand-in may only reach BMIs that are adopted, never a Create.
  const unfetched = plan.workers.filter((w) => !w.bmi.adoptId && w.bmi.userData === WITHHELD_IGNITION).map((w) => w.slot);
  if (unfetched.length > 0) throw new Error(`internal error: workers ${unfetched.join(", ")} would be created without their ignition`);
  return { snapshot, plan, fulfillmentError: handed.fulfillmentError, source: "handoff" };
}
