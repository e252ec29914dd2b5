// BareMetalInstance-specific server rules: Create validation in the service's order
// (fulfillment-api.md §3.5) and the immutable fields of Update (§3.6).
import type { BareMetalInstanceOut, BareMetalInstanceSpecOut, BareMetalInstanceTypeOut } from "../../clients/fulfillment/types";
import { canSee, SHARED, Subject } from "./auth";
import type { FulfillmentEngine } from "./engine";
import { initialStatus } from "./bmiLifecycle";
import { findInstanceType, instanceTypeNameOf } from "./instanceTypes";
import { invalid, notFound } from "./status";
import type { Kind, ObjectsByKind, RowSim } from "./store";
import { validateSshKey, validateUserData } from "./validation";

const CATALOG = "object.spec.catalog_item";
const ATTACHMENTS = "object.spec.network_attachments";

/** What a server without the proposal fields does with them: drop them. */
export function stripProposals(engine: FulfillmentEngine, kind: Kind, obj: ObjectsByKind[Kind]): void {
  if (kind === "BareMetalInstances" && !engine.keepsProposal("instanceType")) {
    const spec = (obj as BareMetalInstanceOut).spec;
    if (spec) spec.instance_type = "";
  }
  if (kind === "ClusterVersions" && !engine.keepsProposal("clusterVersionDiskImage")) {
    const spec = (obj as ObjectsByKind["ClusterVersions"]).spec;
    if (spec) spec.disk_image = null;
  }
}

function resolveCatalogItem(engine: FulfillmentEngine, subject: Subject, spec: BareMetalInstanceSpecOut, tenant: string) {
  const ref = spec.catalog_item;
  if (!ref || (!ref.id && !ref.name)) throw invalid("spec.catalog_item is mandatory", CATALOG);
  const shown = ref.id || ref.name;
  let candidates = engine.store.rows("BareMetalInstanceCatalogItems").map((r) => r.obj)
    .filter((c) => canSee(subject, c.metadata!.tenant));
  if (ref.shared) candidates = candidates.filter((c) => c.metadata!.tenant === SHARED);
  let item = ref.id ? candidates.find((c) => c.id === ref.id)
    : candidates.filter((c) => c.metadata!.name === ref.name && (!ref.project || c.metadata!.project === ref.project))
      .sort((a, b) => Number(b.metadata!.tenant === tenant) - Number(a.metadata!.tenant === tenant))[0];
  if (item && ref.id && ref.name && item.metadata!.name !== ref.name) {
    throw invalid(`catalog item '${ref.id}' is named '${item.metadata!.name}', not '${ref.name}'`, CATALOG);
  }
  if (!item) throw invalid(`catalog item '${shown}' not found`, CATALOG);
  if (item.metadata!.deletion_timestamp) throw invalid(`catalog item '${shown}' is being deleted`, CATALOG);
  if (!item.published) throw notFound(`catalog item '${shown}' is not published`);
  spec.catalog_item = { id: item.id, name: item.metadata!.name, project: item.metadata!.project, shared: ref.shared };
  return item;
}

/** Spec leaf paths the caller set, for the catalog item's field_definitions check. */
function setPaths(spec: BareMetalInstanceSpecOut): string[] {
  const paths: string[] = [];
  if (spec.ssh_public_key !== undefined) paths.push("ssh_public_key");
  if (spec.user_data !== undefined) paths.push("user_data");
  if (spec.run_strategy !== undefined) paths.push("run_strategy");
  if (spec.restart_trigger !== "0") paths.push("restart_trigger");
  for (const k of Object.keys(spec.template_parameters)) paths.push(`template_parameters.${k}`);
  if (spec.image) paths.push("image.source_type", "image.source_ref");
  if (spec.network_attachments.length) paths.push("network_attachments");
  if (spec.auto_external_ip_attachment) paths.push("auto_external_ip_attachment");
  if (spec.instance_type) paths.push("instance_type");
  return paths;
}

function checkFieldDefinitions(spec: BareMetalInstanceSpecOut, defs: ObjectsByKind["BareMetalInstanceCatalogItems"]["field_definitions"]) {
  if (defs.length === 0) return; // no definitions: nothing is restricted
  const covers = (def: string, p: string) => p === def || p.startsWith(`${def}.`);
  const given = setPaths(spec);
  const notAllowed = given.filter((p) => !defs.some((d) => covers(d.path, p)));
  if (notAllowed.length) throw invalid(`fields not allowed by catalog item: ${notAllowed.join(", ")}`, "object.spec");
  for (const d of defs) {
    const isSet = given.some((p) => covers(d.path, p));
    if (!d.editable && isSet) throw invalid(`field '${d.path}' is not editable`, `object.spec.${d.path}`);
    if (!d.editable || !isSet) {
      const dv = d.default;
      const value = dv?.stringValue ?? dv?.numberValue ?? dv?.boolValue;
      if (value === undefined) {
        if (!isSet) throw invalid(`field '${d.path}' has no value and no default`, `object.spec.${d.path}`);
        continue;
      }
      // Defaults are applied to plain top-level and image paths, the ones a BMI catalog item uses.
      if (d.path.startsWith("image.")) {
        spec.image ??= { source_type: "", source_ref: "" };
        (spec.image as unknown as Record<string, unknown>)[d.path.slice(6)] = value;
      } else (spec as unknown as Record<string, unknown>)[d.path] = value;
    }
  }
}

