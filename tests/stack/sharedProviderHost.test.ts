// One dynamic-provider host for all of a stack manager's updates (stack/sharedProviderHost.ts), with the real
// CLI and the fixture project: the engines of concurrent updates attach to it, a stack moves between
// per-update hosts and the shared one without a change, a host that dies is replaced, and a host ends with
// the process that started it.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { NODE_HEAP_FLAGS } from "../../lib/nodeHeapFlags";
import { SharedProviderHost } from "../../stack/sharedProviderHost";
import { StackManager } from "../../stack/stacks";
import { PROJECT_ROOT } from "../../stack/toolchain";
import { FIXTURE_PROJECT, stackSandbox } from "../controller/support";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until<T>(what: string, f: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a shared dynamic-provider host", () => {
  const sb = stackSandbox({ sharedProviderHost: true });
  const perUpdate = new StackManager({ programDir: FIXTURE_PROJECT, workDir: sb.workDir, stateDir: sb.stateDir,
    passphraseFile: path.join(sb.tmp, "passphrase"), envVars: { BMW_FIXTURE_WORLD: sb.world, BMW_FIXTURE_DESIRED: path.join(sb.tmp, "desired.json") } });
  afterAll(() => {
    sb.manager.close();
    sb.cleanup();
  });
  const hosts = (order: string) => {
    const f = path.join(sb.orderDir(order), "hosts.log");
    return fs.existsSync(f) ? fs.readFileSync(f, "utf8").trim().split("\n").map(Number) : [];
  };
  const A = { namespace: "ns", name: "a" };
  const B = { namespace: "ns", name: "b" };

  it("serves the updates of two stacks at once, and outlives them", async () => {
    expect(sb.manager.providerHost?.pid).toBeUndefined(); // started by the first update that needs it
    sb.setDesired("ns/a", [{ name: "a1", content: "x", sleepMs: 500 }, { name: "a2", content: "x", sleepMs: 500 }]);
    sb.setDesired("ns/b", [{ name: "b1", content: "x", sleepMs: 500 }]);
    const [ra, rb] = await Promise.all([sb.manager.up(A), sb.manager.up(B)]);
    expect([ra.summary, rb.summary]).toEqual(["succeeded", "succeeded"]);
    expect([ra.changes.create, rb.changes.create]).toEqual([3, 2]);
    const pid = sb.manager.providerHost?.pid!;
    expect(pid).toBeGreaterThan(0);
    expect([...hosts("ns/a"), ...hosts("ns/b")]).toEqual([pid, pid, pid]);
    expect(alive(pid)).toBe(true);
    expect(sb.ops("ns/a").sort()).toEqual(["create a1", "create a2"]);
  });

  it("takes over a stack that per-update hosts made, and hands it back, without a change", async () => {
    const C = { namespace: "ns", name: "c" };
    sb.setDesired("ns/c", [{ name: "c1", content: "x" }, { name: "c2", content: "x" }]);
    const made = await perUpdate.up(C);
    expect(made.changes.create).toBe(3);
    const [own] = hosts("ns/c");
    expect(own).not.toBe(sb.manager.providerHost?.pid);
    expect((await sb.manager.preview(C)).changeSummary).toEqual({ same: 3 });
    expect((await sb.manager.up(C)).changes).toMatchObject({ create: 0, update: 0, delete: 0, replace: 0, same: 3 });
    sb.setDesired("ns/c", [{ name: "c1", content: "x" }, { name: "c2", content: "x" }, { name: "c3", content: "x" }]);
    expect((await sb.manager.up(C)).changes).toMatchObject({ create: 1, update: 0, delete: 0, replace: 0 });
    expect(hosts("ns/c").slice(-1)).toEqual([sb.manager.providerHost?.pid]);
    expect((await perUpdate.up(C)).changes).toMatchObject({ create: 0, update: 0, delete: 0, replace: 0, same: 4 });
    expect(sb.ops("ns/c").sort()).toEqual(["create c1", "create c2", "create c3"]);
  });

  it("is started again by the next update after it died", async () => {
    const before = sb.manager.providerHost?.pid!;
    process.kill(before, "SIGKILL");
    await until("the host's exit to be noticed", () => (sb.manager.providerHost?.pid === undefined ? true : undefined));
    sb.setDesired("ns/a", [{ name: "a1", content: "x" }, { name: "a2", content: "x" }, { name: "a3", content: "x" }]);
    const r = await sb.manager.up(A);
    expect(r.changes.create).toBe(1);
    const after = sb.manager.providerHost?.pid!;
    expect(after).not.toBe(before);
    expect(hosts("ns/a").slice(-1)).toEqual([after]);
  });

  it("after a failed start, leaves updates to their own hosts until the retry time, then tries again", async () => {
    const starts = path.join(sb.tmp, "starts.log");
    const script = path.join(sb.tmp, "broken-host.js");
    fs.writeFileSync(script, `require("node:fs").appendFileSync(${JSON.stringify(starts)}, "start\\n"); process.exit(3);\n`);
    const logged: string[] = [];
    const host = new SharedProviderHost({ script, cwd: sb.tmp, env: async () => ({ PATH: process.env.PATH ?? "" }), retryAfterMs: 1_500,
      log: (m) => logged.push(m) });
    const count = () => fs.readFileSync(starts, "utf8").trim().split("\n").length;
    expect(await host.attachEnv()).toEqual({});
    expect(await host.attachEnv()).toEqual({}); // within the retry time: no second start
    expect(count()).toBe(1);
    expect(logged.some((m) => /did not start.*exited \(code 3\) before it listened/.test(m))).toBe(true);
    await new Promise((r) => setTimeout(r, 1_600));
    expect(await host.attachEnv()).toEqual({});
    expect(count()).toBe(2);
    host.close();
  });

  it("ends when the process that started it ends (its stdin closes), shared or per update, and on close()", async () => {
    const host = spawn(process.execPath, [path.join(PROJECT_ROOT, "providers", "hostLaunch.js"), "127.0.0.1:0"], {
      env: { ...process.env, BMW_SHARED_PROVIDER_HOST: "1" }, stdio: ["pipe", "pipe", "inherit"],
    });
    const port = await new Promise<string>((resolve) => host.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim())));
    expect(Number(port)).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => host.once("exit", (code) => resolve(code)));
    host.stdin!.end(); // what a kill -9 of the reconciler does to the pipe
    expect(await exited).toBe(0);

    // A host the engine starts for one update (no BMW_SHARED_PROVIDER_HOST): the same when its pulumi process
    // is killed; a host started without a pipe (here /dev/null) does not end at once.
    const perUpdate = spawn(process.execPath, [path.join(PROJECT_ROOT, "providers", "hostLaunch.js"), "127.0.0.1:0"], {
      env: { ...process.env, BMW_SHARED_PROVIDER_HOST: "" }, stdio: ["pipe", "pipe", "inherit"],
    });
    expect(Number(await new Promise<string>((resolve) => perUpdate.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim()))))).toBeGreaterThan(0);
    const perUpdateExited = new Promise<number | null>((resolve) => perUpdate.once("exit", (code) => resolve(code)));
    perUpdate.stdin!.end();
    expect(await perUpdateExited).toBe(0);
    const detached = spawn(process.execPath, [path.join(PROJECT_ROOT, "providers", "hostLaunch.js"), "127.0.0.1:0"], {
      env: { ...process.env, BMW_SHARED_PROVIDER_HOST: "" }, stdio: ["ignore", "pipe", "inherit"],
    });
    expect(Number(await new Promise<string>((resolve) => detached.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim()))))).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(detached.exitCode).toBeNull();
    detached.kill();

    const pid = sb.manager.providerHost?.pid!;
    // Bounded as the reconciler's own heap is (lib/nodeHeapFlags.ts): V8 would size it from the machine's memory.
    expect(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")).toEqual(expect.arrayContaining([...NODE_HEAP_FLAGS]));
    sb.manager.close();
    await until("the host to end", () => (alive(pid) ? undefined : true));
  });
});
