// A PostgreSQL server for the lab and the tests: the Debian package's binaries, a cluster of its own in the
// given directory, listening on loopback only, one database for the Pulumi DIY backend. PostgreSQL refuses
// to run as root, so as root the cluster belongs to the package's `postgres` user (runuser), as the
// Debian tooling would do it, in a directory that user can reach (clusterDir).
import { execFile, execFileSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface PostgresServer {
  /** `postgres://pulumi@127.0.0.1:<port>/pulumi?sslmode=disable`: the DIY backend URL and a `pg` connection string. */
  url: string;
  port: number;
  dataDir: string;
  logFile: string;
  stop(): Promise<void>;
}

export const POSTGRES_USER = "pulumi";
export const POSTGRES_DATABASE = "pulumi";

/** The server binaries: $BMW_POSTGRES_BINDIR, else the newest /usr/lib/postgresql/<version>/bin with initdb. */
export function postgresBinDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BMW_POSTGRES_BINDIR) return env.BMW_POSTGRES_BINDIR;
  const root = "/usr/lib/postgresql";
  const versions = fs.existsSync(root) ? fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => path.join(root, v, "bin")).find((d) => fs.existsSync(path.join(d, "initdb")));
  if (!found) {
    throw new Error("no PostgreSQL server found (looked in /usr/lib/postgresql/*/bin): install the Debian package postgresql " +
      "(apt-get install -y postgresql) or set BMW_POSTGRES_BINDIR");
  }
  return found;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Runs a server binary as the user that may own the cluster (`postgres` when we are root). */
async function asOwner(bin: string, args: string[]): Promise<string> {
  const root = process.getuid?.() === 0;
  const [file, argv] = root ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  const { stdout } = await run(file, argv, { timeout: 120_000 });
  return stdout;
}

const asRoot = () => process.getuid?.() === 0;

/**
 * Where the cluster of `dir` lives: `dir` itself, unless we are root and the `postgres` user cannot reach
 * it (root's home, a 0700 temporary directory); then a directory of its own under /var/tmp, named after
 * `dir`, so every start and stop finds the same one.
 */
export function clusterDir(dir: string): string {
  if (!asRoot()) return dir;
  let parent = path.dirname(path.resolve(dir));
  while (!fs.existsSync(parent)) parent = path.dirname(parent);
  try {
    execFileSync("runuser", ["-u", "postgres", "--", "test", "-x", parent], { stdio: "ignore" });
    return dir;
  } catch {
    return path.join("/var/tmp", `baremetal-workers-postgres-${crypto.createHash("sha256").update(path.resolve(dir)).digest("hex").slice(0, 12)}`);
  }
}

/** As root, the cluster's directory belongs to `postgres`. */
async function handToOwner(dir: string): Promise<void> {
  if (!asRoot()) return;
  const id = async (flag: string) => Number((await run("id", [flag, "postgres"])).stdout.trim());
  fs.chownSync(dir, await id("-u"), await id("-g"));
}

/** The postmaster's PID of a running cluster in `dir` (the first line of postmaster.pid), 0 when none. */
export function postmasterPid(dir: string): number {
  try {
    return Number(fs.readFileSync(path.join(clusterDir(dir), "data", "postmaster.pid"), "utf8").split("\n")[0]) || 0;
  } catch {
    return 0;
  }
}

/** Stops the cluster in `dir` (fast shutdown: sessions end, data is flushed); nothing when it does not run. */
export async function stopPostgres(dir: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!postmasterPid(dir)) return;
  await asOwner(path.join(postgresBinDir(env), "pg_ctl"), ["-D", path.join(clusterDir(dir), "data"), "-m", "fast", "-w", "stop"]);
}

/**
 * Starts (initializing on first use) a cluster in `dir` on a free loopback port and makes sure the
 * backend's database exists. Stop it with `stop()`; the data stays in `dir` for the next start.
 */
export async function startPostgres(labDir: string, opts: { port?: number; env?: NodeJS.ProcessEnv } = {}): Promise<PostgresServer> {
  const bin = postgresBinDir(opts.env);
  const dir = clusterDir(labDir);
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  await handToOwner(dir);
  const dataDir = path.join(dir, "data");
  const logFile = path.join(dir, "server.log");
  if (!fs.existsSync(path.join(dataDir, "PG_VERSION"))) {
    await asOwner(path.join(bin, "initdb"), ["-D", dataDir, "-U", POSTGRES_USER, "--auth=trust", "-E", "UTF8", "--no-locale"]);
  }
  const port = opts.port ?? (await freePort());
  // Loopback TCP only; the socket directory is the cluster's own; fsync off: a lab's data is disposable.
  await asOwner(path.join(bin, "pg_ctl"), ["-D", dataDir, "-l", logFile, "-w", "-t", "60",
    "-o", `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c full_page_writes=off`, "start"]);
  const server = `postgres://${POSTGRES_USER}@127.0.0.1:${port}`;
  const { Client } = await import("pg");
  const admin = new Client({ connectionString: `${server}/postgres?sslmode=disable` });
  await admin.connect();
  try {
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [POSTGRES_DATABASE]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${POSTGRES_DATABASE}`);
  } finally {
    await admin.end();
  }
  return {
    url: `${server}/${POSTGRES_DATABASE}?sslmode=disable`, port, dataDir, logFile,
    stop: () => stopPostgres(labDir, opts.env),
  };
}
