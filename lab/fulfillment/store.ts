// The simulator's database: live rows per resource kind (soft-deleted rows included until they are
// archived), host allocations, boot history and counters. Every mutation is written to
// <stateDir>/state.json through a temp file + rename, so a restart (or a crash) loses nothing.
import * as fs from "node:fs";
import * as path from "node:path";
import type * as protobuf from "protobufjs";
import { loadFulfillmentRoot } from "../../protos/fulfillment";
import type {
  BareMetalInstanceCatalogItemOut, BareMetalInstanceOut, BareMetalInstanceTemplateOut, BareMetalInstanceTypeOut, ClusterOut,
  ClusterVersionOut, DiskImageOut, HostTypeOut,
} from "../../clients/fulfillment/types";
import type { BootEvent } from "./labProtos";

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

interface StateFile {
  format: 1;
  rows: { [K in Kind]?: { obj: unknown; sim: RowSim }[] };
  hosts: Record<string, string | null>;
  boots: BootEvent[];
  createsWithoutSystemTenant: number;
}

export class Store {
  private readonly root = loadFulfillmentRoot();
  private readonly tables = new Map<Kind, Map<string, Row<Kind>>>(KINDS.map((k) => [k, new Map()]));
  /** Host name → id of the BMI holding it (null = free). */
  hosts: Record<string, string | null> = {};
  boots: BootEvent[] = [];
  createsWithoutSystemTenant = 0;

  constructor(private readonly stateDir: string) {}

  get file(): string {
    return path.join(this.stateDir, "state.json");
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
   * without a state file), which the caller seeds.
   */
  load(): Kind[] {
    if (!fs.existsSync(this.file)) return KINDS;
    const state = JSON.parse(fs.readFileSync(this.file, "utf8")) as StateFile;
    for (const kind of KINDS) {
      for (const r of state.rows[kind] ?? []) this.put(kind, { obj: this.canonical(kind, r.obj), sim: r.sim });
    }
    this.hosts = state.hosts;
    this.boots = state.boots;
    this.createsWithoutSystemTenant = state.createsWithoutSystemTenant;
    return KINDS.filter((k) => !state.rows[k]);
  }

  save(): void {
    const rows: StateFile["rows"] = {};
    for (const kind of KINDS) {
      const t = this.typeOf(kind);
      rows[kind] = this.rows(kind).map((r) => ({ obj: t.toObject(t.fromObject(r.obj), PERSISTED), sim: r.sim }));
    }
    const state: StateFile = {
      format: 1, rows, hosts: this.hosts, boots: this.boots, createsWithoutSystemTenant: this.createsWithoutSystemTenant,
    };
    fs.mkdirSync(this.stateDir, { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    const fd = fs.openSync(tmp, "w");
    try {
      fs.writeSync(fd, JSON.stringify(state, null, 1));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.file);
  }

  private table<K extends Kind>(kind: K): Map<string, Row<K>> {
    return this.tables.get(kind) as unknown as Map<string, Row<K>>;
  }
}
