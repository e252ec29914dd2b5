// The reconciler's observation handed to the program of the same `pulumi up`, so the program plans from
// it instead of observing the world a second time. It travels as a JSON file in the update's private
// temporary directory (0700, the file 0600, removed after the run) whose path is in BMW_OBSERVATION_FILE:
// a 20-worker order serializes to tens of KB and grows with the order, past what one environment
// variable may hold (128 KiB on Linux). No secret is in it: the ignition is reduced to its outcome and
// size, the ignition URL (it carries an api_key) to "present", the order to the fields the planner reads
// (no spec.pullSecret, only osac.openshift.io/ annotations). The program fetches the ignition itself
// when its plan may create a BMI (programPlan.ts).
import * as fs from "node:fs";
import * as path from "node:path";
import { GROUP, WITHHELD_IGNITION } from "../planner/names";
import type { ClusterOrder, IgnitionFetch, PlannerConfig, Snapshot } from "../planner/types";
import { incarnationNames } from "./incarnationNames";
import type { Observation, OrderRef } from "./observe";

export const HANDOFF_FILE_ENV = "BMW_OBSERVATION_FILE";
const FORMAT = "baremetal-workers/observation";
const VERSION = 1;
const FILE_NAME = "observation.json";
/** Far above any real order (a 20-worker one is tens of KB); a larger file is not read at all. */
const MAX_FILE_BYTES = 32 * 1024 * 1024;

/**
 * Stands in for the ignition content in a handed-off snapshot. It is never sent: the program declares it
 * only for BMIs it adopts (their user_data is create-only and never sent again), and fetches the real
 * ignition before declaring any BMI that may be created (programPlan.ts checks this).
 */
export { WITHHELD_IGNITION };
/** Stands in for the InfraEnv's ignition URL: the planner only asks whether there is one. */
export const WITHHELD_URL = "withheld:";

export class HandoffError extends Error {
  override name = "HandoffError";
}

type IgnitionOutcome = { ok: true; bytes: number } | { ok: false; reason: string; message: string };

/** The handed-off form of an observation (see the header for what is left out). */
interface HandoffDocument {
  format: typeof FORMAT;
  version: typeof VERSION;
  order: string;
  nameSeed: string;
  fulfillmentError?: string;
  snapshot: Omit<Snapshot, "now" | "config" | "newName" | "ignition" | "infraEnv" | "pin"> & {
    now: string;
    ignition?: IgnitionOutcome;
    infraEnv?: { name: string; uid: string; hasIgnitionUrl: boolean };
  };
}

/** What the program receives: a snapshot to plan from (ignition withheld when it was fetched) and its name seed. */
export interface HandedOff {
  snapshot: Snapshot;
  nameSeed: string;
  fulfillmentError?: string;
  /** snapshot.ignition stands for a fetched ignition whose content is not here (WITHHELD_IGNITION). */
  ignitionWithheld: boolean;
}

/** The order with only what the planner reads: no pull secret, no foreign annotations (kubectl's last-applied copy holds the spec). */
export function handoffOrder(order: ClusterOrder): ClusterOrder {
  const m = order.metadata;
  const annotations = Object.fromEntries(Object.entries(m.annotations ?? {}).filter(([k]) => k.startsWith(`${GROUP}/`)));
  const s = order.spec;
  return {
    ...(order.apiVersion ? { apiVersion: order.apiVersion } : {}),
    ...(order.kind ? { kind: order.kind } : {}),
    metadata: {
      name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, generation: m.generation,
      annotations, labels: m.labels, finalizers: m.finalizers, deletionTimestamp: m.deletionTimestamp,
    },
    spec: {
      templateID: s.templateID, sshPublicKey: s.sshPublicKey, networkAttachment: s.networkAttachment,
      networkAttachments: s.networkAttachments, nodeRequests: s.nodeRequests,
    },
    ...(order.status ? { status: order.status } : {}),
  };
}

