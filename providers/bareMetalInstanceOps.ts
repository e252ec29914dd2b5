// The logic of the BareMetalInstance dynamic provider (providers/bareMetalInstance.ts loads this module
// at run time in the provider host). Plain TypeScript with ordinary imports: nothing here is serialized.
// The token is read from connection.tokenFile by the fulfillment client on every call; no method
// returns or logs the ignition except under the userData key, which Pulumi keeps secret.
import type * as pulumi from "@pulumi/pulumi";
import {
  AlreadyExistsError, BeingDeletedError, createOrAdopt, DISK_IMAGE_ANNOTATION, FailedPreconditionError, type FulfillmentClient,
  type FulfillmentError, INSTANCE_TYPE_LABEL, InvalidArgumentError, NotFoundError, SYSTEM_TENANT, withDiskImage, withInstanceType,
} from "../clients/fulfillment";
import type { BareMetalInstance, BareMetalInstanceOut } from "../clients/fulfillment/types";
import { observedBmi } from "../clients/fulfillment/observed";
import { KubeError } from "../clients/kube";
import { failpoint } from "../lib/failpoints";
import { USER_DATA_HARD_LIMIT_BYTES } from "../planner/config";
import { DNS_LABEL, isIgnitionPlaceholder, ORDER_LABEL } from "../planner/names";
import { redact } from "../planner/redact";
import type { ClusterOrder, DesiredBmi, ObservedBmi, WorkerPhase } from "../planner/types";
import { formatCreateRejection } from "./createRejection";
import { formatDeleteRefusal } from "./deleteRefusal";
import { isUnknown, kubeFor, localKubeconfig, withFulfillment } from "./providerHost";
import { type FulfillmentConnection, providerSettings } from "../config/settings";

/** Re-exported for index.ts and controller/app.ts, which import it from here. */

/**
 * Where the provider checks, before any Delete, that the planner retired this BMI (invariant I1): the
 * ClusterOrder it belongs to and the worker slot it backs. Paths and names only.
 */
export interface DeleteGuard {
  kubeconfigPath: string;
  namespace: string;
  orderName: string;
  orderUid: string;
  slot: string;
}

export interface BareMetalInstanceInputs extends DesiredBmi {
  connection: FulfillmentConnection;
  /**
   * Where the provider checks a Delete. When the state carries none, the order is found by the BMI's
   * ORDER_LABEL uid among all ClusterOrders and the same rule applies, so the BMI stays protected and
   * the order's deletion (its destroy) can still finish.
   */
  guard?: DeleteGuard;
}

/** What the resource reports: its inputs plus the service's view. */
export interface BareMetalInstanceOutputs extends BareMetalInstanceInputs {
  bmiId: string;
  state: ObservedBmi["state"];
  deleting: boolean;
  macs: string[];
  failureReason?: string;
  failureMessage?: string;
}

/**
 * Create-only on the service. A difference is never a change of the existing BMI (invariant I2): the
 * planner reports it as drift, and only a new incarnation is created with the new values.
 */
export const IMMUTABLE_INPUTS = ["name", "catalogItem", "instanceType", "diskImage", "userData", "networkAttachment", "tenant"] as const;
/** Updated in place; the guard is local. The connection and the guard's path are this machine's (providerHost.ts): never a change. */
const MUTABLE_INPUTS = ["labels", "annotations", "guard"] as const;
/** Phases of a slot the planner retired: only then may its BMI be deleted (or when the order goes). */
export const RETIRED_PHASES: readonly WorkerPhase[] = ["Unbinding", "Deleting", "Failed"];
/** Bounds the server's text carried in a Create rejection. */
const MAX_REJECTION_MESSAGE = 500;

