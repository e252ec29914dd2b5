// The logic of the BareMetalInstance dynamic provider (providers/bareMetalInstance.ts loads this module
// at run time in the provider host). Plain TypeScript with ordinary imports: nothing here is serialized.
// The token is read from connection.tokenFile by the fulfillment client on every call; no method
// returns or logs the ignition except under the userData key, which Pulumi keeps secret.
import type * as pulumi from "@pulumi/pulumi";
import {
  BeingDeletedError, createOrAdopt, DISK_IMAGE_ANNOTATION, FulfillmentClient, type FulfillmentClientOptions, INSTANCE_TYPE_LABEL, NotFoundError,
  SYSTEM_TENANT, withDiskImage, withInstanceType,
} from "../clients/fulfillment";
import type { BareMetalInstance, BareMetalInstanceOut } from "../clients/fulfillment/types";
import { observedBmi } from "../clients/fulfillment/observed";
import { failpoint } from "../automation/failpoints";
import { ORDER_LABEL } from "../planner/names";
import type { DesiredBmi, ObservedBmi } from "../planner/types";

/** Where and how to reach the fulfillment-service: file paths only, never a token. */
export interface FulfillmentConnection {
  /** host:port of the private API. */
  address: string;
  /** CA bundle of the service (TLS); system roots when absent. */
  caFile?: string;
  /** File holding the bearer token; read on every call. */
  tokenFile: string;
  /** Loopback labs only. */
  plaintext?: boolean;
}

