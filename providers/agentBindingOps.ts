// The logic of the AgentBinding dynamic provider (providers/agentBinding.ts loads it at run time).
// A binding is one merge patch of the correlated Agent (OSAC-2135 §2 step 11, §9): clusterDeploymentName,
// approved, and the labels that let the NodePool select it and later lookups find its slot. Every patch
// carries the observed resourceVersion; a conflict re-reads and re-validates before trying again.
import type * as pulumi from "@pulumi/pulumi";
import { isConflict, isNotFound, type Kube } from "../clients/kube";
import type { AgentObject, AgentPatch } from "../clients/kube";
import { failpoint } from "../lib/failpoints";
import { AGENT_BAREMETAL_LABEL, ORDER_LABEL, UNBINDING_STATE, WORKER_NAME_LABEL } from "../planner/names";
import type { DesiredBinding } from "../planner/types";
import { isUnknown, kubeFor, localKubeconfig } from "./providerHost";

export interface AgentBindingInputs extends DesiredBinding {
  /** The worker slot (label osac.openshift.io/worker-name). */
  slot: string;
  /** The ClusterOrder's uid (label osac.openshift.io/cluster-order). */
  orderUid: string;
  /** Path of the hub kubeconfig (a path, so no credential is stored in state). */
  kubeconfigPath: string;
  /** The BMI whose host registered as this Agent; a new BMI means a new binding. */
  bmiId?: string;
}

export interface AgentBindingOutputs extends AgentBindingInputs {
  /** status.debugInfo.state, e.g. binding, installing, added-to-existing-cluster, unbinding-pending-user-action. */
  state?: string;
  bound: boolean;
  approved: boolean;
  /** The Agent's resourceVersion after the last write or read. */
  resourceVersion: string;
}

/** Agent states in which the Agent is no longer part of the cluster and may be deleted (§5.2 step 7, §9). */
export const DELETABLE_STATES: readonly string[] = [UNBINDING_STATE, "known-unbound"];
const MAX_ATTEMPTS = 5;

/** The labels a bound Agent carries. */
export function bindingLabels(inputs: AgentBindingInputs): Record<string, string> {
  return { ...inputs.labels, [AGENT_BAREMETAL_LABEL]: "true", [WORKER_NAME_LABEL]: inputs.slot, [ORDER_LABEL]: inputs.orderUid };
}

const agentRef = (i: AgentBindingInputs) => `Agent ${i.agentNamespace}/${i.agentName}`;

/** Why this Agent must not be bound by this binding, or undefined when it may be. */
export function refusal(agent: AgentObject, inputs: AgentBindingInputs): string | undefined {
  const labels = agent.metadata.labels ?? {};
  const where = agentRef(inputs);
  if (inputs.agentUid && agent.metadata.uid !== inputs.agentUid) {
    return `${where} has uid ${agent.metadata.uid}, not the correlated ${inputs.agentUid} (it was re-created)`;
  }
  if (labels[ORDER_LABEL] && labels[ORDER_LABEL] !== inputs.orderUid) return `${where} belongs to another ClusterOrder (${ORDER_LABEL}=${labels[ORDER_LABEL]})`;
  if (labels[WORKER_NAME_LABEL] && labels[WORKER_NAME_LABEL] !== inputs.slot) return `${where} belongs to another worker (${WORKER_NAME_LABEL}=${labels[WORKER_NAME_LABEL]})`;
  const cd = agent.spec?.clusterDeploymentName;
  const ours = labels[ORDER_LABEL] === inputs.orderUid && labels[WORKER_NAME_LABEL] === inputs.slot;
  // Once we bound it, CAPI's agent provider may re-point it at the hosted cluster's ClusterDeployment: tolerated.
  if (cd?.name && !ours && (cd.name !== inputs.clusterDeploymentName.name || (cd.namespace ?? agent.metadata.namespace) !== inputs.clusterDeploymentName.namespace)) {
    return `${where} is bound to another ClusterDeployment (${cd.namespace ?? ""}/${cd.name})`;
  }
  return undefined;
}

function isBound(agent: AgentObject, inputs: AgentBindingInputs): boolean {
  const labels = agent.metadata.labels ?? {};
  const want = bindingLabels(inputs);
  return Boolean(agent.spec?.clusterDeploymentName?.name) && agent.spec?.approved === true &&
    Object.entries(want).every(([k, v]) => labels[k] === v);
}

function outputsOf(inputs: AgentBindingInputs, agent: AgentObject): AgentBindingOutputs {
  return {
    ...inputs,
    state: agent.status?.debugInfo?.state,
    bound: isBound(agent, inputs),
    approved: agent.spec?.approved === true,
    resourceVersion: agent.metadata.resourceVersion ?? "",
  };
}

export interface BindHooks {
  /** Test seam: runs between the read and the conditional patch of each attempt. */
  beforePatch?: (agent: AgentObject) => Promise<void>;
}

/**
 * Binds (or re-asserts the binding of) the Agent: refusal → Error; stale read → re-read, re-check, retry.
 * An Agent in unbinding-pending-user-action is left as it is (outputs then show bound: false).
 */