/** The service's view of one BMI, in the planner's words. */
export function observe(bmi: BareMetalInstanceOut): Pick<BareMetalInstanceOutputs, "bmiId" | "state" | "deleting" | "macs" | "failureReason" | "failureMessage"> {
  const o = observedBmi(bmi);
  const out: ReturnType<typeof observe> = { bmiId: o.id, state: o.state, deleting: o.deleting, macs: o.macs };
  if (o.failureReason) out.failureReason = o.failureReason;
  if (o.failureMessage) out.failureMessage = o.failureMessage;
  return out;
}

// ---- check / diff ---------------------------------------------------------------------------------

export function check(_olds: Partial<BareMetalInstanceInputs>, news: BareMetalInstanceInputs): pulumi.dynamic.CheckResult<BareMetalInstanceInputs> {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const bad = (property: string, reason: string) => failures.push({ property, reason });
  if (!isUnknown(news.name) && (typeof news.name !== "string" || !DNS_LABEL.test(news.name))) {
    bad("name", `'${String(news.name)}' is not a lowercase RFC 1123 label of at most 63 characters`);
  }
  if (!isUnknown(news.tenant) && news.tenant !== SYSTEM_TENANT) bad("tenant", `BMIs are created in tenant '${SYSTEM_TENANT}' only`);
  if (!isUnknown(news.userData)) {
    if (typeof news.userData !== "string" || news.userData === "") bad("userData", "userData (the discovery ignition) is required");
    else if (Buffer.byteLength(news.userData, "utf8") > USER_DATA_HARD_LIMIT_BYTES) {
      bad("userData", `userData is ${Buffer.byteLength(news.userData, "utf8")} bytes; the service accepts at most ${USER_DATA_HARD_LIMIT_BYTES}`);
    }
  }
  for (const key of ["catalogItem", "instanceType", "diskImage"] as const) {
    if (!isUnknown(news[key]) && (typeof news[key] !== "string" || news[key] === "")) bad(key, `${key} is required`);
  }
  const att = news.networkAttachment as unknown;
  if (!isUnknown(att)) {
    const a = att as Partial<DesiredBmi["networkAttachment"]> | undefined;
    if (!a || typeof a !== "object" || Array.isArray(a)) bad("networkAttachment", "exactly one network attachment is required");
    else {
      if (!isUnknown(a.primary) && a.primary !== true) bad("networkAttachment", "the one network attachment must be primary");
      if (!isUnknown(a.subnet) && !a.subnet) bad("networkAttachment", "the network attachment needs a subnet");
      if (!isUnknown(a.interface) && !a.interface) bad("networkAttachment", "the network attachment needs an interface (the fabric port)");
    }
  }
  const labels = news.labels as unknown;
  if (!isUnknown(labels) && (!labels || typeof labels !== "object" || !(news.labels[ORDER_LABEL]))) {
    bad("labels", `labels must carry ${ORDER_LABEL} (ownership is proven by it)`);
  }
  const conn = news.connection as unknown;
  if (!isUnknown(conn) && (!conn || typeof conn !== "object" || !news.connection.address || !news.connection.tokenFile)) {
    bad("connection", "connection needs an address and a tokenFile path");
  }
  const guard = news.guard as unknown;
  if (guard !== undefined && !isUnknown(guard)) {
    const g = guard as Partial<Record<keyof DeleteGuard, unknown>>;
    const missing = (["kubeconfigPath", "namespace", "orderName", "orderUid", "slot"] as const)
      .filter((k) => !isUnknown(g?.[k]) && (typeof g?.[k] !== "string" || g[k] === ""));
    if (!g || typeof g !== "object" || missing.length > 0) bad("guard", `guard needs ${missing.join(", ") || "an object"}`);
  }
  return { inputs: news, failures };
}

/** An input without this machine's file paths (the guard's kubeconfigPath). */
const withoutPaths = (key: string, v: unknown): unknown =>
  (key === "guard" && v && typeof v === "object" && !isUnknown(v) ? { ...(v as DeleteGuard), kubeconfigPath: undefined } : v);

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  }
  return v;
}

