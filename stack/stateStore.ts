// The blobs of a Pulumi DIY backend, read and written beside the CLI: lock records, holder records, the
// history the retention prunes. Two backends keep blobs the same way, by key (`.pulumi/stacks/<project>/
// <stack>.json`, `.pulumi/locks/...`): the file backend as files under its directory, the postgres://
// backend (pkg/backend/diy/postgres of the CLI) as rows `(key, data JSON {"data": base64}, updated_at)` of
// one table, each key prefixed by the URL's path. Other backends (s3://, ...) have no store here: what needs
// one (lock recovery, retention) is skipped for them, as before.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Pool } from "pg";

export interface StateStore {
  /** Where the blobs are, for messages (never a password). */
  readonly location: string;
  /** Whether the blob exists. */
  exists(key: string): Promise<boolean>;
  /** The blob, or undefined when there is none. */
  read(key: string): Promise<Buffer | undefined>;
  /** Writes the blob whole (readers see the old or the new one, never a part). */
  write(key: string, data: string | Buffer): Promise<void>;
  remove(key: string): Promise<void>;
  /** Removes every blob under `dir` (a key prefix ending in `/`). */
  removeUnder(dir: string): Promise<void>;
  /** The blobs directly under `dir` (not in its subdirectories), by name, with their sizes. */
  list(dir: string): Promise<{ name: string; bytes: number }[]>;
  /** The names directly under `dir`: its blobs and its subdirectories. */
  children(dir: string): Promise<string[]>;
  /** Bytes of the blobs under `dir` ("" for the whole backend), leaving out those under the `skip` dirs. */
  bytesUnder(dir: string, skip?: readonly string[]): Promise<number>;
  close(): Promise<void>;
}

const asDir = (dir: string) => (dir === "" || dir.endsWith("/") ? dir : `${dir}/`);

export class FileStateStore implements StateStore {
  readonly location: string;
  constructor(readonly stateDir: string) {
    this.location = stateDir;
  }

  private file(key: string): string {
    return path.join(this.stateDir, ...key.split("/"));
  }

  async exists(key: string): Promise<boolean> {
    return fs.existsSync(this.file(key));
  }

  async read(key: string): Promise<Buffer | undefined> {
    try {
      return await fs.promises.readFile(this.file(key));
    } catch {
      return undefined;
    }
  }

  async write(key: string, data: string | Buffer): Promise<void> {
    const file = this.file(key);
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await fs.promises.writeFile(tmp, data);
    await fs.promises.rename(tmp, file);
  }

  async remove(key: string): Promise<void> {
    await fs.promises.rm(this.file(key), { force: true });
  }

  async removeUnder(dir: string): Promise<void> {
    await fs.promises.rm(this.file(asDir(dir).slice(0, -1)), { recursive: true, force: true });
  }

  async list(dir: string): Promise<{ name: string; bytes: number }[]> {
    const d = this.file(asDir(dir).slice(0, -1));
    const out: { name: string; bytes: number }[] = [];
    for (const name of await this.children(dir)) {
      const st = await fs.promises.lstat(path.join(d, name)).catch(() => undefined);
      if (st?.isFile()) out.push({ name, bytes: st.size });
    }
    return out;
  }

  async children(dir: string): Promise<string[]> {
    return fs.promises.readdir(this.file(asDir(dir).slice(0, -1))).catch(() => []);
  }

  async bytesUnder(dir: string, skip: readonly string[] = []): Promise<number> {
    const at = (d: string) => (d === "" ? this.stateDir : this.file(asDir(d).slice(0, -1)));
    return bytesOfTree(at(dir), new Set(skip.map(at)));
  }

  async close(): Promise<void> {}
}