export interface BareMetalInstanceInputs extends DesiredBmi {
  connection: FulfillmentConnection;
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

/** Pulumi's placeholder for values not known during preview. */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
export const USER_DATA_MAX_BYTES = 65_536;
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** Changing any of these means a different BMI (all are immutable on the service). */
export const IMMUTABLE_INPUTS = ["name", "catalogItem", "instanceType", "diskImage", "userData", "networkAttachment", "tenant"] as const;
const MUTABLE_INPUTS = ["labels", "annotations", "connection"] as const;

const DEFAULT_DELETE_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_DELETE_POLL_MS = 2_000;



const isUnknown = (v: unknown) => v === UNKNOWN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function envMs(key: string, fallback: number): number {
  const v = Number(process.env[key]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** The fulfillment client options for a connection (the program builds its own client the same way). */
export function connectionOptions(conn: FulfillmentConnection): FulfillmentClientOptions {
  return {
    address: conn.address,
    transport: conn.plaintext ? { kind: "plaintext" } : { kind: "tls", caFile: conn.caFile },
    tokenFile: conn.tokenFile,
    // Per-call deadline override (BMW_FULFILLMENT_DEADLINE_MS), e.g. for the fault suite's latency faults.
    ...(process.env.BMW_FULFILLMENT_DEADLINE_MS ? { deadlineMs: envMs("BMW_FULFILLMENT_DEADLINE_MS", 30_000) } : {}),
  };
}

function client(conn: FulfillmentConnection): FulfillmentClient {
  return new FulfillmentClient(connectionOptions(conn));
}

async function withClient<T>(conn: FulfillmentConnection, fn: (c: FulfillmentClient) => Promise<T>): Promise<T> {
  const c = client(conn);
  try {
    return await fn(c);
  } finally {
    c.close();
  }
}

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
  if (!isUnknown(news.name) && (typeof news.name !== "string" || !NAME.test(news.name))) {
    bad("name", `'${String(news.name)}' is not a lowercase RFC 1123 label of at most 63 characters`);
  }
  if (!isUnknown(news.tenant) && news.tenant !== SYSTEM_TENANT) bad("tenant", `BMIs are created in tenant '${SYSTEM_TENANT}' only`);
  if (!isUnknown(news.userData)) {
    if (typeof news.userData !== "string" || news.userData === "") bad("userData", "userData (the discovery ignition) is required");
    else if (Buffer.byteLength(news.userData, "utf8") > USER_DATA_MAX_BYTES) {
      bad("userData", `userData is ${Buffer.byteLength(news.userData, "utf8")} bytes; the service accepts at most ${USER_DATA_MAX_BYTES}`);
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
  return { inputs: news, failures };
}

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
 * Immutable fields replace (a new BMI); labels, annotations and the connection update in place. The
 * component sets ignoreChanges on userData/diskImage so a new ignition or image never replaces a
 * running worker; adoptId only matters at create time and is never a change.
 */
export function diff(_id: string, olds: BareMetalInstanceInputs, news: BareMetalInstanceInputs): pulumi.dynamic.DiffResult {
  const replaces = IMMUTABLE_INPUTS.filter((k) => isUnknown(news[k]) || !same(olds[k], news[k]));
  const updates = MUTABLE_INPUTS.filter((k) => isUnknown(news[k]) || !same(olds[k], news[k]));
  return { changes: replaces.length + updates.length > 0, replaces: [...replaces], deleteBeforeReplace: false };
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
  return withClient(inputs.connection, async (c) => {
    if (inputs.adoptId) {
      const bmi = await adoptById(c, inputs, inputs.adoptId);
      return { id: bmi.id, outs: outputsOf(inputs, bmi) };
    }
    let image;
    try {
      image = await c.diskImages.get(inputs.diskImage);
    } catch (err) {
      if (err instanceof NotFoundError) throw new Error(`DiskImage '${inputs.diskImage}' does not exist`);
      throw err;
    }
    const object = withDiskImage(desiredObject(inputs), image);
    failpoint("bmi.create.beforeCall"); // fault suite: killed before the Create reaches the service
    const { bmi } = await createOrAdopt(c.bareMetalInstances, object, { ownerLabels: { [ORDER_LABEL]: inputs.labels[ORDER_LABEL] } });
    failpoint("bmi.create.afterCommit"); // fault suite: the BMI exists, the engine never hears of it
    return { id: bmi.id, outs: outputsOf(inputs, bmi) };
  });
}

// ---- read / update / delete -----------------------------------------------------------------------

/** Refresh: the BMI's real state, MACs and labels; an empty id when it is gone. */
export async function read(id: string, props: BareMetalInstanceOutputs): Promise<pulumi.dynamic.ReadResult<BareMetalInstanceOutputs>> {
  return withClient(props.connection, async (c) => {
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

/** Only labels and annotations can change in place (plus the connection, which is local). */
export async function update(id: string, olds: BareMetalInstanceOutputs, news: BareMetalInstanceInputs): Promise<pulumi.dynamic.UpdateResult<BareMetalInstanceOutputs>> {
  return withClient(news.connection, async (c) => {
    let bmi = await c.bareMetalInstances.get(id);
    if (!same(olds.labels, news.labels) || !same(olds.annotations, news.annotations)) {
      const labels: Record<string, string> = { ...news.labels };
      const annotations: Record<string, string> = { ...news.annotations };
      const keptLabel = bmi.metadata?.labels[INSTANCE_TYPE_LABEL];
      const keptAnnotation = bmi.metadata?.annotations[DISK_IMAGE_ANNOTATION];
      if (keptLabel) labels[INSTANCE_TYPE_LABEL] = keptLabel;
      if (keptAnnotation) annotations[DISK_IMAGE_ANNOTATION] = keptAnnotation;
      bmi = await c.bareMetalInstances.update({ id, metadata: { labels, annotations } },
        { updateMask: ["metadata.labels", "metadata.annotations"] });
    }
    return { outs: outputsOf(news, bmi) };
  });
}

/**
 * Delete, then wait until the service no longer has it (finalizers done). Past
 * BMW_BMI_DELETE_TIMEOUT_MS (default 10 min) it throws, so the resource stays in state and the next
 * run tries again. NotFound at any point means it is gone.
 */
export async function remove(id: string, props: BareMetalInstanceOutputs): Promise<void> {
  const timeoutMs = envMs("BMW_BMI_DELETE_TIMEOUT_MS", DEFAULT_DELETE_TIMEOUT_MS);
  const pollMs = envMs("BMW_BMI_DELETE_POLL_MS", DEFAULT_DELETE_POLL_MS);
  await withClient(props.connection, async (c) => {
    failpoint("bmi.delete.beforeCall"); // fault suite: killed before the Delete reaches the service
    try {
      await c.bareMetalInstances.delete(id);
    } catch (err) {
      if (err instanceof NotFoundError) return;
      throw err;
    }
    failpoint("bmi.delete.afterCall"); // fault suite: the Delete was accepted, the engine never hears of it
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await c.bareMetalInstances.get(id);
      } catch (err) {
        if (err instanceof NotFoundError) return;
        throw err;
      }
      failpoint("bmi.delete.waiting"); // fault suite: killed while waiting for the BMI to be gone
      if (Date.now() >= deadline) {
        throw new Error(`BareMetalInstance '${props.name}' (${id}) is still being deleted after ${timeoutMs} ms; ` +
          "it stays in the stack and the deletion is checked again on the next run");
      }
      await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
    }
  });
}