/**
 * Never a replace (I2): a replacement would adopt the same BMI and then delete it as the "old" one. A
 * create-only input that differs is not a change here; only labels, annotations, connection and guard
 * update in place. A new incarnation is a new resource (the component names it after the BMI), so a
 * new name never reaches diff. adoptId only matters at create time.
 */
export function diff(_id: string, olds: BareMetalInstanceInputs, news: BareMetalInstanceInputs): pulumi.dynamic.DiffResult {
  const updates = MUTABLE_INPUTS.filter((k) => isUnknown(news[k]) || !same(withoutPaths(k, olds[k]), withoutPaths(k, news[k])));
  return { changes: updates.length > 0, replaces: [], deleteBeforeReplace: false };
}

// ---- create ---------------------------------------------------------------------------------------

function desiredObject(inputs: BareMetalInstanceInputs): BareMetalInstance {
  const att = inputs.networkAttachment;
  return withInstanceType({
    metadata: { name: inputs.name, tenant: SYSTEM_TENANT, labels: { ...inputs.labels }, annotations: { ...inputs.annotations } },
    spec: {
      catalog_item: { id: inputs.catalogItem },
      user_data: inputs.userData,
      // subnetRef / securityGroupRefs of the ClusterOrder are ids on the fulfillment-service.
      network_attachments: [{
        subnet: { id: att.subnet }, security_groups: att.securityGroups.map((id) => ({ id })),
        interface: att.interface, primary: true,
      }],
    },
  }, inputs.instanceType);
}

function outputsOf(inputs: BareMetalInstanceInputs, bmi: BareMetalInstanceOut): BareMetalInstanceOutputs {
  return { ...inputs, ...observe(bmi) };
}

async function adoptById(c: FulfillmentClient, inputs: BareMetalInstanceInputs, id: string): Promise<BareMetalInstanceOut> {
  let bmi: BareMetalInstanceOut;
  try {
    bmi = await c.bareMetalInstances.get(id);
  } catch (err) {
    if (err instanceof NotFoundError) throw new Error(`cannot adopt BareMetalInstance ${id}: it does not exist`);
    throw err;
  }
  if (bmi.metadata?.name !== inputs.name) {
    throw new Error(`cannot adopt BareMetalInstance ${id}: it is named '${bmi.metadata?.name}', not '${inputs.name}'`);
  }
  if (bmi.metadata?.labels[ORDER_LABEL] !== inputs.labels[ORDER_LABEL]) {
    throw new Error(`cannot adopt BareMetalInstance ${id}: it does not belong to this ClusterOrder (${ORDER_LABEL})`);
  }
  if (bmi.metadata?.deletion_timestamp) throw new BeingDeletedError(bmi);
  return bmi;
}

/**
 * Creates the BMI, or adopts the one an earlier attempt made (list by order label + name first; a lost
 * Create response or ALREADY_EXISTS resolves by looking it up). A BMI that is being deleted is never
 * adopted: the create fails and the planner picks a fresh incarnation name.
 */
export async function create(inputs: BareMetalInstanceInputs): Promise<pulumi.dynamic.CreateResult<BareMetalInstanceOutputs>> {
  return withFulfillment(inputs.connection, async (c) => {
    if (inputs.adoptId) {
      const bmi = await adoptById(c, inputs, inputs.adoptId);
      return { id: bmi.id, outs: outputsOf(inputs, bmi) };
    }
    // Enforced here as well as in the program: a host booted from a placeholder would never register.
    if (isIgnitionPlaceholder(inputs.userData)) throw new Error(`BareMetalInstance ${inputs.name} is not created: its userData is a placeholder, not the discovery ignition`);
    let image;
    try {
      image = await c.diskImages.get(inputs.diskImage);
    } catch (err) {
      if (err instanceof NotFoundError) throw new Error(`DiskImage '${inputs.diskImage}' does not exist`);
      throw err;
    }
    const object = withDiskImage(desiredObject(inputs), image);
    failpoint("bmi.create.beforeCall"); // fault suite: killed before the Create reaches the service
    let bmi: BareMetalInstanceOut;
    try {
      ({ bmi } = await createOrAdopt(c.bareMetalInstances, object, { ownerLabels: { [ORDER_LABEL]: inputs.labels[ORDER_LABEL] } }));
    } catch (err) {
      const rejection = createRejectionOf(err, inputs);
      throw rejection ? new Error(rejection) : err;
    }
    failpoint("bmi.create.afterCommit"); // fault suite: the BMI exists, the engine never hears of it
    return { id: bmi.id, outs: outputsOf(inputs, bmi) };
  });
}