async function bytesOfTree(p: string, skip: ReadonlySet<string>): Promise<number> {
  if (skip.has(p)) return 0;
  let st: fs.Stats;
  try {
    st = await fs.promises.lstat(p);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.size;
  let total = 0;
  for (const e of await fs.promises.readdir(p).catch(() => [] as string[])) total += await bytesOfTree(path.join(p, e), skip);
  return total;
}

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;
/** A LIKE pattern matching keys that start with `prefix` (`\` is LIKE's default escape). */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The postgres:// backend's table, read and written as the CLI does (its bucket.go). */
export class PostgresStateStore implements StateStore {
  readonly location: string;
  private readonly table: string;
  /** The URL's path: the CLI prefixes every key with it (a PrefixedBucket). */
  private readonly prefix: string;
  private readonly connectionString: string;
  private pool?: Pool;

  constructor(backendUrl: string) {
    const u = new URL(backendUrl);
    const table = u.searchParams.get("table") ?? "pulumi_state";
    if (!TABLE_NAME.test(table)) throw new Error(`the backend URL names a table that is not a plain identifier: ${JSON.stringify(table)}`);
    this.table = table;
    const sub = decodeURIComponent(u.pathname).replace(/^\/+/, "");
    this.prefix = sub === "" ? "" : asDir(sub);
    u.searchParams.delete("table");
    this.connectionString = u.toString();
    this.location = `postgres://${u.host}${u.pathname} (table ${table})`;
  }

  private async db(): Promise<Pool> {
    if (!this.pool) {
      const { Pool } = await import("pg");
      this.pool = new Pool({ connectionString: this.connectionString, max: 2, idleTimeoutMillis: 30_000, connectionTimeoutMillis: 10_000 });
      // An idle client's error (the server restarted) must not end the process; the next query reconnects.
      this.pool.on("error", () => undefined);
    }
    return this.pool;
  }

  /** The table may not exist yet: the CLI creates it on first use. */
  private async query<R extends object>(sql: string, args: unknown[]): Promise<R[]> {
    try {
      return (await (await this.db()).query<R>(sql, args)).rows;
    } catch (err) {
      if ((err as { code?: string }).code === "42P01") return []; // undefined_table
      throw err;
    }
  }

  async exists(key: string): Promise<boolean> {
    return (await this.query(`SELECT 1 FROM ${this.table} WHERE key = $1`, [this.prefix + key])).length > 0;
  }

  async read(key: string): Promise<Buffer | undefined> {
    const rows = await this.query<{ data: unknown }>(`SELECT data FROM ${this.table} WHERE key = $1`, [this.prefix + key]);
    if (rows.length === 0) return undefined;
    const doc = typeof rows[0].data === "string" ? JSON.parse(rows[0].data) as unknown : rows[0].data;
    const b64 = doc && typeof doc === "object" && "data" in doc && typeof doc.data === "string" ? doc.data : undefined;
    return b64 === undefined ? undefined : Buffer.from(b64, "base64");
  }

  async write(key: string, data: string | Buffer): Promise<void> {
    const doc = JSON.stringify({ data: Buffer.from(data).toString("base64") });
    await (await this.db()).query(
      `INSERT INTO ${this.table} (key, data) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET data = $2, updated_at = now()`,
      [this.prefix + key, doc]);
  }

  async remove(key: string): Promise<void> {
    await this.query(`DELETE FROM ${this.table} WHERE key = $1`, [this.prefix + key]);
  }

  async removeUnder(dir: string): Promise<void> {
    await this.query(`DELETE FROM ${this.table} WHERE key LIKE $1`, [likePrefix(this.prefix + asDir(dir))]);
  }

  async list(dir: string): Promise<{ name: string; bytes: number }[]> {
    const under = this.prefix + asDir(dir);
    const rows = await this.query<{ key: string; bytes: number }>(
      `SELECT key, octet_length(data::text) AS bytes FROM ${this.table} WHERE key LIKE $1 ORDER BY key`, [likePrefix(under)]);
    return rows.map((r) => ({ name: r.key.slice(under.length), bytes: Number(r.bytes) })).filter((b) => b.name !== "" && !b.name.includes("/"));
  }

  async children(dir: string): Promise<string[]> {
    const under = this.prefix + asDir(dir);
    const rows = await this.query<{ key: string }>(`SELECT key FROM ${this.table} WHERE key LIKE $1`, [likePrefix(under)]);
    return [...new Set(rows.map((r) => r.key.slice(under.length).split("/")[0]).filter((n) => n !== ""))];
  }

  async bytesUnder(dir: string, skip: readonly string[] = []): Promise<number> {
    const patterns = [dir, ...skip].map((d) => likePrefix(this.prefix + asDir(d)));
    const without = skip.map((_, i) => ` AND key NOT LIKE $${i + 2}`).join("");
    const rows = await this.query<{ bytes: string | null }>(
      `SELECT sum(octet_length(data::text)) AS bytes FROM ${this.table} WHERE key LIKE $1${without}`, patterns);
    return Number(rows[0]?.bytes ?? 0);
  }

  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.end();
  }
}

/** The state directory of a file:// backend URL, or undefined for any other backend. */
export function stateDirOf(backendUrl: string): string | undefined {
  if (!backendUrl.startsWith("file://")) return undefined;
  const rest = backendUrl.slice("file://".length).split("?")[0];
  if (rest.startsWith("~")) return path.join(os.homedir(), rest.slice(1));
  return path.resolve(rest);
}

/** The store of a backend URL: file:// and postgres:// have one; any other backend has none. */
export function stateStoreOf(backendUrl: string): StateStore | undefined {
  const dir = stateDirOf(backendUrl);
  if (dir) return new FileStateStore(dir);
  if (backendUrl.startsWith("postgres://")) return new PostgresStateStore(backendUrl);
  return undefined;
}
