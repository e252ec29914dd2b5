// The simulator's database: live rows per resource kind (soft-deleted rows included until they are
// archived), host allocations, boot history and counters. Every commit is on disk before its call is
// answered (persistence.ts), so a restart (or a crash) loses nothing.
import type * as protobuf from "protobufjs";
import { loadFulfillmentRoot } from "../../protos/fulfillment";
import type {
  BareMetalInstanceCatalogItemOut, BareMetalInstanceOut, BareMetalInstanceTemplateOut, BareMetalInstanceTypeOut, ClusterOut,
  ClusterVersionOut, DiskImageOut, HostTypeOut,
} from "../../clients/fulfillment/types";
import type { BootEvent } from "./labProtos";
import { type JournalEntry, type PersistedRow, type SnapshotFile, StateFiles } from "./persistence";

export const KIND_TYPES = {
  BareMetalInstances: "osac.private.v1.BareMetalInstance",
  BareMetalInstanceCatalogItems: "osac.private.v1.BareMetalInstanceCatalogItem",
  BareMetalInstanceTypes: "osac.private.v1.BareMetalInstanceType",
  BareMetalInstanceTemplates: "osac.private.v1.BareMetalInstanceTemplate",
  HostTypes: "osac.private.v1.HostType",
  DiskImages: "osac.private.v1.DiskImage",
  ClusterVersions: "osac.private.v1.ClusterVersion",
  Clusters: "osac.private.v1.Cluster",
} as const;

export type Kind = keyof typeof KIND_TYPES;
export const KINDS = Object.keys(KIND_TYPES) as Kind[];

export interface ObjectsByKind {
  BareMetalInstances: BareMetalInstanceOut;
  BareMetalInstanceCatalogItems: BareMetalInstanceCatalogItemOut;
  BareMetalInstanceTypes: BareMetalInstanceTypeOut;
  BareMetalInstanceTemplates: BareMetalInstanceTemplateOut;
  HostTypes: HostTypeOut;
  DiskImages: DiskImageOut;
  ClusterVersions: ClusterVersionOut;
  Clusters: ClusterOut;
}

/** What the simulated controller remembers about a row besides the object itself. */
export interface RowSim {
  /** Epoch ms at which provisioning completes. */
  provisionAt?: number;
  /** Epoch ms at which a deleting object is archived. */
  deleteAt?: number;
  /** Host allocated to a BMI. */
  host?: string;
}

export interface Row<K extends Kind> {
  obj: ObjectsByKind[K];
  sim: RowSim;
}

/** The decoded form handlers see and return: the same options as proto-loader (LOADER_OPTIONS). */
const LIVE: protobuf.IConversionOptions = { longs: String, enums: String, bytes: Buffer, defaults: true, arrays: true, objects: true, oneofs: true };
/** The persisted form: lossless JSON (bytes as base64, no defaults). */
const PERSISTED: protobuf.IConversionOptions = { longs: String, enums: String, bytes: String };

/**
 * What the disk holds of a row. A commit writes the rows whose object, version or simulator fields
 * differ from it: the service bumps `metadata.version` on every change of an object, in place or not.
 */
interface Written {
  obj: object;
  version: string;
  sim: string;
}

export class Store {
  private readonly root = loadFulfillmentRoot();
  private readonly tables = new Map<Kind, Map<string, Row<Kind>>>(KINDS.map((k) => [k, new Map()]));
  /** Host name → id of the BMI holding it (null = free). */
  hosts: Record<string, string | null> = {};
  boots: BootEvent[] = [];
  createsWithoutSystemTenant = 0;
  private readonly files: StateFiles;
  private readonly written = new Map<Kind, Map<string, Written>>(KINDS.map((k) => [k, new Map()]));
  private writtenHosts: Record<string, string | null> = {};
  private writtenBoots = 0;
  private writtenCreatesWithoutSystemTenant = 0;
  private seq = 0;

  /** `minCompactBytes`: the journal's size before it may be folded into a snapshot (tests make it small). */
  constructor(stateDir: string, minCompactBytes?: number) {
    this.files = new StateFiles(stateDir, minCompactBytes);
  }

  get file(): string {
    return this.files.snapshotFile;
  }

  typeOf(kind: Kind): protobuf.Type {
    return this.root.lookupType(KIND_TYPES[kind]);
  }

  messageType(name: string): protobuf.Type {
    return this.root.lookupType(name);
  }

  /** Normalises any request-shaped object to the decoded form, exactly as a wire round trip would. */
  canonical<K extends Kind>(kind: K, obj: unknown): ObjectsByKind[K] {
    const t = this.typeOf(kind);
    return t.toObject(t.fromObject(obj as Record<string, unknown>), LIVE) as ObjectsByKind[K];
  }

  rows<K extends Kind>(kind: K): Row<K>[] {
    return [...this.table(kind).values()];
  }

  get<K extends Kind>(kind: K, id: string): Row<K> | undefined {
    return this.table(kind).get(id);
  }

  put<K extends Kind>(kind: K, row: Row<K>): void {
    this.table(kind).set(row.obj.id, row);
  }

