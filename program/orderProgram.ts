// The Pulumi program of one ClusterOrder's stack. It plans (planner/, pure) from the reconciler's
// observation when the reconciler hands one over and the order has not changed since, else from its own
// (io/programPlan.ts), fences new BMI creates in the order's status, and declares the resources the plan
// asks for. The same function runs as the on-disk project's program (index.ts: an admin's `pulumi preview`,
// a program process) and inside the reconciler, served to the CLI of its `up` (stack/inlineProgram.ts).
import * as pulumi from "@pulumi/pulumi";
import { FulfillmentClient } from "../clients/fulfillment";
import { ConflictError, Kube, loadKubeConfig } from "../clients/kube";
import { ClusterWorkers } from "../components/clusterWorkers";
import { connectionOptions } from "../providers/fulfillmentConnection";
import { failpoint, failpointDelay } from "../lib/failpoints";
import { observe, parseOrderRef, type OrderRef } from "../io/observe";
import type { HandoffSource } from "../io/handoff";
import { programPlan } from "../io/programPlan";
import { observeHubInFlight } from "../io/hubInFlight";
import { fetchIgnition } from "../clients/ignition";
import { checkProviderKubeconfig, type ProgramSettings, settings as programSideSettings } from "../config/settings";
import { writeFence } from "../io/status";
import { fingerprint } from "../planner";
import { IGNITION_OF_NEW_INFRAENV, infraEnvName } from "../planner/names";
import { newInfraEnvIgnition } from "../io/newInfraEnvIgnition";
import { REASON_HOST_SAFETY_REFUSED } from "../planner/hostSafety";
import { changeKey, REASON_APPROVAL_REQUIRED } from "../planner/changeControl";
import { newNames, REASON_PLAN_DIVERGED } from "../planner/savedPreview";

/** How long and how often a new order's update looks for its new InfraEnv's discovery ignition. */
const NEW_INFRAENV_WAIT_MS = 30_000;
const NEW_INFRAENV_POLL_MS = 250;

/** A BMI to be created from the ignition of the InfraEnv this update creates (planner IGNITION_OF_NEW_INFRAENV). */
function awaitsNewInfraEnv(w: Plan["workers"][number]): boolean {
  return !w.bmi.adoptId && w.bmi.userData === IGNITION_OF_NEW_INFRAENV;
}

/** Plans the loop runs no update on: a preview or a manual `up` must not either. */
const HELD_REASONS: ReadonlySet<string> = new Set([REASON_HOST_SAFETY_REFUSED, REASON_APPROVAL_REQUIRED, REASON_PLAN_DIVERGED]);
import { parsePin } from "../planner/pin";
import type { IgnitionFetch, Plan, PlannerConfig, Snapshot } from "../planner/types";

export interface OrderProgramInput {
  /** The program's settings as environment variables (config/settings.ts): BMW_* and KUBECONFIG. */
  env: NodeJS.ProcessEnv;
  /** The reconciler's observation, if it handed one over. */
  handoff?: HandoffSource;
  /** Inside the reconciler: its own clients, which the program uses and leaves open. Else it opens its own. */
  clients?: { kube: Kube; fulfillment: FulfillmentClient };
}

/** The program of one stack run with `input`. */
export function orderProgram(input: OrderProgramInput): () => Promise<Record<string, unknown>> {
  return () => runOrderProgram(input);
}

function programOutputs(ref: { namespace: string; name: string }, plan: Plan, workers: Plan["workers"]): Record<string, unknown> {
  return {
    clusterOrder: `${ref.namespace}/${ref.name}`,
    // What this update declared; the loop skips the next `up` while its own plan hashes the same.
    fingerprint: fingerprint({ ...plan, workers }),
    // What `preview --save` records (planner/savedPreview.ts): the changes by stable keys, and the new names to normalize.
    plannedChanges: (plan.changes ?? []).map(changeKey).sort(),
    newNames: newNames(plan.changes ?? []),
  };
}

/** Refuses to declare anything when the declaration could delete or duplicate a worker. */
function refuseUnsafePlan(snapshot: Snapshot, plan: Plan, fulfillmentError: string | undefined): void {
  if (snapshot.bmis === undefined) {
    // Declaring from an unknown BMI list could delete or duplicate workers: change nothing instead.
    throw new Error(`the fulfillment-service could not be read (${fulfillmentError}); ` +
      "nothing is created or deleted until its BareMetalInstances can be listed");
  }
  if (plan.paused && HELD_REASONS.has(plan.paused.reason)) {
    throw new Error(plan.paused.message);
  }
  const unidentified = plan.workers.filter((w) => w.retainBinding && !w.binding).map((w) => w.slot);
  if (unidentified.length > 0) {
    // Dropping a binding deletes its Agent: when an Agent cannot be identified this time, change nothing.
    throw new Error(`the Agents of workers ${unidentified.join(", ")} cannot be identified right now ` +
      "(unreadable MACs or inventory); nothing is changed until they can");
  }
}

