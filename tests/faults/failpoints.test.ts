// The failpoint mechanism itself (no Kubernetes): parsing, hit counting shared between processes, and
// a firing failpoint killing the whole reconciler tree, including a child in a process group of its own
// (as pulumi starts its plugins).
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { countHit, failpoint, firedMarker, parseFailpoints, processTree } from "../../lib/failpoints";
import { PROJECT_ROOT } from "../../stack/toolchain";
import { eventually } from "../support/eventually";
import { processState } from "./support";

const alive = (pid: number) => !["Z", "?"].includes(processState(pid));

/** Starts `root` (a `node -e` script) detached, as the reconciler is, armed with `point`; resolves when it exits. */
function startArmed(root: string, point: string, fpDir: string): Promise<void> {
  const child: ChildProcess = spawn(process.execPath, ["-e", root], {
    cwd: PROJECT_ROOT, detached: true, stdio: "ignore",
    env: { ...process.env, BMW_FAILPOINTS: point, BMW_FAILPOINT_DIR: fpDir },
  });
  return new Promise<void>((r) => child.on("exit", () => r()));
}

describe("failpoints", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-fp-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("parses names and hit numbers, ignoring malformed entries", () => {
    expect(parseFailpoints("a.b, c@3,bad@x,,d@0")).toEqual([{ name: "a.b", hit: 1 }, { name: "c", hit: 3 }, { name: "d", hit: 1 }]);
    expect(parseFailpoints(undefined)).toEqual([]);
  });

  it("does nothing when not armed, or armed for another point or a later hit", () => {
    failpoint("x.y", {});
    failpoint("x.y", { BMW_FAILPOINTS: "other", BMW_FAILPOINT_DIR: dir });
    failpoint("x.y", { BMW_FAILPOINTS: "x.y@3", BMW_FAILPOINT_DIR: dir });
    failpoint("x.y", { BMW_FAILPOINTS: "x.y@3", BMW_FAILPOINT_DIR: dir });
    expect(fs.existsSync(firedMarker(dir, "x.y"))).toBe(false);
    expect(countHit(dir, "x.y")).toBe(3); // the two armed hits were counted
  });

  it("counts hits atomically across processes", async () => {
    const script = `const { countHit } = require(${JSON.stringify(path.join(PROJECT_ROOT, "lib", "failpoints.ts"))});
      const out = []; for (let i = 0; i < 20; i++) out.push(countHit(${JSON.stringify(dir)}, "shared")); console.log(JSON.stringify(out));`;
    const run = () => new Promise<number[]>((resolve, reject) => {
      const c = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], { cwd: PROJECT_ROOT });
      let out = "";
      c.stdout.on("data", (d: Buffer) => (out += d.toString()));
      c.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`exit ${code}`))));
    });
    const all = (await Promise.all([run(), run(), run()])).flat().sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
  });

  it("kills the reconciler's process group and every descendant, even one in a group of its own", async () => {
    const fpDir = path.join(dir, "tree");
    const pidsFile = path.join(dir, "pids.json");
    const fp = JSON.stringify(path.join(PROJECT_ROOT, "lib", "failpoints.ts"));
    // root (group leader) → plugin (own group, like pulumi's plugins) → the failpoint fires in the plugin.
    const go = path.join(dir, "tree-go");
    const plugin = `setInterval(() => { if (require("node:fs").existsSync(${JSON.stringify(go)})) require(${fp}).failpoint("p.q"); }, 50);`;
    const root = `const { spawn } = require("node:child_process");
      process.env.BMW_FAILPOINT_PGID = String(process.pid);
      const c = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", ${JSON.stringify(plugin)}], { detached: true, stdio: "ignore" });
      const s = spawn("sleep", ["60"], { stdio: "ignore" });
      require("node:fs").writeFileSync(${JSON.stringify(pidsFile)}, JSON.stringify([process.pid, c.pid, s.pid]));
      setInterval(() => {}, 1000);`;
    const exited = startArmed(root, "p.q", fpDir);
    const pids = await eventually(async () => (fs.existsSync(pidsFile) ? (JSON.parse(fs.readFileSync(pidsFile, "utf8")) as number[]) : undefined), 20_000, 50);
    expect(pids.every(alive)).toBe(true);
    fs.writeFileSync(go, "");
    await exited;
    await eventually(async () => (pids.every((p) => !alive(p)) ? true : undefined), 10_000, 50);
    expect(fs.existsSync(firedMarker(fpDir, "p.q"))).toBe(true);
  }, 30_000);

  // The two cases that left a provider host running in CI: the failpoint fires in a process of the
  // reconciler's own group (killing the group first would kill the firing process before the others), and
  // a process whose parent already exited, so it is no longer in the reconciler's tree.
  it("kills a detached process and an orphan re-parented out of the tree when the failpoint fires inside the group", async () => {
    const fpDir = path.join(dir, "orphan");
    const pidsFile = path.join(dir, "orphan-pids.json");
    const fp = JSON.stringify(path.join(PROJECT_ROOT, "lib", "failpoints.ts"));
    const go = path.join(dir, "orphan-go");
    // fires once the test has seen the tree it expects, not on a timer a loaded machine can outrun.
    const inGroup = `setInterval(() => { if (require("node:fs").existsSync(${JSON.stringify(go)})) require(${fp}).failpoint("g.h"); }, 50);`;
    // middle starts a detached sleeper and exits at once: the sleeper is re-parented away from root.
    const middle = `const c = require("node:child_process").spawn("sleep", ["60"], { detached: true, stdio: "ignore" });
      require("node:fs").writeFileSync(${JSON.stringify(pidsFile + ".orphan")}, String(c.pid)); c.unref(); process.exit(0);`;
    const root = `const { spawn } = require("node:child_process");
      process.env.BMW_FAILPOINT_PGID = String(process.pid);
      const g = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", ${JSON.stringify(inGroup)}], { stdio: "ignore" });
      const d = spawn("sleep", ["60"], { detached: true, stdio: "ignore" });
      spawn(process.execPath, ["-e", ${JSON.stringify(middle)}], { stdio: "ignore" });
      require("node:fs").writeFileSync(${JSON.stringify(pidsFile)}, JSON.stringify([process.pid, g.pid, d.pid]));
      setInterval(() => {}, 1000);`;
    const exited = startArmed(root, "g.h", fpDir);
    const pids = await eventually(async () => {
      if (!fs.existsSync(pidsFile) || !fs.existsSync(pidsFile + ".orphan")) return undefined;
      return [...(JSON.parse(fs.readFileSync(pidsFile, "utf8")) as number[]), Number(fs.readFileSync(pidsFile + ".orphan", "utf8"))];
    }, 20_000, 50);
    expect(pids.every(alive)).toBe(true);
    const orphan = pids[3];
    // middle writes the orphan's pid before it exits: wait for the re-parenting before the failpoint fires.
    await eventually(async () => (processTree(pids[0]).includes(orphan) ? undefined : true), 10_000, 20);
    expect(processTree(pids[0])).not.toContain(orphan);
    fs.writeFileSync(go, "");
    await exited;
    await eventually(async () => (pids.every((p) => !alive(p)) ? true : undefined), 10_000, 50);
    expect(fs.existsSync(firedMarker(fpDir, "g.h"))).toBe(true);
  }, 30_000);
});