export async function bind(kube: Kube, inputs: AgentBindingInputs, hooks: BindHooks = {}): Promise<AgentObject> {
  for (let attempt = 1; ; attempt++) {
    const agent = await kube.getAgent(inputs.agentNamespace, inputs.agentName);
    if (!agent) throw new Error(`${agentRef(inputs)} does not exist (any more); it cannot be bound`);
    const refused = refusal(agent, inputs);
    if (refused) throw new Error(`refusing to bind: ${refused}`);
    if (isBound(agent, inputs)) return agent;
    // CAPI's agent provider released it (scale-down, §5.2 step 5): re-binding would undo the removal.
    if (agent.status?.debugInfo?.state === UNBINDING_STATE) return agent;
    const patch: AgentPatch = {
      metadata: { labels: bindingLabels(inputs) },
      spec: { approved: true, clusterDeploymentName: { ...inputs.clusterDeploymentName } },
    };
    // Already ours and re-pointed by CAPI's agent provider: keep its ClusterDeployment.
    if (agent.spec?.clusterDeploymentName?.name) delete patch.spec!.clusterDeploymentName;
    await hooks.beforePatch?.(agent);
    failpoint("binding.beforePatch"); // fault suite: killed before the Agent is bound
    try {
      return await kube.patchAgent(inputs.agentNamespace, inputs.agentName, patch, agent.metadata.resourceVersion ?? "");
    } catch (err) {
      if (!isConflict(err) || attempt >= MAX_ATTEMPTS) throw err;
    }
  }
}

// ---- provider methods -----------------------------------------------------------------------------

export function check(_olds: Partial<AgentBindingInputs>, news: AgentBindingInputs): pulumi.dynamic.CheckResult<AgentBindingInputs> {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  for (const key of ["agentName", "agentNamespace", "slot", "orderUid", "kubeconfigPath"] as const) {
    if (!isUnknown(news[key]) && (typeof news[key] !== "string" || news[key] === "")) failures.push({ property: key, reason: `${key} is required` });
  }
  const cd = news.clusterDeploymentName as unknown;
  if (!isUnknown(cd) && (!cd || typeof cd !== "object" || !news.clusterDeploymentName.name || !news.clusterDeploymentName.namespace)) {
    failures.push({ property: "clusterDeploymentName", reason: "clusterDeploymentName needs a name and a namespace" });
  }
  return { inputs: news, failures };
}

const REPLACE_KEYS = ["agentName", "agentNamespace", "agentUid", "bmiId"] as const;
// kubeconfigPath is where this machine keeps the hub's kubeconfig (providerHost.ts): never a change.
const UPDATE_KEYS = ["labels", "clusterDeploymentName", "slot", "orderUid"] as const;

export function diff(_id: string, olds: AgentBindingInputs, news: AgentBindingInputs): pulumi.dynamic.DiffResult {
  const differs = (k: keyof AgentBindingInputs) => isUnknown(news[k]) || JSON.stringify(olds[k] ?? null) !== JSON.stringify(news[k] ?? null);
  const replaces = REPLACE_KEYS.filter(differs);
  const updates = UPDATE_KEYS.filter(differs);
  return { changes: replaces.length + updates.length > 0, replaces: [...replaces], deleteBeforeReplace: true };
}

export async function create(inputs: AgentBindingInputs): Promise<pulumi.dynamic.CreateResult<AgentBindingOutputs>> {
  const agent = await bind(kubeFor(localKubeconfig(inputs.kubeconfigPath)), inputs);
  failpoint("binding.create.afterPatch"); // fault suite: the Agent is bound, the engine never hears of it
  return { id: `${inputs.agentNamespace}/${inputs.agentName}`, outs: outputsOf(inputs, agent) };
}

export async function update(_id: string, _olds: AgentBindingOutputs, news: AgentBindingInputs): Promise<pulumi.dynamic.UpdateResult<AgentBindingOutputs>> {
  return { outs: outputsOf(news, await bind(kubeFor(localKubeconfig(news.kubeconfigPath)), news)) };
}

/** Refresh: the Agent's current state; gone (or re-created under the same name) reads as gone. */
export async function read(id: string, props: AgentBindingOutputs): Promise<pulumi.dynamic.ReadResult<AgentBindingOutputs>> {
  const agent = await kubeFor(localKubeconfig(props.kubeconfigPath)).getAgent(props.agentNamespace, props.agentName);
  if (!agent || (props.agentUid && agent.metadata.uid !== props.agentUid)) return { id: "" };
  return { id, props: outputsOf(props, agent) };
}

/**
 * Deleting the binding deletes the Agent CR only when it has left the cluster (unbinding-pending-user-action
 * or known-unbound), with uid + resourceVersion preconditions. A still-bound Agent is left alone and the
 * delete succeeds: the node is removed through the NodePool (CAPI picks the Machine, the agent provider
 * unbinds the Agent), and deleting a bound Agent would orphan its node. The program declares a binding
 * until its Agent is unbinding, and its cleanup pass removes Agents that reached that state after the
 * record was dropped. At cluster deletion the finalizer deletes the order's remaining Agents once every
 * BMI of the order is confirmed gone.
 */
export async function remove(_id: string, props: AgentBindingOutputs): Promise<void> {
  const kube = kubeFor(localKubeconfig(props.kubeconfigPath));
  for (let attempt = 1; ; attempt++) {
    const agent = await kube.getAgent(props.agentNamespace, props.agentName);
    if (!agent) return;
    if (props.agentUid && agent.metadata.uid !== props.agentUid) return; // a different Agent now holds the name
    const owner = agent.metadata.labels?.[ORDER_LABEL];
    if (owner && owner !== props.orderUid) return; // never ours to delete
    const state = agent.status?.debugInfo?.state ?? "";
    if (!DELETABLE_STATES.includes(state)) return;
    try {
      await kube.deleteAgent(props.agentNamespace, props.agentName, { uid: agent.metadata.uid ?? "", resourceVersion: agent.metadata.resourceVersion });
      failpoint("binding.delete.afterDelete"); // fault suite: the Agent is deleted, the engine never hears of it
      return;
    } catch (err) {
      if (isNotFound(err)) return;
      if (!isConflict(err) || attempt >= MAX_ATTEMPTS) throw err;
    }
  }
}