/**
 * The marked message of a definitive rejection (the same Create can never succeed: bad request, failed
 * precondition, or the name held by another owner), or undefined for a transient or other error. The
 * server's text is kept, redacted: credentials, and any fragment of the ignition should the service echo it.
 */
export function createRejectionOf(err: unknown, inputs: Pick<BareMetalInstanceInputs, "name" | "userData">): string | undefined {
  const code = err instanceof InvalidArgumentError ? "INVALID_ARGUMENT"
    : err instanceof FailedPreconditionError ? "FAILED_PRECONDITION"
      : err instanceof AlreadyExistsError ? "ALREADY_EXISTS" : undefined;
  if (!code) return undefined;
  const e = err as FulfillmentError;
  const violations = err instanceof InvalidArgumentError ? err.fieldViolations.map((v) => `${v.field}: ${v.description}`) : [];
  let text = e.details || violations.join("; ");
  if (code === "ALREADY_EXISTS") text = `the name is held by a BareMetalInstance of another owner (${text})`;
  const message = redact(text, [inputs.userData]).slice(0, MAX_REJECTION_MESSAGE);
  return formatCreateRejection({ bmiName: inputs.name, code, message: message || code });
}

// ---- read / update / delete -----------------------------------------------------------------------

/** Refresh: the BMI's real state, MACs and labels; an empty id when it is gone. */
export async function read(id: string, props: BareMetalInstanceOutputs): Promise<pulumi.dynamic.ReadResult<BareMetalInstanceOutputs>> {
  return withFulfillment(props.connection, async (c) => {
    try {
      const bmi = await c.bareMetalInstances.get(id);
      failpoint("bmi.read.afterGet"); // fault suite: killed during a refresh
      const labels = { ...(bmi.metadata?.labels ?? {}) };
      const annotations = { ...(bmi.metadata?.annotations ?? {}) };
      // The proposal fallbacks are the client's bookkeeping, not the program's inputs.
      delete labels[INSTANCE_TYPE_LABEL];
      delete annotations[DISK_IMAGE_ANNOTATION];
      return { id, props: { ...props, ...observe(bmi), labels, annotations } };
    } catch (err) {
      if (err instanceof NotFoundError) return { id: "" };
      throw err;
    }
  });
}

/**
 * Only labels and annotations change on the service; connection and guard are local, so a change of
 * only those never calls it. The create-only inputs keep the values the BMI was created with (I2).
 */
export async function update(id: string, olds: BareMetalInstanceOutputs, news: BareMetalInstanceInputs): Promise<pulumi.dynamic.UpdateResult<BareMetalInstanceOutputs>> {
  const kept: Partial<BareMetalInstanceInputs> = {};
  for (const k of IMMUTABLE_INPUTS) if (olds[k] !== undefined) (kept as Record<string, unknown>)[k] = olds[k];
  const next: BareMetalInstanceInputs = { ...news, ...kept };
  if (same(olds.labels, news.labels) && same(olds.annotations, news.annotations)) {
    return { outs: { ...olds, ...next } };
  }
  return withFulfillment(news.connection, async (c) => {
    const live = await c.bareMetalInstances.get(id);
    const labels: Record<string, string> = { ...news.labels };
    const annotations: Record<string, string> = { ...news.annotations };
    const keptLabel = live.metadata?.labels[INSTANCE_TYPE_LABEL];
    const keptAnnotation = live.metadata?.annotations[DISK_IMAGE_ANNOTATION];
    if (keptLabel) labels[INSTANCE_TYPE_LABEL] = keptLabel;
    if (keptAnnotation) annotations[DISK_IMAGE_ANNOTATION] = keptAnnotation;
    const bmi = await c.bareMetalInstances.update({ id, metadata: { labels, annotations } },
      { updateMask: ["metadata.labels", "metadata.annotations"] });
    return { outs: outputsOf(next, bmi) };
  });
}