function ignitionOutcome(ign: IgnitionFetch): IgnitionOutcome {
  return ign.ok ? { ok: true, bytes: ign.bytes } : { ok: false, reason: ign.reason, message: ign.message };
}

export function encodeHandoff(ref: OrderRef, obs: Observation): string {
  // The pin is not handed over: the program reads its own from the stack config.
  const { now, config: _config, newName: _newName, ignition, infraEnv, order, pin: _pin, ...rest } = obs.snapshot;
  const doc: HandoffDocument = {
    format: FORMAT, version: VERSION, order: `${ref.namespace}/${ref.name}`, nameSeed: obs.nameSeed,
    ...(obs.fulfillmentError ? { fulfillmentError: obs.fulfillmentError } : {}),
    snapshot: {
      ...rest,
      now: now.toISOString(),
      order: handoffOrder(order),
      ...(ignition ? { ignition: ignitionOutcome(ignition) } : {}),
      ...(infraEnv ? { infraEnv: { name: infraEnv.name, uid: infraEnv.uid, hasIgnitionUrl: Boolean(infraEnv.ignitionUrl) } } : {}),
    },
  };
  return JSON.stringify(doc);
}

/**
 * Writes the handoff into `privateDir` (a directory only this user can enter, removed by the caller after
 * the run) and returns the program environment that names it.
 */
export function writeHandoff(privateDir: string, ref: OrderRef, obs: Observation): Record<string, string> {
  const file = path.join(privateDir, FILE_NAME);
  fs.writeFileSync(file, encodeHandoff(ref, obs), { mode: 0o600, flag: "wx" });
  return { [HANDOFF_FILE_ENV]: file };
}

/**
 * Where the program finds the reconciler's observation: the file of a program process (its path in
 * BMW_OBSERVATION_FILE), or, for a program run inside the reconciler, the encoded document itself.
 */
export type HandoffSource = { file: string } | { encoded: string };

/** The handed-off observation from its source, validated (HandoffError says what is wrong, never its content). */
export function readHandoffSource(source: HandoffSource, ref: OrderRef, config: PlannerConfig): HandedOff {
  if ("file" in source) return readHandoff(source.file, ref, config);
  let value: unknown;
  try {
    value = JSON.parse(source.encoded);
  } catch {
    throw new HandoffError("the handed-off observation is not JSON");
  }
  return decodeHandoff(value, ref, config);
}