function checkNetworkAttachments(spec: BareMetalInstanceSpecOut, type: BareMetalInstanceTypeOut | undefined) {
  const atts = spec.network_attachments;
  if (atts.length > 1) {
    if (atts.some((a) => !a.interface)) throw invalid("every network attachment needs an interface when there are several", ATTACHMENTS);
    if (atts.filter((a) => a.primary).length !== 1) throw invalid("exactly one network attachment must be primary", ATTACHMENTS);
  }
  const names = atts.map((a) => a.interface).filter((i): i is string => !!i);
  if (new Set(names).size !== names.length) throw invalid("network attachment interfaces must be unique", ATTACHMENTS);
  if (atts.some((a) => !a.subnet || (!a.subnet.id && !a.subnet.name))) throw invalid("network attachment needs a subnet", ATTACHMENTS);
  if (!type) return;
  const ports = type.spec?.hardware?.network_ports ?? [];
  const usable = ports.filter((p) => p.role !== "lifecycle");
  for (const n of names) {
    const port = ports.find((p) => p.name === n);
    if (!port) throw invalid(`interface '${n}' is not a network port of instance type '${type.metadata!.name}'`, ATTACHMENTS);
    if (port.role === "lifecycle") throw invalid(`interface '${n}' has role lifecycle and cannot be attached`, ATTACHMENTS);
  }
  if (atts.length > usable.length) throw invalid(`instance type '${type.metadata!.name}' has only ${usable.length} usable ports`, ATTACHMENTS);
}

/** Validates and defaults a BMI Create; returns the controller's schedule for the new row. */
export function prepareBmiCreate(engine: FulfillmentEngine, subject: Subject, bmi: BareMetalInstanceOut): RowSim {
  const spec = bmi.spec;
  if (!spec) throw invalid("spec is mandatory", "object.spec");
  const item = resolveCatalogItem(engine, subject, spec, bmi.metadata!.tenant);
  checkFieldDefinitions(spec, item.field_definitions);
  if (spec.ssh_public_key) validateSshKey(spec.ssh_public_key);
  if (spec.user_data !== undefined) validateUserData(spec.user_data);
  if (spec.image && (!spec.image.source_type || !spec.image.source_ref)) {
    throw invalid("spec.image needs both source_type and source_ref", "object.spec.image");
  }
  let type: BareMetalInstanceTypeOut | undefined;
  if (spec.instance_type) {
    type = findInstanceType(engine.store, spec.instance_type);
    if (!type) throw invalid(`instance type '${spec.instance_type}' not found`, "object.spec.instance_type");
  } else {
    const labelled = instanceTypeNameOf(bmi);
    type = labelled ? findInstanceType(engine.store, labelled) : undefined;
  }
  checkNetworkAttachments(spec, type);
  bmi.status = initialStatus(engine.now());
  return { provisionAt: engine.now() + engine.timings.provisionMs };
}

const IMMUTABLE_SPEC = ["ssh_public_key", "user_data", "template_parameters", "image", "auto_external_ip_attachment", "instance_type"] as const;

/** Rejects changes of immutable fields among the masked paths (all of them without a mask). */
export function checkBmiUpdate(stored: BareMetalInstanceOut, next: BareMetalInstanceOut, mask: string[]): void {
  const touched = (p: string) => mask.length === 0 || mask.some((m) => m === p || m.startsWith(`${p}.`) || p.startsWith(`${m}.`));
  const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const was = stored.spec!;
  if (touched("spec.catalog_item")) {
    const ref = next.spec?.catalog_item;
    const old = was.catalog_item!;
    const ok = !!ref && (ref.id || ref.name) && (!ref.id || ref.id === old.id) && (!ref.name || ref.name === old.name);
    if (!ok) throw invalid("cannot change spec.catalog_item", CATALOG);
    next.spec!.catalog_item = old; // the reference interceptor fills in the missing half
  }
  for (const f of IMMUTABLE_SPEC) {
    if (touched(`spec.${f}`) && !same(next.spec?.[f], was[f])) throw invalid(`cannot change spec.${f}`, `object.spec.${f}`);
  }
  if (touched("spec.network_attachments")) {
    const a = next.spec?.network_attachments ?? [];
    const b = was.network_attachments;
    const fixed = (x: (typeof b)[number]) => JSON.stringify([x.subnet, x.interface ?? null, x.primary ?? null]);
    if (a.length !== b.length || a.some((x, i) => fixed(x) !== fixed(b[i]))) {
      throw invalid("cannot change spec.network_attachments (only security_groups may change)", ATTACHMENTS);
    }
  }
}