export type DeleteDecision = { allowed: true; why: string } | { allowed: false; reason: string };

const retiredOnly = `only a worker the planner retired (${RETIRED_PHASES.join(", ")}) or the order's deletion lets`;

/**
 * Invariant I1 as the provider applies it to one BMI, from the ClusterOrder as read now (undefined:
 * the apiserver said this very object does not exist). Allowed when that order is gone or being
 * deleted, or its status entry for this BMI (by id, else by name when no id was recorded) is in a phase
 * the planner retires a slot with. An order of the same name with another uid (re-created or restored)
 * is not this BMI's, unless one of its workers not retired names the BMI (by id or name): then that
 * order counts on it. Everything else is refused.
 */
export function deleteDecision(order: ClusterOrder | undefined, guard: DeleteGuard, bmi: { id: string; name: string }): DeleteDecision {
  const where = `ClusterOrder ${guard.namespace}/${guard.orderName}`;
  if (!order) return { allowed: true, why: `${where} no longer exists` };
  if (order.metadata.deletionTimestamp) return { allowed: true, why: `${where} is being deleted` };
  const workers = order.status?.workers ?? [];
  if (order.metadata.uid !== guard.orderUid) {
    const claim = workers.find((w) => !RETIRED_PHASES.includes(w.phase) &&
      (w.bareMetalInstance?.id === bmi.id || w.bareMetalInstance?.name === bmi.name));
    if (!claim) return { allowed: true, why: `${where} was re-created (the order of this BareMetalInstance is gone)` };
    return { allowed: false, reason: `${where} has another uid (${order.metadata.uid ?? "none"}) but its worker ${claim.name} is ` +
      `${claim.phase} with this BareMetalInstance; ${retiredOnly} it be deleted` };
  }
  const entry = workers.find((w) => w.bareMetalInstance?.id === bmi.id) ??
    workers.find((w) => !w.bareMetalInstance?.id && w.bareMetalInstance?.name === bmi.name);
  if (!entry) return { allowed: false, reason: `${where} records no worker for this BareMetalInstance; ${retiredOnly} it be deleted` };
  if (RETIRED_PHASES.includes(entry.phase)) return { allowed: true, why: `worker ${entry.name} is ${entry.phase}` };
  return { allowed: false, reason: `worker ${entry.name} is ${entry.phase} in ${where}; ${retiredOnly} its BareMetalInstance be deleted` };
}

/**
 * The same rule when the state records no guard: the order is the ClusterOrder, in any namespace, whose
 * uid the BMI's ORDER_LABEL holds. None with that uid means it is gone.
 */
export function unguardedDeleteDecision(orders: readonly ClusterOrder[], orderUid: string, bmi: { id: string; name: string }): DeleteDecision & { slot: string } {
  const order = orders.find((o) => o.metadata.uid === orderUid);
  if (!order) return { allowed: true, why: `no ClusterOrder has uid ${orderUid}`, slot: "unknown" };
  const entry = (order.status?.workers ?? []).find((w) => w.bareMetalInstance?.id === bmi.id || w.bareMetalInstance?.name === bmi.name);
  const guard = { kubeconfigPath: "", namespace: order.metadata.namespace ?? "", orderName: order.metadata.name ?? "", orderUid, slot: entry?.name ?? "unknown" };
  return { ...deleteDecision(order, guard, bmi), slot: guard.slot };
}