/** Reads and validates a handoff file; HandoffError says what is wrong with it (never its content). */
export function readHandoff(file: string, ref: OrderRef, config: PlannerConfig): HandedOff {
  let text: string;
  try {
    const size = fs.statSync(file).size;
    if (size > MAX_FILE_BYTES) throw new HandoffError(`the handoff file ${file} is ${size} bytes, more than ${MAX_FILE_BYTES}`);
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if (err instanceof HandoffError) throw err;
    throw new HandoffError(`the handoff file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HandoffError(`the handoff file ${file} is not JSON`);
  }
  return decodeHandoff(value, ref, config);
}

export function decodeHandoff(value: unknown, ref: OrderRef, config: PlannerConfig): HandedOff {
  const doc = validHandoff(value, ref);
  const { now, ignition, infraEnv, ...rest } = doc.snapshot;
  const snapshot: Snapshot = {
    ...rest,
    now: new Date(now),
    ...(ignition ? { ignition: ignition.ok ? { ok: true, content: WITHHELD_IGNITION, bytes: ignition.bytes } : ignition as IgnitionFetch } : {}),
    ...(infraEnv ? { infraEnv: { name: infraEnv.name, uid: infraEnv.uid, ...(infraEnv.hasIgnitionUrl ? { ignitionUrl: WITHHELD_URL } : {}) } } : {}),
    config,
    newName: incarnationNames(doc.nameSeed),
  };
  return { snapshot, nameSeed: doc.nameSeed, fulfillmentError: doc.fulfillmentError, ignitionWithheld: ignition?.ok === true };
}

// ---- validation: the file is unstructured JSON until every field the planner reads has its type ----

type Json = Record<string, unknown>;

function fail(at: string, what: string): never {
  throw new HandoffError(`malformed handoff: ${at} ${what}`);
}

function obj(v: unknown, at: string): Json {
  if (v === null || typeof v !== "object" || Array.isArray(v)) fail(at, "is not an object");
  return v as Json;
}

function str(v: unknown, at: string): string {
  if (typeof v !== "string") fail(at, "is not a string");
  return v;
}

function num(v: unknown, at: string): number {
  if (typeof v !== "number" || !Number.isFinite(v)) fail(at, "is not a number");
  return v;
}

function bool(v: unknown, at: string): boolean {
  if (typeof v !== "boolean") fail(at, "is not a boolean");
  return v;
}

function arr(v: unknown, at: string, each: (item: unknown, at: string) => void): void {
  if (!Array.isArray(v)) fail(at, "is not an array");
  v.forEach((item, i) => each(item, `${at}[${i}]`));
}

function opt(v: unknown, at: string, check: (v: unknown, at: string) => unknown): void {
  if (v !== undefined) check(v, at);
}

function strings(v: unknown, at: string): void {
  arr(v, at, str);
}

function stringMap(v: unknown, at: string): void {
  for (const [k, x] of Object.entries(obj(v, at))) str(x, `${at}.${k}`);
}

function validOrder(v: unknown, ref: OrderRef): void {
  const o = obj(v, "snapshot.order");
  const m = obj(o.metadata, "snapshot.order.metadata");
  if (str(m.namespace, "snapshot.order.metadata.namespace") !== ref.namespace || str(m.name, "snapshot.order.metadata.name") !== ref.name) {
    fail("snapshot.order.metadata", `names another ClusterOrder than ${ref.namespace}/${ref.name}`);
  }
  str(m.uid, "snapshot.order.metadata.uid");
  if (!str(m.resourceVersion, "snapshot.order.metadata.resourceVersion")) fail("snapshot.order.metadata.resourceVersion", "is empty");
  opt(m.annotations, "snapshot.order.metadata.annotations", stringMap);
  opt(m.labels, "snapshot.order.metadata.labels", stringMap);
  opt(m.finalizers, "snapshot.order.metadata.finalizers", strings);
  const spec = obj(o.spec, "snapshot.order.spec");
  opt(spec.nodeRequests, "snapshot.order.spec.nodeRequests", (rs, at) => arr(rs, at, (r, a) => {
    const req = obj(r, a);
    str(req.nodeSet, `${a}.nodeSet`);
    num(req.numberOfNodes, `${a}.numberOfNodes`);
  }));
  opt(o.status, "snapshot.order.status", (s, at) => {
    const status = obj(s, at);
    opt(status.workers, `${at}.workers`, (ws, a) => arr(ws, a, (w, wa) => {
      const entry = obj(w, wa);
      str(entry.name, `${wa}.name`);
      str(entry.nodeSet, `${wa}.nodeSet`);
      str(entry.phase, `${wa}.phase`);
    }));
    opt(status.conditions, `${at}.conditions`, (cs, a) => arr(cs, a, obj));
  });
}

function validSnapshot(v: unknown, ref: OrderRef): void {
  const s = obj(v, "snapshot");
  if (Number.isNaN(Date.parse(str(s.now, "snapshot.now")))) fail("snapshot.now", "is not a time");
  validOrder(s.order, ref);
  opt(s.infraEnv, "snapshot.infraEnv", (ie, at) => {
    const e = obj(ie, at);
    str(e.name, `${at}.name`);
    str(e.uid, `${at}.uid`);
    bool(e.hasIgnitionUrl, `${at}.hasIgnitionUrl`);
  });
  opt(s.recordedInfraEnvUid, "snapshot.recordedInfraEnvUid", str);
  opt(s.ignition, "snapshot.ignition", (ig, at) => {
    const i = obj(ig, at);
    if (bool(i.ok, `${at}.ok`)) num(i.bytes, `${at}.bytes`);
    else {
      str(i.reason, `${at}.reason`);
      str(i.message, `${at}.message`);
    }
    if ("content" in i) fail(at, "carries content");
  });
  bool(obj(s.diskImage, "snapshot.diskImage").ok, "snapshot.diskImage.ok");
  for (const [k, t] of Object.entries(obj(s.instanceTypes, "snapshot.instanceTypes"))) str(obj(t, `snapshot.instanceTypes.${k}`).name, `snapshot.instanceTypes.${k}.name`);
  str(s.catalogItem, "snapshot.catalogItem");
  opt(s.bmis, "snapshot.bmis", (bs, at) => arr(bs, at, (b, a) => {
    const bmi = obj(b, a);
    for (const k of ["id", "name", "state"]) str(bmi[k], `${a}.${k}`);
    bool(bmi.deleting, `${a}.deleting`);
    strings(bmi.macs, `${a}.macs`);
    stringMap(bmi.labels, `${a}.labels`);
  }));
  opt(s.goneBmiIds, "snapshot.goneBmiIds", strings);
  arr(s.agents, "snapshot.agents", (ag, a) => {
    const agent = obj(ag, a);
    for (const k of ["name", "namespace", "uid", "resourceVersion"]) str(agent[k], `${a}.${k}`);
    stringMap(agent.labels, `${a}.labels`);
    opt(agent.macs, `${a}.macs`, strings);
    bool(agent.approved, `${a}.approved`);
  });
  arr(s.nodePools, "snapshot.nodePools", (np, a) => {
    const pool = obj(np, a);
    str(pool.name, `${a}.name`);
    str(pool.namespace, `${a}.namespace`);
    num(pool.replicas, `${a}.replicas`);
    num(pool.statusReplicas, `${a}.statusReplicas`);
  });
  opt(s.clusterDeployment, "snapshot.clusterDeployment", (cd, at) => {
    str(obj(cd, at).name, `${at}.name`);
    str(obj(cd, at).namespace, `${at}.namespace`);
  });
  num(s.fulfillmentErrors, "snapshot.fulfillmentErrors");
  opt(s.fulfillmentErrorKind, "snapshot.fulfillmentErrorKind", str);
  opt(s.createRejections, "snapshot.createRejections", (rs, at) => arr(rs, at, (r, a) => {
    for (const k of ["bmiName", "code", "message"]) str(obj(r, a)[k], `${a}.${k}`);
  }));
  opt(s.lastUpdate, "snapshot.lastUpdate", (u, at) => bool(obj(u, at).ok, `${at}.ok`));
  validChangeControl(s);
}

/** The snapshot's change-control fields: a preview's assumed approval, the hub's count, a saved preview's outcome. */
function validChangeControl(s: Record<string, unknown>): void {
  opt(s.previewApproval, "snapshot.previewApproval", str);
  opt(s.hub, "snapshot.hub", (h, at) => {
    num(obj(h, at).creates, `${at}.creates`);
    num(obj(h, at).deletes, `${at}.deletes`);
  });
  opt(s.savedPreviewOutcome, "snapshot.savedPreviewOutcome", (o, at) => {
    str(obj(o, at).id, `${at}.id`);
    bool(obj(o, at).ran, `${at}.ran`);
    opt(obj(o, at).diverged, `${at}.diverged`, str);
  });
}

function validHandoff(value: unknown, ref: OrderRef): HandoffDocument {
  const doc = obj(value, "the document");
  if (doc.format !== FORMAT || doc.version !== VERSION) fail("the document", `is not a ${FORMAT} v${VERSION} handoff`);
  if (str(doc.order, "order") !== `${ref.namespace}/${ref.name}`) fail("order", `is not ${ref.namespace}/${ref.name}`);
  str(doc.nameSeed, "nameSeed");
  opt(doc.fulfillmentError, "fulfillmentError", str);
  validSnapshot(doc.snapshot, ref);
  return doc as unknown as HandoffDocument;
}
