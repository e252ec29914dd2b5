// Names, labels and annotations shared by the planner, the providers and the program. The lab reads
// the same well-known strings from the references, never from here.

export const GROUP = "osac.openshift.io";
export const ORDER_LABEL = "osac.openshift.io/cluster-order";
export const OWNER_ANNOTATION = "osac.openshift.io/owner-reference";
export const WORKER_NAME_LABEL = "osac.openshift.io/worker-name";
export const NODE_SET_LABEL = "osac.openshift.io/node-set";
export const AGENT_BAREMETAL_LABEL = "agentBareMetal";
export const INFRAENV_AGENT_LABEL = "infraenvs.agent-install.openshift.io";
export const INFRAENV_UID_ANNOTATION = "osac.openshift.io/infraenv-uid";
/**
 * `<program digest>.<hash of order uid and plan fingerprint>` of the last update the loop saw succeed with the world unchanged;
 * removed before every update. Lets a restarted loop skip orders whose stacks already hold their plan.
 */
export const APPLIED_ANNOTATION = "osac.openshift.io/workers-applied";
export const MANAGEMENT_STATE_ANNOTATION = "osac.openshift.io/management-state";
export const FINALIZER = "osac.openshift.io/baremetalworker-finalizer";
/** Server-side-apply field manager of everything this program writes. */
export const FIELD_MANAGER = "baremetal-workers";
export const SYSTEM_CATALOG_ITEM = "system-bmi-passthrough";

export const UNBINDING_STATE = "unbinding-pending-user-action";

export function infraEnvName(orderName: string): string {
  return `${orderName}-infraenv`;
}

export function pullSecretName(orderName: string): string {
  return `${orderName}-pull-secret`;
}

/** The label value identifying an order on the fulfillment-service: its Kubernetes uid. */
export function orderId(order: { metadata: { uid: string } }): string {
  return order.metadata.uid;
}

/** One Pulumi stack per ClusterOrder. */
export function stackName(namespace: string, name: string): string {
  return `${namespace}--${name}`;
}
