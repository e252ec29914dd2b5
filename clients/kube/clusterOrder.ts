// The ClusterOrder arrives as unstructured JSON. The apiserver checks it against the CRD installed on
// the hub, which may be another version than deploy/crds: the fields the planner reads are checked
// here, by type only (ranges and meaning are the planner's gates), so a malformed order fails its
// own reconcile with a message naming the field instead of reaching the planner half-typed.
import type { ClusterOrder } from "../../planner/types";

export class InvalidClusterOrderError extends Error {
  override name = "InvalidClusterOrderError";
  /** The order's metadata when that much is readable, so an Event can name the order. */
  constructor(message: string, readonly metadata?: ClusterOrder["metadata"]) {
    super(message);
  }
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

class Checker {
  readonly problems: string[] = [];

  object(v: unknown, path: string, required = false): v is Obj {
    if (v === undefined && !required) return false;
    if (isObj(v)) return true;
    this.problems.push(`${path} is ${v === undefined ? "missing" : "not an object"}`);
    return false;
  }

  array(v: unknown, path: string): v is unknown[] {
    if (v === undefined) return false;
    if (Array.isArray(v)) return true;
    this.problems.push(`${path} is not a list`);
    return false;
  }

  string(v: unknown, path: string, required = false): void {
    if (v === undefined && !required) return;
    if (typeof v !== "string" || (required && v === "")) this.problems.push(`${path} is ${v === undefined ? "missing" : "not a string"}`);
  }

  integer(v: unknown, path: string, required = false): void {
    if (v === undefined && !required) return;
    if (!Number.isSafeInteger(v)) this.problems.push(`${path} is ${v === undefined ? "missing" : "not an integer"}`);
  }

  stringMap(v: unknown, path: string): void {
    if (!this.object(v, path)) return;
    for (const [k, x] of Object.entries(v)) this.string(x, `${path}[${k}]`, false);
  }

  strings(v: unknown, path: string): void {
    if (!this.array(v, path)) return;
    v.forEach((x, i) => this.string(x, `${path}[${i}]`, true));
  }
}

function checkAttachment(c: Checker, v: unknown, path: string): void {
  if (!c.object(v, path)) return;
  c.string(v.subnetRef, `${path}.subnetRef`);
  c.strings(v.securityGroupRefs, `${path}.securityGroupRefs`);
}

function checkSpec(c: Checker, spec: unknown): void {
  if (!c.object(spec, "spec", true)) return;
  for (const f of ["templateID", "pullSecret", "sshPublicKey"]) c.string(spec[f], `spec.${f}`);
  checkAttachment(c, spec.networkAttachment, "spec.networkAttachment");
  if (c.array(spec.networkAttachments, "spec.networkAttachments")) {
    spec.networkAttachments.forEach((a, i) => checkAttachment(c, a, `spec.networkAttachments[${i}]`));
  }
  if (!c.array(spec.nodeRequests, "spec.nodeRequests")) return;
  spec.nodeRequests.forEach((r, i) => {
    const p = `spec.nodeRequests[${i}]`;
    if (!c.object(r, p, true)) return;
    c.string(r.nodeSet, `${p}.nodeSet`, true);
    c.integer(r.numberOfNodes, `${p}.numberOfNodes`, true);
    c.string(r.fabricInterface, `${p}.fabricInterface`);
    if (c.object(r.bareMetal, `${p}.bareMetal`)) c.string(r.bareMetal.instanceType, `${p}.bareMetal.instanceType`);
  });
}

const WORKER_STRINGS = ["nodeSet", "instanceType", "kind", "bmiCreateState", "phase", "attemptStartedAt", "creationTimestamp",
  "readySince", "lastFailureReason", "lastFailureMessage", "lastFailureTime", "nextRetryTime"];

function checkStatus(c: Checker, status: unknown): void {
  if (!c.object(status, "status")) return;
  c.string(status.phase, "status.phase");
  for (const f of ["desiredWorkers", "currentWorkers", "readyWorkers"]) c.integer(status[f], `status.${f}`);
  if (c.array(status.conditions, "status.conditions")) {
    status.conditions.forEach((x, i) => {
      if (!c.object(x, `status.conditions[${i}]`, true)) return;
      for (const f of ["type", "status"]) c.string(x[f], `status.conditions[${i}].${f}`, true);
      for (const f of ["reason", "message", "lastTransitionTime"]) c.string(x[f], `status.conditions[${i}].${f}`);
      c.integer(x.observedGeneration, `status.conditions[${i}].observedGeneration`);
    });
  }
  if (!c.array(status.workers, "status.workers")) return;
  status.workers.forEach((w, i) => {
    const p = `status.workers[${i}]`;
    if (!c.object(w, p, true)) return;
    c.string(w.name, `${p}.name`, true);
    for (const f of WORKER_STRINGS) c.string(w[f], `${p}.${f}`);
    c.integer(w.attemptCount, `${p}.attemptCount`);
    if (c.object(w.bareMetalInstance, `${p}.bareMetalInstance`)) {
      c.string(w.bareMetalInstance.name, `${p}.bareMetalInstance.name`);
      c.string(w.bareMetalInstance.id, `${p}.bareMetalInstance.id`);
    }
  });
}

/** The problems of an unstructured ClusterOrder, by field path; empty when the planner can read it. */
export function clusterOrderProblems(v: unknown): string[] {
  const c = new Checker();
  if (!c.object(v, "the object", true)) return c.problems;
  if (c.object(v.metadata, "metadata", true)) {
    const m = v.metadata;
    for (const f of ["name", "namespace", "uid"]) c.string(m[f], `metadata.${f}`, true);
    for (const f of ["resourceVersion", "deletionTimestamp"]) c.string(m[f], `metadata.${f}`);
    c.integer(m.generation, "metadata.generation");
    c.stringMap(m.annotations, "metadata.annotations");
    c.stringMap(m.labels, "metadata.labels");
    c.strings(m.finalizers, "metadata.finalizers");
  }
  checkSpec(c, v.spec);
  checkStatus(c, v.status);
  return c.problems;
}

/** The order typed for the planner, or InvalidClusterOrderError naming (at most 5 of) its bad fields. */
export function validClusterOrder(v: unknown, what: string): ClusterOrder {
  const problems = clusterOrderProblems(v);
  if (problems.length === 0) return v as ClusterOrder; // checked above, field by field
  const more = problems.length > 5 ? ` (and ${problems.length - 5} more)` : "";
  const metadata = isObj(v) && isObj(v.metadata) && !problems.some((p) => p.startsWith("metadata"))
    ? v.metadata as ClusterOrder["metadata"] : undefined; // checked above
  throw new InvalidClusterOrderError(`ClusterOrder ${what} cannot be read: ${problems.slice(0, 5).join("; ")}${more}`, metadata);
}