  remove(kind: Kind, id: string): void {
    this.table(kind).delete(id);
  }

  /**
   * Reads the state a previous run left behind; returns the kinds it holds no table for (all of them
   * without a snapshot), which the caller seeds and then writes with snapshot().
   */
  load(): Kind[] {
    const { snapshot, entries } = this.files.read();
    if (!snapshot) return KINDS;
    for (const kind of KINDS) {
      for (const r of snapshot.rows[kind] ?? []) this.put(kind, { obj: this.canonical(kind, r.obj), sim: r.sim as RowSim });
    }
    this.hosts = snapshot.hosts;
    this.boots = snapshot.boots as BootEvent[];
    this.createsWithoutSystemTenant = snapshot.createsWithoutSystemTenant;
    this.seq = snapshot.seq ?? 0;
    for (const e of entries) this.replay(e);
    this.markWritten();
    return KINDS.filter((k) => !snapshot.rows[k]);
  }

  /** Puts what changed since the last commit on disk; the journal is folded into a snapshot when it has grown. */
  save(): void {
    const entry = this.changes();
    if (!entry) return;
    if (this.files.append(entry)) this.snapshot();
  }

  /** Writes everything as a new snapshot and empties the journal. */
  snapshot(): void {
    const rows: SnapshotFile["rows"] = {};
    for (const kind of KINDS) rows[kind] = this.rows(kind).map((r) => ({ obj: this.persisted(kind, r.obj), sim: r.sim }));
    this.files.writeSnapshot({
      format: 1, seq: this.seq, rows, hosts: this.hosts, boots: this.boots, createsWithoutSystemTenant: this.createsWithoutSystemTenant,
    });
    this.markWritten();
  }

  close(): void {
    this.files.close();
  }

  /** What changed since the last write, as the next journal entry; undefined when nothing did. */
  private changes(): JournalEntry | undefined {
    const rows: PersistedRow[] = [];
    const removed: { kind: string; id: string }[] = [];
    for (const kind of KINDS) {
      const written = this.written.get(kind)!;
      for (const r of this.rows(kind)) {
        const now = writtenOf(r);
        const was = written.get(r.obj.id);
        if (was && was.obj === now.obj && was.version === now.version && was.sim === now.sim) continue;
        rows.push({ kind, obj: this.persisted(kind, r.obj), sim: r.sim });
        written.set(r.obj.id, now);
      }
      for (const id of written.keys()) {
        if (this.get(kind, id)) continue;
        removed.push({ kind, id });
        written.delete(id);
      }
    }
    const hosts = Object.fromEntries(Object.entries(this.hosts).filter(([h, v]) => this.writtenHosts[h] !== v));
    const boots = this.boots.slice(this.writtenBoots);
    const counter = this.createsWithoutSystemTenant !== this.writtenCreatesWithoutSystemTenant;
    if (!rows.length && !removed.length && !Object.keys(hosts).length && !boots.length && !counter) return undefined;
    Object.assign(this.writtenHosts, hosts);
    this.writtenBoots = this.boots.length;
    this.writtenCreatesWithoutSystemTenant = this.createsWithoutSystemTenant;
    return {
      seq: ++this.seq,
      ...(rows.length ? { rows } : {}), ...(removed.length ? { removed } : {}), ...(Object.keys(hosts).length ? { hosts } : {}),
      ...(boots.length ? { boots } : {}), ...(counter ? { createsWithoutSystemTenant: this.createsWithoutSystemTenant } : {}),
    };
  }

  private replay(e: JournalEntry): void {
    for (const r of e.rows ?? []) this.put(r.kind as Kind, { obj: this.canonical(r.kind as Kind, r.obj), sim: r.sim as RowSim });
    for (const r of e.removed ?? []) this.remove(r.kind as Kind, r.id);
    Object.assign(this.hosts, e.hosts ?? {});
    this.boots.push(...((e.boots ?? []) as BootEvent[]));
    if (e.createsWithoutSystemTenant !== undefined) this.createsWithoutSystemTenant = e.createsWithoutSystemTenant;
    this.seq = e.seq;
  }

  /** Everything held now is what the disk holds. */
  private markWritten(): void {
    for (const kind of KINDS) this.written.set(kind, new Map(this.rows(kind).map((r) => [r.obj.id, writtenOf(r)])));
    this.writtenHosts = { ...this.hosts };
    this.writtenBoots = this.boots.length;
    this.writtenCreatesWithoutSystemTenant = this.createsWithoutSystemTenant;
  }

  private persisted(kind: Kind, obj: unknown): unknown {
    const t = this.typeOf(kind);
    return t.toObject(t.fromObject(obj as Record<string, unknown>), PERSISTED);
  }

  private table<K extends Kind>(kind: K): Map<string, Row<K>> {
    return this.tables.get(kind) as unknown as Map<string, Row<K>>;
  }
}

function writtenOf(r: Row<Kind>): Written {
  return { obj: r.obj, version: String(r.obj.metadata?.version ?? ""), sim: JSON.stringify(r.sim) };
}
