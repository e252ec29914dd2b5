// The simulated fulfillment service's generic server (fulfillment-api.md §2): List/Get/Create/Update/
// Delete/Signal over the store with tenant visibility, name rules, UNIQUE(tenant, project, name)
// over live and soft-deleted rows, caller-supplied ids, update masks and locks, and asynchronous
// deletion for objects with finalizers. BMI-specific rules and the lifecycle live in bmiRules.ts and
// bmiLifecycle.ts.
import * as crypto from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import type { MetadataOut } from "../../clients/fulfillment/types";
import type { BareMetalInstancesListRequest__Output as ListRequest } from "../../protos/gen/osac/private/v1/BareMetalInstancesListRequest";
import { canSee, createTenant, SHARED, Subject, SYSTEM } from "./auth";
import { checkFilter, evaluateFilter, FilterError, parseFilter } from "./cel";
import { Faults } from "./faults";
import type { BootEvent } from "./labProtos";
import { DEFAULT_TIMINGS, SimulatorSeed, SimulatorTimings } from "./seed";
import { alreadyExists, invalid, notFound, SimError } from "./status";
import { Kind, ObjectsByKind, Row, Store } from "./store";
import { validateLabelsAndAnnotations, validateName, validateTemplateId } from "./validation";
import { checkBmiUpdate, echoProposals, prepareBmiCreate, stripProposals } from "./bmiRules";
import { advanceLifecycle, markDeleting, nextLifecycleDue } from "./bmiLifecycle";
import { timestamp } from "./timestamp";
import { EventHub } from "./events";

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
export const CONTROLLER_FINALIZER = "fulfillment-controller";

export interface EngineOptions {
  seed: SimulatorSeed;
  stateDir: string;
  now?: () => number;
  /** See Store; the default suits a lab. */
  journalCompactBytes?: number;
}

/** Reads one dotted path ("spec.run_strategy") of a decoded object. */
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

export class FulfillmentEngine {
  readonly store: Store;
  readonly faults = new Faults();
  readonly timings: SimulatorTimings;
  readonly calls = new Map<string, number>();
  /** The Events service's open streams; every committed change is sent to them. */
  readonly events: EventHub;
  private readonly bootListeners = new Set<(e: BootEvent) => void>();
  private timer: NodeJS.Timeout | undefined;
  readonly now: () => number;

  constructor(readonly opts: EngineOptions) {
    this.now = opts.now ?? Date.now;
    this.timings = { ...DEFAULT_TIMINGS, ...opts.seed.timings };
    this.store = new Store(opts.stateDir, opts.journalCompactBytes);
    this.events = new EventHub(this.store.messageType("osac.private.v1.Event"), this.now);
    this.seedObjects(this.store.load());
    for (const h of opts.seed.hosts ?? []) this.store.hosts[h.name] ??= null;
    this.store.snapshot(); // the journal of the last run, and the seeding, folded into one file
    this.tick();
  }

  tenants(): string[] {
    return [SYSTEM, SHARED, ...(this.opts.seed.tenants ?? [])];
  }

  keepsProposal(p: "instanceType" | "clusterVersionDiskImage"): boolean {
    return this.opts.seed.proposals?.[p] ?? true;
  }

  // ---- reads ----

  visibleRow<K extends Kind>(kind: K, subject: Subject, id: string): Row<K> {
    const row = id ? this.store.get(kind, id) : undefined;
    if (!row || !canSee(subject, row.obj.metadata?.tenant ?? "")) throw notFound(`object with identifier '${id}' not found`);
    return row;
  }

