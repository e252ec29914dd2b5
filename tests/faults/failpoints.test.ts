// The failpoint mechanism itself (no Kubernetes): parsing, hit counting shared between processes, and
// a firing failpoint killing the whole reconciler tree, including a child in a process group of its own
// (as pulumi starts its plugins).
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { countHit, failpoint, firedMarker, parseFailpoints } from "../../automation/failpoints";
import { PROJECT_ROOT } from "../../automation/toolchain";
import { eventually } from "../support/eventually";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
};

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
    const script = `const { countHit } = require(${JSON.stringify(path.join(PROJECT_ROOT, "automation", "failpoints.ts"))});
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
    const fp = JSON.stringify(path.join(PROJECT_ROOT, "automation", "failpoints.ts"));
    // root (group leader) → plugin (own group, like pulumi's plugins) → the failpoint fires in the plugin.
    const plugin = `setTimeout(() => require(${fp}).failpoint("p.q"), 1500); setInterval(() => {}, 1000);`;
    const root = `const { spawn } = require("node:child_process");
      process.env.BMW_FAILPOINT_PGID = String(process.pid);
      const c = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", ${JSON.stringify(plugin)}], { detached: true, stdio: "ignore" });
      const s = spawn("sleep", ["60"], { stdio: "ignore" });
      require("node:fs").writeFileSync(${JSON.stringify(pidsFile)}, JSON.stringify([process.pid, c.pid, s.pid]));
      setInterval(() => {}, 1000);`;
    const child: ChildProcess = spawn(process.execPath, ["-e", root], {
      cwd: PROJECT_ROOT, detached: true, stdio: "ignore",
      env: { ...process.env, BMW_FAILPOINTS: "p.q", BMW_FAILPOINT_DIR: fpDir },
    });
    const exited = new Promise<void>((r) => child.on("exit", () => r()));
    const pids = await eventually(async () => (fs.existsSync(pidsFile) ? (JSON.parse(fs.readFileSync(pidsFile, "utf8")) as number[]) : undefined), 20_000, 50);
    expect(pids.every(alive)).toBe(true);
    await exited;
    await eventually(async () => (pids.every((p) => !alive(p)) ? true : undefined), 10_000, 50);
    expect(fs.existsSync(firedMarker(fpDir, "p.q"))).toBe(true);
  }, 30_000);
});
