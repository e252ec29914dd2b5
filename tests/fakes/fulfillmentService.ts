// The in-memory half of the fake fulfillment service: the generic server rules of the private API as
// fulfillment-api.md documents them (§2 CRUD, names, paging, updates, asynchronous delete; §3.4
// tenancy; §3.5/§3.6 the BMI rules the program's calls meet). Requests arrive decoded exactly as the
// real server decodes them (tests/fakes/fulfillment.ts runs every call through the generated codec).
import * as crypto from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import type { FieldViolation } from "../../clients/fulfillment/errors";
import type {
  BareMetalInstanceCatalogItemOut, BareMetalInstanceOut, BareMetalInstanceTemplateOut, HostTypeOut, MetadataOut,
} from "../../clients/fulfillment/types";
import { compileFilter, type Filterable } from "./fulfillmentFilter";

export const SYSTEM = "system";
export const SHARED = "shared";
export const CONTROLLER_FINALIZER = "fulfillment-controller";
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
const USER_DATA_MAX_BYTES = 64 * 1024;

export const KINDS = [
  "BareMetalInstances", "BareMetalInstanceCatalogItems", "BareMetalInstanceTypes", "BareMetalInstanceTemplates",
  "HostTypes", "DiskImages", "ClusterVersions", "Clusters",
] as const;
export type Kind = (typeof KINDS)[number];

/** Who calls: an admin sees every tenant; anybody else their own tenants plus "shared", never "system". */
export interface Caller {
  admin: boolean;
  tenants?: string[];
}

export interface FakeServiceOptions {
  /** Tenants besides system and shared. */
  tenants?: string[];
  /**
   * What a non-admin gets on the private API: "denied" (PERMISSION_DENIED, what the OPA policy
   * answers, the default) or "visibility" (the DAO's tenant rules, so invisible objects are NOT_FOUND).
   */
  tenantPrivateAccess?: "denied" | "visibility";
  /**
   * Whether the fulfillment controller runs: it adds its finalizer and PROVISIONING at once, so a
   * deleted BMI stays (with deletion_timestamp, its name reserved) until completeDeletes(). Without
   * it a BMI stays UNSPECIFIED with no finalizer and Delete archives it at once (§11). Default true.
   */
  controller?: boolean;
  now?: () => number;
}

/** A failed call, as a gRPC status. */
export class FakeStatus extends Error {
  constructor(readonly code: grpc.status, readonly details: string, readonly fieldViolations: FieldViolation[] = []) {
    super(details);
  }
}

const invalid = (msg: string, field?: string) => new FakeStatus(grpc.status.INVALID_ARGUMENT, msg, field ? [{ field, description: msg }] : []);
const notFound = (msg: string) => new FakeStatus(grpc.status.NOT_FOUND, msg);
const alreadyExists = (msg: string) => new FakeStatus(grpc.status.ALREADY_EXISTS, msg);
const permissionDenied = (msg: string) => new FakeStatus(grpc.status.PERMISSION_DENIED, msg);

type Obj = Record<string, unknown> & Filterable & { metadata: MetadataOut };

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const KEY_NAME = /^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/;

function validKey(key: string): boolean {
  const parts = key.split("/");
  if (parts.length > 2) return false;
  if (parts.length === 2 && (parts[0].length > 253 || !parts[0].split(".").every((l) => DNS_LABEL.test(l)))) return false;
  return KEY_NAME.test(parts[parts.length - 1]);
}

function validateMetadata(md: MetadataOut): void {
  if (!md.name) throw invalid("metadata.name is mandatory", "object.metadata.name");
  if (!NAME.test(md.name)) throw invalid(`metadata.name '${md.name}' must be a lowercase RFC 1123 label`, "object.metadata.name");
  for (const [k, v] of Object.entries(md.labels)) {
    if (!validKey(k)) throw invalid(`label key '${k}' is not valid`, "object.metadata.labels");
    if (v !== "" && !KEY_NAME.test(v)) throw invalid(`value of label '${k}' is not valid`, "object.metadata.labels");
  }
  for (const k of Object.keys(md.annotations)) {
    if (!validKey(k)) throw invalid(`annotation key '${k}' is not valid`, "object.metadata.annotations");
  }
}