  list<K extends Kind>(kind: K, subject: Subject, req: ListRequest): { size: number; total: number; items: ObjectsByKind[K][] } {
    const offset = req.offset ?? 0;
    const limit = req.limit === undefined ? DEFAULT_PAGE : Math.min(req.limit, MAX_PAGE);
    if (offset < 0) throw invalid(`offset must not be negative, got ${offset}`);
    if (limit < 0) throw invalid(`limit must not be negative, got ${limit}`);
    let matches = this.store.rows(kind).map((r) => r.obj).filter((o) => canSee(subject, o.metadata?.tenant ?? ""));
    if (req.filter) {
      const selfType = this.store.typeOf(kind);
      try {
        const ast = parseFilter(req.filter);
        checkFilter(ast, selfType);
        const nowMs = this.now();
        matches = matches.filter((o) => evaluateFilter(ast, { self: o, selfType, nowMs }));
      } catch (err) {
        if (err instanceof FilterError) throw invalid(`failed to translate filter: ${err.message}`, "filter");
        throw err;
      }
    }
    let shrinkTotal = 0;
    let pageCap: number | undefined;
    if (kind === "BareMetalInstances") ({ matches, pageCap, shrinkTotal } = this.faults.takeList(matches));
    const items = matches.slice(offset, offset + Math.min(limit, pageCap ?? limit));
    return { size: items.length, total: Math.max(0, matches.length - shrinkTotal), items };
  }

  // ---- writes ----

  create<K extends Kind>(kind: K, subject: Subject, input: unknown, dryRun: boolean): ObjectsByKind[K] {
    const requestedTenant = (input as { metadata?: { tenant?: string } } | null)?.metadata?.tenant ?? "";
    if (kind === "BareMetalInstances" && requestedTenant !== SYSTEM) {
      this.store.createsWithoutSystemTenant++;
      this.store.save(); // counted even when the create is refused
    }
    const obj = this.store.canonical(kind, input ?? {});
    const requested = this.store.canonical(kind, input ?? {});
    const md: MetadataOut = obj.metadata ?? this.store.canonical(kind, { metadata: {} }).metadata!;
    validateName(md.name);
    validateLabelsAndAnnotations(md);
    if (kind === "BareMetalInstanceTemplates" && obj.id) validateTemplateId(obj.id);
    md.tenant = createTenant(subject, md.tenant, this.tenants());
    obj.metadata = md;
    stripProposals(this, kind, obj); // a server without the proposal fields never sees them
    const sim = kind === "BareMetalInstances" ? prepareBmiCreate(this, subject, obj as ObjectsByKind["BareMetalInstances"]) : {};
    if (obj.id && this.store.get(kind, obj.id)) throw alreadyExists(`object with identifier '${obj.id}' already exists`);
    obj.id ||= crypto.randomUUID();
    this.checkUniqueName(kind, md);
    const now = this.now();
    Object.assign(md, {
      creation_timestamp: timestamp(now), deletion_timestamp: null, creator: SYSTEM, version: 0,
      finalizers: kind === "BareMetalInstances" ? [CONTROLLER_FINALIZER] : [],
    });
    if (dryRun) return echoProposals(this, kind, requested, obj);
    this.store.put(kind, { obj, sim } as Row<K>);
    this.events.changed(kind, "EVENT_TYPE_OBJECT_CREATED", obj);
    this.commit();
    return echoProposals(this, kind, requested, obj);
  }

  update<K extends Kind>(kind: K, subject: Subject, input: unknown, mask: string[], lock: boolean): ObjectsByKind[K] {
    if (!input) throw invalid("object is mandatory", "object");
    const req = this.store.canonical(kind, input);
    const row = this.visibleRow(kind, subject, req.id);
    const stored = row.obj;
    let next: ObjectsByKind[K];
    if (mask.length) {
      const draft = structuredClone(stored) as unknown as Record<string, unknown>;
      for (const p of mask) setPath(draft, p, getPath(req, p));
      next = this.store.canonical(kind, draft);
    } else {
      next = req; // private API: no mask = the request replaces the stored object entirely
    }
    stripProposals(this, kind, next);
    const md = next.metadata ?? this.store.canonical(kind, { metadata: {} }).metadata!;
    const old = stored.metadata!;
    for (const f of ["name", "tenant", "project"] as const) {
      if (md[f] !== old[f]) throw invalid(`cannot change metadata.${f} from '${old[f]}' to '${md[f]}'`, `object.metadata.${f}`);
    }
    if (lock && req.metadata?.version !== old.version) {
      throw new SimError(grpc.status.ABORTED,
        `object '${stored.id}' has been modified: requested version is ${req.metadata?.version ?? 0} but current version is ${old.version}`);
    }
    validateLabelsAndAnnotations(md);
    if (kind === "BareMetalInstances") {
      checkBmiUpdate(stored as ObjectsByKind["BareMetalInstances"], next as ObjectsByKind["BareMetalInstances"], mask);
    }
    Object.assign(md, { creation_timestamp: old.creation_timestamp, deletion_timestamp: old.deletion_timestamp, creator: old.creator, version: old.version });
    next.metadata = md;
    if (JSON.stringify(next) === JSON.stringify(stored)) return stored; // nothing changed: no write
    md.version = old.version + 1;
    row.obj = next;
    this.events.changed(kind, "EVENT_TYPE_OBJECT_UPDATED", next);
    this.commit();
    return next;
  }

