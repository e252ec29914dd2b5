// Names, labels and annotations shared by the planner, the providers and the program. The lab reads
// the same well-known strings from the references, never from here.
import * as crypto from "node:crypto";

export const GROUP = "osac.openshift.io";
export const ORDER_LABEL = "osac.openshift.io/cluster-order";
export const OWNER_ANNOTATION = "osac.openshift.io/owner-reference";
export const WORKER_NAME_LABEL = "osac.openshift.io/worker-name";
export const NODE_SET_LABEL = "osac.openshift.io/node-set";
/** The order's name on its hosted cluster's NodePools (set by the osac-operator). */
export const NODEPOOL_ORDER_LABEL = "osac.openshift.io/clusterorder";
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

/**
 * The userData of a BMI a new order's first update creates: the ignition of the InfraEnv that same update
 * creates, fetched by the program once that InfraEnv publishes it, before the fence and any Create
 * (program/orderProgram.ts). Never sent: the BMI provider refuses to create with it.
 */
export const IGNITION_OF_NEW_INFRAENV = "{\"pending\":\"the discovery ignition of the InfraEnv this update creates\"}";
/** Stands for a fetched ignition in the reconciler's handoff (io/handoff.ts): only adopted BMIs may carry it. */
export const WITHHELD_IGNITION = "{\"withheld\":\"the discovery ignition is fetched only for a BMI to be created\"}";

/** Whether a userData is one of the stand-ins above, never a BMI's user_data. */
export function isIgnitionPlaceholder(userData: string): boolean {
  return userData === IGNITION_OF_NEW_INFRAENV || userData === WITHHELD_IGNITION;
}

/** RFC 1123 label: the BMI name rule of the fulfillment-service (protovalidate) and of many object names. */
export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** A Kubernetes label value (and the InfraEnv name must be one: assisted-service labels its Agents with it). */
export const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
/** Pulumi's stack name rule. */
const STACK_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

function shortHash(text: string, chars: number): string {
  return crypto.createHash("sha256").update(text).digest("hex").slice(0, chars);
}

/**
 * The first `max` characters of an order name as DNS-label characters (dots become dashes), without a
 * trailing dash. Order names start with an alphanumeric, so the result does too (or is empty).
 */
function head(orderName: string, max: number): string {
  return orderName.replace(/\./g, "-").slice(0, Math.max(0, max)).replace(/-+$/, "");
}

/**
 * A fresh BMI name: `<order>-<opaque>` as long as that is a valid BMI name (existing names never
 * change); otherwise, for a long or dotted order name, `<shortened order>-<hash of the order name>-<opaque>`.
 */
export function bmiName(orderName: string, opaque: string): string {
  const plain = `${orderName}-${opaque}`;
  if (DNS_LABEL.test(plain)) return plain;
  const hash = shortHash(orderName, 10);
  const start = head(orderName, 63 - hash.length - opaque.length - 2);
  return start ? `${start}-${hash}-${opaque}` : `${hash}-${opaque}`;
}

/**
 * `<order>-infraenv` while it is a valid label value (≤ 63 characters); otherwise
 * `<shortened order>-infraenv-<hash of the order name>`. A shortened name ends in hex, a plain one in
 * "infraenv", so no order's shortened name can equal another order's plain one.
 */
export function infraEnvName(orderName: string): string {
  const plain = `${orderName}-infraenv`;
  if (LABEL_VALUE.test(plain)) return plain;
  const hash = shortHash(orderName, 16);
  return `${head(orderName, 63 - hash.length - "-infraenv-".length)}-infraenv-${hash}`;
}

export function pullSecretName(orderName: string): string {
  return `${orderName}-pull-secret`;
}

/** The label value identifying an order on the fulfillment-service: its Kubernetes uid. */
export function orderId(order: { metadata: { uid: string } }): string {
  return order.metadata.uid;
}

/** One Pulumi stack per ClusterOrder; shortened only when Pulumi would refuse the plain name (> 100 characters). */
export function stackName(namespace: string, name: string): string {
  const plain = `${namespace}--${name}`;
  if (STACK_NAME.test(plain)) return plain;
  // "_" never occurs in a namespace or an order name: a shortened stack name is never another's plain one.
  const hash = shortHash(plain, 16);
  return `${plain.slice(0, 100 - hash.length - 1)}_${hash}`;
}