interface StackDeclaration {
  /** The program's settings as environment variables (inline: not this process's environment). */
  env: NodeJS.ProcessEnv;
  ref: OrderRef;
  kube: Kube;
  snapshot: Snapshot;
  plan: Plan;
  settings: ProgramSettings;
  plannerConfig: PlannerConfig;
  loadIgnition: (url: string) => Promise<IgnitionFetch>;
}

/** Fences new BMIs and declares the stack's resources; returns the workers declared. */
async function declareStack({ env, ref, kube, snapshot, plan, settings, plannerConfig, loadIgnition }: StackDeclaration): Promise<Plan["workers"]> {
  const update = !pulumi.runtime.isDryRun();
  // A new order's BMIs wait, inside this update, for the ignition of the InfraEnv it creates (F18); a
  // preview declares them as they are: it creates nothing, and the BMI provider never sends the placeholder.
  const later = update ? plan.workers.filter(awaitsNewInfraEnv) : [];
  let workers = plan.workers;
  const fence = async () => {
    try {
      await failpointDelay("program.beforeFence", env); // tests: hold the window between observation and fence open
      // Persist "Attempted" before any Create can reach the service (conditional on resourceVersion).
      await writeFence(kube, snapshot.order, plan);
      failpoint("program.afterFence"); // fault suite: killed after the fence, before any Create
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
      pulumi.log.warn(`ClusterOrder ${ref.namespace}/${ref.name} changed while planning; ` +
        "new workers wait for the next run");
      workers = workers.filter((w) => !w.requiresFence);
    }
  };
  if (plan.fence.length > 0 && update && later.length === 0) await fence();
  const declared = new ClusterWorkers(ref.name, {
    plan: { ...plan, workers },
    later: new Set(later.map((w) => w.slot)),
    namespace: ref.namespace,
    orderName: ref.name,
    orderUid: snapshot.order.metadata.uid,
    fulfillment: settings.fulfillment,
    kubeconfigPath: settings.kubeconfigPath,
  });
  if (later.length === 0) return workers;
  // Before the fence: an InfraEnv that publishes no usable ignition fails the update with nothing recorded.
  const ignition = await newInfraEnvIgnition({ kube, loadIgnition }, snapshot.order, {
    infraEnvName: infraEnvName(ref.name), timeoutMs: NEW_INFRAENV_WAIT_MS, pollMs: NEW_INFRAENV_POLL_MS,
    maxBytes: plannerConfig.ignitionMaxBytes,
  });
  if (plan.fence.length > 0) await fence();
  for (const w of later) {
    if (workers.includes(w)) declared.declareWorker({ ...w, bmi: { ...w.bmi, userData: ignition } });
  }
  return workers;
}

async function runOrderProgram({ env, handoff, clients }: OrderProgramInput): Promise<Record<string, unknown>> {
  const config = new pulumi.Config();
  const ref = parseOrderRef(config.require("clusterOrder"));
  // Parsed once, by the same parser the reconciler and the provider host use (config/settings.ts).
  const all = programSideSettings(env);
  const { program: settings, planner: plannerConfig } = all;
  checkProviderKubeconfig(settings, env);
  const kube = clients?.kube ?? new Kube(loadKubeConfig(settings.kubeconfigPath));
  const fulfillment = clients?.fulfillment ?? new FulfillmentClient(connectionOptions(settings.fulfillment, all.provider));
  try {
    const loadIgnition = (url: string) => fetchIgnition(url, { caFile: settings.ignitionCaFile, maxBytes: plannerConfig.ignitionMaxBytes });
    // A rollback pin (stack config `pin`, set by `baremetal-workers rollback`) overrides requested counts.
    const rawPin = config.get("pin");
    const pin = rawPin && rawPin !== "null" ? parsePin(rawPin) : undefined;
    const { snapshot, fulfillmentError, plan } = await programPlan({
      kube,
      config: plannerConfig,
      // A preview only looks: the system catalog item is created by a real update (or the reconciler), never by `pulumi preview`.
      observe: () => observe({ kube, fulfillment, config: plannerConfig, ignitionCaFile: settings.ignitionCaFile,
        createCatalogItem: !pulumi.runtime.isDryRun(), hubInFlight: () => observeHubInFlight(kube, fulfillment, plannerConfig.hubNamespaces) }, ref),
      loadIgnition,
      log: (message) => pulumi.log.info(message),
      preview: pulumi.runtime.isDryRun(),
    }, ref, handoff, pin);
    refuseUnsafePlan(snapshot, plan, fulfillmentError);
    const workers = await declareStack({ env, ref, kube, snapshot, plan, settings, plannerConfig, loadIgnition });
    return programOutputs(ref, plan, workers);
  } finally {
    if (!clients) fulfillment.close();
  }
}