  delete(kind: Kind, subject: Subject, id: string): void {
    const row = this.visibleRow(kind, subject, id);
    const md = row.obj.metadata!;
    if (md.deletion_timestamp) return; // already being deleted
    if (md.finalizers.length === 0) {
      this.store.remove(kind, id); // archived at once
      this.events.changed(kind, "EVENT_TYPE_OBJECT_DELETED", row.obj);
    } else {
      md.deletion_timestamp = timestamp(this.now());
      md.version++;
      if (kind === "BareMetalInstances") markDeleting(this, row as Row<"BareMetalInstances">);
      this.events.changed(kind, "EVENT_TYPE_OBJECT_UPDATED", row.obj);
    }
    this.commit();
  }

  /** Signal: nothing changes; watchers are told the object may need reconciling. */
  signal(kind: Kind, subject: Subject, id: string): void {
    const row = this.visibleRow(kind, subject, id);
    this.events.changed(kind, "EVENT_TYPE_OBJECT_SIGNALED", row.obj);
    this.events.flush();
  }

  // ---- lifecycle, boots, persistence ----

  onBoot(listener: (e: BootEvent) => void): () => void {
    this.bootListeners.add(listener);
    return () => this.bootListeners.delete(listener);
  }

  emitBoot(e: BootEvent): void {
    this.store.boots.push(e);
    for (const l of this.bootListeners) l(e);
  }

  /** Applies due transitions, persists, and arms the timer for the next one. */
  tick(): void {
    if (advanceLifecycle(this)) this.store.save();
    this.events.flush();
    this.schedule();
  }

  commit(): void {
    this.store.save();
    this.events.flush();
    this.schedule();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.bootListeners.clear();
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    const due = nextLifecycleDue(this);
    this.timer = due === undefined ? undefined : setTimeout(() => this.tick(), Math.max(0, due - this.now()));
  }

  private checkUniqueName(kind: Kind, md: MetadataOut): void {
    // Instance type names are global; everything else is unique per (tenant, project), soft-deleted rows included.
    const clash = this.store.rows(kind).some((r) => {
      const o = r.obj.metadata!;
      return o.name === md.name && (kind === "BareMetalInstanceTypes" || (o.tenant === md.tenant && o.project === md.project));
    });
    if (clash) throw alreadyExists(`object with name '${md.name}' already exists`);
  }

  /** Creates the seed's objects of these kinds (every kind on a fresh state dir). */
  private seedObjects(kinds: Kind[]): void {
    const seed = this.opts.seed;
    const lists: { [K in Kind]: unknown[] | undefined } = {
      BareMetalInstances: [], BareMetalInstanceCatalogItems: seed.catalogItems, BareMetalInstanceTypes: seed.instanceTypes,
      BareMetalInstanceTemplates: seed.templates, HostTypes: seed.hostTypes,
      DiskImages: seed.diskImages, ClusterVersions: seed.clusterVersions, Clusters: seed.clusters,
    };
    const admin: Subject = { admin: true, tenants: [] };
    for (const kind of kinds) {
      for (const o of lists[kind] ?? []) {
        const withTenant = o as { metadata?: { tenant?: string } };
        const tenant = withTenant.metadata?.tenant || SHARED;
        this.create(kind, admin, { ...withTenant, metadata: { ...withTenant.metadata, tenant } }, false);
      }
    }
  }
}
