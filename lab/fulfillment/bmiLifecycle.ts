// What the fulfillment controller + BMaaS do to a BMI after the API call returns: PROVISIONING → host
// selected by the instance type's host_label_selector → RUNNING with status.hardware.nics[].mac (or
// FAILED with reason HostSelectionFailed), and, after Delete, DELETING → finalizer removed → archived,
// with the host back in the pool. Transitions are due times on the row, so a restart resumes them.
import type {
  BareMetalInstanceOut, BareMetalInstanceStatusOut,
} from "../../clients/fulfillment/types";
import type { BareMetalInstanceCondition__Output as Condition } from "../../protos/gen/osac/private/v1/BareMetalInstanceCondition";
import type { FulfillmentEngine } from "./engine";
import { findInstanceType, instanceTypeNameOf } from "./instanceTypes";
import { timestamp } from "./timestamp";
import type { Row } from "./store";

const HUB = "lab-hub";

type ConditionType = Condition["type"];

function setCondition(status: BareMetalInstanceStatusOut, nowMs: number, type: ConditionType, value: boolean,
  reason?: string, message?: string): void {
  const s = value ? "CONDITION_STATUS_TRUE" : "CONDITION_STATUS_FALSE";
  const existing = status.conditions.find((c) => c.type === type);
  const changed = !existing || existing.status !== s;
  const c: Condition = {
    type, status: s, last_transition_time: changed ? timestamp(nowMs) : existing!.last_transition_time, reason, message,
  };
  if (existing) status.conditions[status.conditions.indexOf(existing)] = c;
  else status.conditions.push(c);
}

export function initialStatus(nowMs: number): BareMetalInstanceStatusOut {
  const status: BareMetalInstanceStatusOut = {
    state: "BARE_METAL_INSTANCE_STATE_PROVISIONING", conditions: [], restart_trigger: "0", hub: HUB,
    network_attachment_statuses: [],
  };
  setCondition(status, nowMs, "BARE_METAL_INSTANCE_CONDITION_TYPE_PROVISIONED", false);
  setCondition(status, nowMs, "BARE_METAL_INSTANCE_CONDITION_TYPE_CONFIGURATION_APPLIED", false);
  setCondition(status, nowMs, "BARE_METAL_INSTANCE_CONDITION_TYPE_READY", false);
  return status;
}

export function markDeleting(engine: FulfillmentEngine, row: Row<"BareMetalInstances">): void {
  const status = row.obj.status!;
  status.state = "BARE_METAL_INSTANCE_STATE_DELETING";
  setCondition(status, engine.now(), "BARE_METAL_INSTANCE_CONDITION_TYPE_READY", false, "Deleting");
  delete row.sim.provisionAt;
  row.sim.deleteAt = engine.now() + engine.timings.deleteMs;
}

function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function fail(engine: FulfillmentEngine, bmi: BareMetalInstanceOut, message: string): void {
  const status = bmi.status!;
  status.state = "BARE_METAL_INSTANCE_STATE_FAILED";
  setCondition(status, engine.now(), "BARE_METAL_INSTANCE_CONDITION_TYPE_PROVISIONED", false, "HostSelectionFailed", message);
  setCondition(status, engine.now(), "BARE_METAL_INSTANCE_CONDITION_TYPE_READY", false, "HostSelectionFailed", message);
}

function provision(engine: FulfillmentEngine, row: Row<"BareMetalInstances">): void {
  const bmi = row.obj;
  const now = engine.now();
  const typeName = instanceTypeNameOf(bmi);
  const type = typeName ? findInstanceType(engine.store, typeName) : undefined;
  if (typeName && !type) return fail(engine, bmi, `instance type '${typeName}' not found`);
  const selector = type?.spec?.host_label_selector?.match_labels ?? {};
  const hosts = [...(engine.opts.seed.hosts ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  const host = hosts.find((h) => engine.store.hosts[h.name] === null && matches(selector, h.labels));
  if (!host) {
    return fail(engine, bmi, `no free host matches host_label_selector ${JSON.stringify(selector)}` +
      (typeName ? ` of instance type '${typeName}'` : ""));
  }
  engine.store.hosts[host.name] = bmi.id;
  row.sim.host = host.name;
  const macs = host.macs.map((m) => m.toLowerCase());
  const withhold = engine.faults.withholdMacs(bmi.metadata!.name);
  const status = bmi.status!;
  status.state = "BARE_METAL_INSTANCE_STATE_RUNNING";
  if (withhold) delete status.hardware;
  else status.hardware = { nics: macs.map((mac) => ({ mac })) };
  const atts = bmi.spec!.network_attachments;
  status.network_attachment_statuses = atts.map((a, i) => ({
    interface: a.interface ?? "", subnet_ref: a.subnet?.id || a.subnet?.name || "",
    ip_address: `10.0.${Object.keys(engine.store.hosts).indexOf(host.name) + 1}.${10 + i}`, primary: a.primary ?? atts.length === 1,
  }));
  setCondition(status, now, "BARE_METAL_INSTANCE_CONDITION_TYPE_PROVISIONED", true, "ProvisionTemplateComplete");
  setCondition(status, now, "BARE_METAL_INSTANCE_CONDITION_TYPE_CONFIGURATION_APPLIED", true);
  if (withhold) setCondition(status, now, "BARE_METAL_INSTANCE_CONDITION_TYPE_READY", false, "NICMetadataUnavailable");
  else setCondition(status, now, "BARE_METAL_INSTANCE_CONDITION_TYPE_READY", true);
  engine.emitBoot({
    bmi_id: bmi.id, bmi_name: bmi.metadata!.name, tenant: bmi.metadata!.tenant, labels: { ...bmi.metadata!.labels },
    user_data: bmi.spec!.user_data ?? "", host_name: host.name, macs, instance_type: typeName,
    boot_time: new Date(now).toISOString(),
  });
}

/** Applies every due transition; true when something changed. */
export function advanceLifecycle(engine: FulfillmentEngine): boolean {
  const now = engine.now();
  let changed = false;
  for (const row of engine.store.rows("BareMetalInstances")) {
    const md = row.obj.metadata!;
    if (md.deletion_timestamp) {
      if (row.sim.deleteAt !== undefined && row.sim.deleteAt <= now && !engine.faults.stuckDeleting(md.name)) {
        md.finalizers = []; // the controller removed its finalizer: archive
        md.version++;
        engine.store.remove("BareMetalInstances", row.obj.id);
        engine.events.changed("BareMetalInstances", "EVENT_TYPE_OBJECT_DELETED", row.obj);
        if (row.sim.host) engine.store.hosts[row.sim.host] = null;
        changed = true;
      }
    } else if (row.sim.provisionAt !== undefined && row.sim.provisionAt <= now) {
      delete row.sim.provisionAt;
      provision(engine, row);
      // The controller writes its status through the API: a change like any other.
      md.version++;
      engine.events.changed("BareMetalInstances", "EVENT_TYPE_OBJECT_UPDATED", row.obj);
      changed = true;
    }
  }
  return changed;
}

/** Epoch ms of the next transition that can happen (stuck deletes excluded). */
export function nextLifecycleDue(engine: FulfillmentEngine): number | undefined {
  let due: number | undefined;
  for (const row of engine.store.rows("BareMetalInstances")) {
    const md = row.obj.metadata!;
    const t = md.deletion_timestamp
      ? (engine.faults.stuckDeleting(md.name) ? undefined : row.sim.deleteAt)
      : row.sim.provisionAt;
    if (t !== undefined && (due === undefined || t < due)) due = t;
  }
  return due;
}
