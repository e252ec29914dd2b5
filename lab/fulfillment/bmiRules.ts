// BareMetalInstance-specific server rules: Create validation in the service's order
// (fulfillment-api.md §3.5) and the immutable fields of Update (§3.6).
import type { BareMetalInstanceOut, BareMetalInstanceSpecOut, HostTypeOut } from "../../clients/fulfillment/types";
import { canSee, SHARED, Subject } from "./auth";
import type { FulfillmentEngine } from "./engine";
import { initialStatus } from "./bmiLifecycle";
import { findInstanceType } from "./instanceTypes";
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

/**
 * What a server without the proposal fields answers a Create with: the request's unknown fields are
 * echoed in the response (they round-trip through the decoded message) though storage dropped them.
 */
export function echoProposals<K extends Kind>(engine: FulfillmentEngine, kind: K, requested: ObjectsByKind[K], stored: ObjectsByKind[K]): ObjectsByKind[K] {
  const out = structuredClone(stored);
  if (kind === "BareMetalInstances" && !engine.keepsProposal("instanceType")) {
    const spec = (out as BareMetalInstanceOut).spec;
    const asked = (requested as BareMetalInstanceOut).spec?.instance_type;
    if (spec && asked) spec.instance_type = asked;
  }
  if (kind === "ClusterVersions" && !engine.keepsProposal("clusterVersionDiskImage")) {
    const spec = (out as ObjectsByKind["ClusterVersions"]).spec;
    const asked = (requested as ObjectsByKind["ClusterVersions"]).spec?.disk_image;
    if (spec && asked) spec.disk_image = asked;
  }
  return out;
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

/**
 * The HostType the attachments are checked against: the one of the catalog item's template, when the
 * template has a host_type. The BareMetalInstanceType's network_ports play no part (fulfillment-api.md
 * §3.5 step 6, §11).
 */
function hostTypeOf(engine: FulfillmentEngine, item: ObjectsByKind["BareMetalInstanceCatalogItems"]): HostTypeOut | undefined {
  const ref = item.template;
  if (!ref || (!ref.id && !ref.name)) return undefined;
  const template = engine.store.rows("BareMetalInstanceTemplates").map((r) => r.obj)
    .find((t) => (ref.id ? t.id === ref.id : t.metadata?.name === ref.name));
  if (!template?.host_type) return undefined;
  const wanted = template.host_type;
  const hostType = engine.store.rows("HostTypes").map((r) => r.obj).find((h) => h.id === wanted || h.metadata?.name === wanted);
  if (!hostType) throw invalid(`host type '${wanted}' of template '${template.id}' not found`, ATTACHMENTS);
  return hostType;
}

function checkNetworkAttachments(spec: BareMetalInstanceSpecOut, hostType: HostTypeOut | undefined) {
  const atts = spec.network_attachments;
  if (atts.length > 1) {
    if (atts.some((a) => !a.interface)) throw invalid("every network attachment needs an interface when there are several", ATTACHMENTS);
    if (atts.filter((a) => a.primary).length !== 1) throw invalid("exactly one network attachment must be primary", ATTACHMENTS);
  }
  const names = atts.map((a) => a.interface).filter((i): i is string => !!i);
  if (new Set(names).size !== names.length) throw invalid("network attachment interfaces must be unique", ATTACHMENTS);
  if (atts.some((a) => !a.subnet || (!a.subnet.id && !a.subnet.name))) throw invalid("network attachment needs a subnet", ATTACHMENTS);
  if (!hostType) return;
  const usable = hostType.interfaces.filter((i) => i.role !== "lifecycle");
  atts.forEach((a, i) => {
    if (!a.interface) return;
    const port = hostType.interfaces.find((p) => p.name === a.interface);
    if (!port) throw invalid(`network_attachments[${i}]: interface '${a.interface}' not found in host type '${hostType.id}'`, ATTACHMENTS);
    if (port.role === "lifecycle") {
      throw invalid(`network_attachments[${i}]: interface '${a.interface}' has role 'lifecycle' and cannot be used for tenant networking`, ATTACHMENTS);
    }
  });
  if (atts.length > usable.length) throw invalid(`host type '${hostType.id}' has only ${usable.length} usable interfaces`, ATTACHMENTS);
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
  if (spec.instance_type && !findInstanceType(engine.store, spec.instance_type)) {
    throw invalid(`instance type '${spec.instance_type}' not found`, "object.spec.instance_type");
  }
  checkNetworkAttachments(spec, hostTypeOf(engine, item));
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