function getPath(obj: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>((o, k) => (o && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined), obj);
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split(".");
  let o = obj;
  for (const k of keys.slice(0, -1)) {
    if (!o[k] || typeof o[k] !== "object") o[k] = {};
    o = o[k] as Record<string, unknown>;
  }
  o[keys[keys.length - 1]] = value;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export class FakeFulfillmentService {
  private readonly tables = new Map<Kind, Map<string, Obj>>(KINDS.map((k) => [k, new Map()]));
  /** Calls per method path ("/osac.private.v1.BareMetalInstances/List"). */
  readonly calls = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly opts: FakeServiceOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  tenants(): string[] {
    return [SYSTEM, SHARED, ...(this.opts.tenants ?? [])];
  }

  /** The fulfillment controller finishes every pending delete: its finalizer goes, and objects without one are archived. */
  completeDeletes(): number {
    let archived = 0;
    for (const table of this.tables.values()) {
      for (const [id, o] of table) {
        if (!o.metadata.deletion_timestamp) continue;
        o.metadata.finalizers = o.metadata.finalizers.filter((f) => f !== CONTROLLER_FINALIZER);
        if (o.metadata.finalizers.length === 0) {
          table.delete(id);
          archived++;
        }
      }
    }
    return archived;
  }

  /** One decoded request → one response object to encode; FakeStatus for a failed call. */
  handle(path: string, caller: Caller, request: Record<string, unknown>, dryRun: boolean): object {
    this.calls.set(path, (this.calls.get(path) ?? 0) + 1);
    const m = /^\/osac\.private\.v1\.([A-Za-z]+)\/([A-Za-z]+)$/.exec(path);
    const kind = m?.[1] as Kind | undefined;
    if (!m || !kind || !this.tables.has(kind)) throw new FakeStatus(grpc.status.UNIMPLEMENTED, `unknown method ${path}`);
    if (!caller.admin && this.opts.tenantPrivateAccess !== "visibility") {
      throw permissionDenied(`subject is not allowed to call method '${path}'`);
    }
    switch (m[2]) {
      case "List": return this.list(kind, caller, request as { offset?: number; limit?: number; filter?: string });
      case "Get": return { object: this.visible(kind, caller, String(request.id ?? "")) };
      case "Create": return { object: this.create(kind, caller, request.object as Obj | null, dryRun) };
      case "Update": return { object: this.update(kind, caller, request as { object?: Obj | null; update_mask?: { paths: string[] } | null; lock?: boolean }) };
      case "Delete": this.delete(kind, caller, String(request.id ?? "")); return {};
      case "Signal": this.visible(kind, caller, String(request.id ?? "")); return {};
      default: throw new FakeStatus(grpc.status.UNIMPLEMENTED, `unknown method ${path}`);
    }
  }

  private table(kind: Kind): Map<string, Obj> {
    return this.tables.get(kind)!;
  }

  private canSee(caller: Caller, tenant: string): boolean {
    return caller.admin || tenant === SHARED || (tenant !== SYSTEM && (caller.tenants ?? []).includes(tenant));
  }

  private visible(kind: Kind, caller: Caller, id: string): Obj {
    const o = id ? this.table(kind).get(id) : undefined;
    if (!o || !this.canSee(caller, o.metadata.tenant)) throw notFound(`object with identifier '${id}' not found`);
    return o;
  }

  private list(kind: Kind, caller: Caller, req: { offset?: number; limit?: number; filter?: string }) {
    const offset = req.offset ?? 0;
    const limit = req.limit ?? DEFAULT_PAGE;
    if (offset < 0) throw invalid(`offset must not be negative, got ${offset}`, "offset");
    if (limit < 0) throw invalid(`limit must not be negative, got ${limit}`, "limit");
    const match = req.filter ? compileFilter(req.filter) : () => true;
    const matches = [...this.table(kind).values()].filter((o) => this.canSee(caller, o.metadata.tenant) && match(o));
    const items = matches.slice(offset, offset + Math.min(limit, MAX_PAGE));
    return { size: items.length, total: matches.length, items };
  }

  private createTenant(caller: Caller, requested: string): string {
    if (!requested) {
      if (caller.admin) return SHARED; // an admin's default: visible to every tenant
      const own = caller.tenants?.[0];
      if (!own) throw permissionDenied("subject has no tenant");
      return own;
    }
    if (!this.tenants().includes(requested)) throw permissionDenied(`tenant '${requested}' doesn't exist`);
    if (!caller.admin && !(caller.tenants ?? []).includes(requested)) {
      throw permissionDenied(`tenant '${requested}' is not visible or not assignable`);
    }
    return requested;
  }

  private create(kind: Kind, caller: Caller, obj: Obj | null, dryRun: boolean): Obj {
    if (!obj) throw invalid("object is mandatory", "object");
    const md = obj.metadata ?? ({ name: "", labels: {}, annotations: {}, finalizers: [] } as unknown as MetadataOut);
    obj.metadata = md;
    validateMetadata(md);
    md.tenant = this.createTenant(caller, md.tenant);
    const controlled = kind === "BareMetalInstances" && this.opts.controller !== false;
    if (kind === "BareMetalInstances") this.prepareBmi(caller, obj as unknown as BareMetalInstanceOut, controlled);
    if (obj.id && this.table(kind).has(obj.id)) throw alreadyExists(`object with identifier '${obj.id}' already exists`);
    obj.id ||= crypto.randomUUID();
    // Unique per (tenant, project) over live and soft-deleted rows; instance type names are global.
    const clash = [...this.table(kind).values()].some((o) => o.metadata.name === md.name &&
      (kind === "BareMetalInstanceTypes" || (o.metadata.tenant === md.tenant && o.metadata.project === md.project)));
    if (clash) throw alreadyExists(`object with name '${md.name}' already exists`);
    const now = this.now();
    Object.assign(md, {
      creation_timestamp: { seconds: String(Math.floor(now / 1000)), nanos: (now % 1000) * 1e6 }, deletion_timestamp: null,
      creator: SYSTEM, version: 0, finalizers: controlled ? [CONTROLLER_FINALIZER] : [],
    });
    if (!dryRun) this.table(kind).set(obj.id, obj);
    return obj;
  }

  /** §3.5: the catalog item, user_data size, image, attachments against the HostType of the item's template. */
  private prepareBmi(caller: Caller, bmi: BareMetalInstanceOut, controlled: boolean): void {
    const spec = bmi.spec;
    if (!spec) throw invalid("spec is mandatory", "object.spec");
    const ref = spec.catalog_item;
    if (!ref || (!ref.id && !ref.name)) throw invalid("spec.catalog_item is mandatory", "object.spec.catalog_item");
    // By id when one is given (fulfillment-api.md §11), else by name.
    const items = [...this.table("BareMetalInstanceCatalogItems").values()] as unknown as BareMetalInstanceCatalogItemOut[];
    const item = items.find((i) => this.canSee(caller, i.metadata!.tenant) && (ref.id ? i.id === ref.id : i.metadata!.name === ref.name));
    if (!item) throw invalid(`catalog item '${ref.id || ref.name}' not found`, "object.spec.catalog_item");
    if (item.metadata!.deletion_timestamp) throw invalid(`catalog item '${ref.id || ref.name}' is being deleted`, "object.spec.catalog_item");
    if (!item.published) throw notFound(`catalog item '${ref.id || ref.name}' is not published`);
    spec.catalog_item = { ...ref, id: item.id, name: item.metadata!.name };
    const size = Buffer.byteLength(spec.user_data ?? "", "utf8");
    if (size > USER_DATA_MAX_BYTES) {
      throw invalid(`spec.user_data: size ${size} exceeds the maximum of ${USER_DATA_MAX_BYTES} bytes`, "object.spec.user_data");
    }
    if (spec.image && (!spec.image.source_type || !spec.image.source_ref)) {
      throw invalid("spec.image needs both source_type and source_ref", "object.spec.image");
    }
    this.checkAttachments(bmi, item);
    bmi.status = { state: controlled ? "BARE_METAL_INSTANCE_STATE_PROVISIONING" : "BARE_METAL_INSTANCE_STATE_UNSPECIFIED",
      conditions: [], restart_trigger: "0", hub: "", network_attachment_statuses: [], hardware: null } as unknown as BareMetalInstanceOut["status"];
  }

  private checkAttachments(bmi: BareMetalInstanceOut, item: BareMetalInstanceCatalogItemOut): void {
    const atts = bmi.spec!.network_attachments;
    const field = "object.spec.network_attachments";
    if (atts.length > 1) {
      if (atts.some((a) => !a.interface)) throw invalid("every network attachment needs an interface when there are several", field);
      if (atts.filter((a) => a.primary).length !== 1) throw invalid("exactly one network attachment must be primary", field);
    }
    const tref = item.template;
    if (!tref || (!tref.id && !tref.name)) return;
    const templates = [...this.table("BareMetalInstanceTemplates").values()] as unknown as BareMetalInstanceTemplateOut[];
    const template = templates.find((t) => (tref.id ? t.id === tref.id : t.metadata?.name === tref.name));
    if (!template?.host_type) return;
    const hostTypes = [...this.table("HostTypes").values()] as unknown as HostTypeOut[];
    const ht = hostTypes.find((h) => h.id === template.host_type || h.metadata?.name === template.host_type);
    if (!ht) throw invalid(`host type '${template.host_type}' of template '${template.id}' not found`, field);
    atts.forEach((a, i) => {
      if (!a.interface) return;
      const port = ht.interfaces.find((p) => p.name === a.interface);
      if (!port) throw invalid(`network_attachments[${i}]: interface '${a.interface}' not found in host type '${ht.id}'`, field);
      if (port.role === "lifecycle") {
        throw invalid(`network_attachments[${i}]: interface '${a.interface}' has role 'lifecycle' and cannot be used for tenant networking`, field);
      }
    });
  }

  private update(kind: Kind, caller: Caller, req: { object?: Obj | null; update_mask?: { paths: string[] } | null; lock?: boolean }): Obj {
    if (!req.object) throw invalid("object is mandatory", "object");
    const stored = this.visible(kind, caller, req.object.id);
    const mask = req.update_mask?.paths ?? [];
    let next: Obj;
    if (mask.length) {
      next = structuredClone(stored);
      for (const p of mask) setPath(next, p, structuredClone(getPath(req.object, p)));
    } else {
      next = req.object; // no mask: the request replaces the stored object entirely (§2.4)
    }
    const md = next.metadata ?? ({} as MetadataOut);
    // A masked path the request left out is cleared: to the empty value, as the decoded message has it.
    md.labels ??= {};
    md.annotations ??= {};
    md.finalizers ??= [];
    const old = stored.metadata;
    for (const f of ["name", "tenant", "project"] as const) {
      if (md[f] !== old[f]) throw invalid(`cannot change metadata.${f} from '${old[f]}' to '${md[f]}'`, `object.metadata.${f}`);
    }
    if (req.lock && req.object.metadata?.version !== old.version) {
      throw new FakeStatus(grpc.status.ABORTED, `object '${stored.id}' has been modified: requested version is ` +
        `${req.object.metadata?.version ?? 0} but current version is ${old.version}`);
    }
    validateMetadata(md);
    if (kind === "BareMetalInstances") checkBmiImmutables(stored as unknown as BareMetalInstanceOut, next as unknown as BareMetalInstanceOut, mask);
    Object.assign(md, { creation_timestamp: old.creation_timestamp, deletion_timestamp: old.deletion_timestamp, creator: old.creator, version: old.version });
    next.metadata = md;
    if (same(next, stored)) return stored; // nothing changed: no write, no new version
    md.version = old.version + 1;
    this.table(kind).set(stored.id, next);
    return next;
  }

  private delete(kind: Kind, caller: Caller, id: string): void {
    const o = this.visible(kind, caller, id);
    if (o.metadata.deletion_timestamp) return;
    if (o.metadata.finalizers.length === 0) {
      this.table(kind).delete(id); // archived at once
      return;
    }
    const now = this.now();
    o.metadata.deletion_timestamp = { seconds: String(Math.floor(now / 1000)), nanos: (now % 1000) * 1e6 };
    o.metadata.version++;
    if (kind === "BareMetalInstances") (o as unknown as BareMetalInstanceOut).status!.state = "BARE_METAL_INSTANCE_STATE_DELETING";
  }
}

const IMMUTABLE_SPEC = ["ssh_public_key", "user_data", "template_parameters", "image", "auto_external_ip_attachment", "instance_type"] as const;

/** §3.6: changes of immutable fields among the masked paths (all of them without a mask). */
function checkBmiImmutables(stored: BareMetalInstanceOut, next: BareMetalInstanceOut, mask: string[]): void {
  const touched = (p: string) => mask.length === 0 || mask.some((m) => m === p || m.startsWith(`${p}.`) || p.startsWith(`${m}.`));
  const was = stored.spec!;
  if (touched("spec.catalog_item")) {
    const ref = next.spec?.catalog_item;
    const old = was.catalog_item!;
    if (!ref || (!ref.id && !ref.name) || (ref.id && ref.id !== old.id) || (ref.name && ref.name !== old.name)) {
      throw invalid("cannot change spec.catalog_item", "object.spec.catalog_item");
    }
    next.spec!.catalog_item = old;
  }
  for (const f of IMMUTABLE_SPEC) {
    if (touched(`spec.${f}`) && !same(next.spec?.[f], was[f])) throw invalid(`cannot change spec.${f}`, `object.spec.${f}`);
  }
  if (touched("spec.network_attachments")) {
    const fixed = (x: (typeof was.network_attachments)[number]) => JSON.stringify([x.subnet, x.interface ?? null, x.primary ?? null]);
    const a = next.spec?.network_attachments ?? [];
    if (a.length !== was.network_attachments.length || a.some((x, i) => fixed(x) !== fixed(was.network_attachments[i]))) {
      throw invalid("cannot change spec.network_attachments (only security_groups may change)", "object.spec.network_attachments");
    }
  }
}
