// A private TMPDIR for each pulumi operation, removed when the operation ends. The engine's processes
// leave files there that nobody removes: the kubernetes provider writes a full copy of its kubeconfig
// (credentials included) at every Configure, that is once per update, and the Node language host leaves
// its pipes behind when it is killed. In a long-running reconciler they would pile up in /tmp.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const PREFIX = "bmw-pulumi-";
/** `<prefix><pid>-<token>`: the directory of one instance in one process. */
const INSTANCE_DIR = new RegExp(`^${PREFIX}(\\d+)-([0-9a-f]+)$`);
/** Tokens of the instances of this process: a directory of this pid with another token is a dead process's. */
const live = new Set<string>();

export class OperationTmp {
  private readonly root: string;
  private seq = 0;

  constructor(parent = os.tmpdir()) {
    const token = crypto.randomBytes(4).toString("hex");
    live.add(token);
    sweepStale(parent);
    this.root = path.join(parent, `${PREFIX}${process.pid}-${token}`);
  }

  /** Runs `fn` with a fresh 0700 directory for the operation's TMPDIR; the directory goes when `fn` settles. */
  async around<T>(fn: (tmpDir: string) => Promise<T>): Promise<T> {
    fs.mkdirSync(this.root, { recursive: true, mode: 0o700 });
    const dir = path.join(this.root, `op-${++this.seq}`);
    fs.mkdirSync(dir, { mode: 0o700 });
    try {
      return await fn(dir);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Removes what is left (only operations still running can have left something). */
  close(): void {
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/** Removes the operation directories of processes that are gone (a reconciler killed in an update leaves its own). */
function sweepStale(parent: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const m = INSTANCE_DIR.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    const stale = pid === process.pid ? !live.has(m[2]) : !alive(pid);
    if (stale) fs.rmSync(path.join(parent, name), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // alive, but another user's
  }
}