/** Why the order could not be read, without request or response bodies. */
function unreadable(err: unknown): string {
  if (err instanceof KubeError) return `${err.code} ${err.reason}`;
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : err instanceof Error ? err.name : "unknown error";
}

function refusal(id: string, name: string, slot: string, reason: string): Error {
  return new Error(formatDeleteRefusal({ slot, bmiName: name, reason: `refusing to delete BareMetalInstance ${name} (${id}): ${reason}` }));
}

/** Throws the refusal when the planner did not decide this Delete (I1). */
async function checkDeleteAllowed(id: string, name: string, guard: DeleteGuard | undefined, orderUid: string | undefined): Promise<void> {
  if (guard === undefined || guard === null) return checkUnguardedDelete(id, name, orderUid);
  if (typeof guard !== "object" || !guard.kubeconfigPath || !guard.orderName || !guard.namespace || !guard.slot) {
    throw refusal(id, name, "unknown", "the stack records an incomplete guard, so the deletion cannot be checked");
  }
  let order: ClusterOrder | undefined;
  try {
    order = await kubeFor(localKubeconfig(guard.kubeconfigPath)).getClusterOrderStrict(guard.namespace, guard.orderName);
  } catch (err) {
    throw refusal(id, name, guard.slot,
      `ClusterOrder ${guard.namespace}/${guard.orderName} could not be read (${unreadable(err)}), so the deletion cannot be checked`);
  }
  const decision = deleteDecision(order, guard, { id, name });
  if (!decision.allowed) throw refusal(id, name, guard.slot, decision.reason);
}

async function checkUnguardedDelete(id: string, name: string, orderUid: string | undefined): Promise<void> {
  if (!orderUid) throw refusal(id, name, "unknown", `it carries no ${ORDER_LABEL} label, so its ClusterOrder cannot be found`);
  const kubeconfig = providerSettings().hubKubeconfigPath;
  if (!kubeconfig) throw refusal(id, name, "unknown", "the stack records no guard and no hub kubeconfig is set (BMW_KUBECONFIG), so the deletion cannot be checked");
  let orders: ClusterOrder[];
  try {
    orders = await kubeFor(kubeconfig).listClusterOrders();
  } catch (err) {
    throw refusal(id, name, "unknown", `ClusterOrders could not be listed (${unreadable(err)}), so the deletion cannot be checked`);
  }
  const decision = unguardedDeleteDecision(orders, orderUid, { id, name });
  if (!decision.allowed) throw refusal(id, name, decision.slot, decision.reason);
}

/**
 * Deletes the BMI only when the planner retired it (checkDeleteAllowed), then returns without waiting:
 * the service finishes the deletion, and the planner keeps the slot Deleting until a Get says NOT_FOUND.
 * A BMI that is gone or already being deleted needs nothing more.
 */
export async function remove(id: string, props: BareMetalInstanceOutputs): Promise<void> {
  await withFulfillment(props.connection, async (c) => {
    let bmi: BareMetalInstanceOut;
    try {
      bmi = await c.bareMetalInstances.get(id);
    } catch (err) {
      if (err instanceof NotFoundError) return;
      throw err;
    }
    if (bmi.metadata?.deletion_timestamp) return;
    await checkDeleteAllowed(id, bmi.metadata?.name ?? props.name, props.guard, bmi.metadata?.labels?.[ORDER_LABEL] || props.labels?.[ORDER_LABEL]);
    failpoint("bmi.delete.beforeCall"); // fault suite: killed before the Delete reaches the service
    try {
      await c.bareMetalInstances.delete(id);
    } catch (err) {
      if (err instanceof NotFoundError) return;
      throw err;
    }
    failpoint("bmi.delete.afterCall"); // fault suite: the Delete was accepted, the engine never hears of it
  });
}
