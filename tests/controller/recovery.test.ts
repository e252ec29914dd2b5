// kill -9 of a real `pulumi up` in the middle of a create: the lock it leaves is found and, while
// the process lives, kept; once it is dead the lock is cleared, the pending create is resolved, and
// the next up adopts the record the killed run made instead of creating a duplicate.
import * as fs from "node:fs";
import * as path from "node:path";
import { assessLock, clearStaleLocks, pendingOperationsOf, readLocks } from "../../stack/locks";
import { FileStateStore } from "../../stack/stateStore";
import { eventually } from "../support/eventually";
import { alive } from "../../lab/processes";
import { RECORD_TYPE, resourcesOfType, stackSandbox } from "./support";

const ORDER = { namespace: "ns2", name: "order2" };
const KEY = "ns2/order2";

/** pid's descendants (from /proc), so the whole runner tree can be killed like a crashed pod. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const d of fs.readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(d)]);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number) => (children.get(p) ?? []).forEach((c) => {
    out.push(c);
    walk(c);
  });
  walk(pid);
  return out;
}

describe("recovery after a runner is killed during an up", () => {
  const sb = stackSandbox();
  afterAll(() => sb.cleanup());

  it("keeps a live lock, clears it after kill -9, resolves the pending create and never duplicates", async () => {
    sb.setDesired(KEY, [{ name: "a", content: "a1" }]);
    expect((await sb.manager.up(ORDER, { message: "first" })).summary).toBe("succeeded");

    // b's create makes the record, then hangs: the kill lands after the real object exists but
    // before Pulumi learns its id, the case that duplicates resources when handled naively
    sb.setDesired(KEY, [{ name: "a", content: "a1" }, { name: "b", content: "b1", sleepMs: 8_000 }]);
    const running = sb.manager.up(ORDER, { message: "add b" }).then(() => "finished", (e: unknown) => e);
    const bFile = path.join(sb.orderDir(KEY), "b.json");
    await eventually(async () => (fs.existsSync(bFile) ? true : undefined), 60_000, 50);

    const [held] = await readLocks(new FileStateStore(sb.stateDir), sb.manager.projectName, "ns2--order2");
    expect(held).toBeDefined();
    expect(assessLock(held)).toMatchObject({ stale: false });
    // sweeping while the up runs keeps its lock: its owner is alive
    const sweep = await clearStaleLocks(new FileStateStore(sb.stateDir), sb.manager.projectName, "ns2--order2");
    expect(sweep.cleared).toEqual([]);
    expect(sweep.held.map((a) => a.lock.pid)).toEqual([held.pid]);
    expect(fs.existsSync(path.join(sb.stateDir, held.key))).toBe(true);

    // kill -9 the pulumi CLI and its plugins (language host, dynamic provider), as a crash would
    const tree = [held.pid, ...descendants(held.pid)];
    expect(tree.length).toBeGreaterThan(1);
    for (const pid of tree) process.kill(pid, "SIGKILL");
    await eventually(async () => (alive(held.pid) ? undefined : true), 10_000, 20);
    const outcome = await running;
    expect(outcome).toBeInstanceOf(Error);
    expect(fs.existsSync(path.join(sb.stateDir, held.key))).toBe(true); // the dead run's lock is left behind

    const state = await sb.manager.exportStack(ORDER);
    const pending = pendingOperationsOf(state.deployment);
    expect(pending.map((p) => `${p.type} ${p.urn.split("::").pop()}`)).toEqual(["creating b"]);
    expect(resourcesOfType(state.deployment, RECORD_TYPE).map((r) => r.id)).toEqual(["a"]);

    const report = await sb.manager.recover(ORDER);
    expect(report.locks?.held).toEqual([]);
    expect(report.locks?.cleared.map((a) => a.reason)).toEqual([expect.stringMatching(/is no longer running$/)]);
    expect(report.pendingCleared.map((p) => p.type)).toEqual(["creating"]);
    expect(fs.existsSync(path.join(sb.stateDir, held.key))).toBe(false);
    expect(pendingOperationsOf((await sb.manager.exportStack(ORDER)).deployment)).toEqual([]);

    sb.setDesired(KEY, [{ name: "a", content: "a1" }, { name: "b", content: "b1" }]);
    const after = await sb.manager.up(ORDER, { message: "add b again" });
    expect(after.summary).toBe("succeeded");
    expect(after.changes.create).toBe(1);
    expect(sb.ops(KEY)).toEqual(["create a", "create b", "adopt b"]);
    expect(resourcesOfType((await sb.manager.exportStack(ORDER)).deployment, RECORD_TYPE).map((r) => r.id).sort()).toEqual(["a", "b"]);
  });

  it("an attribute sidecar left empty by a kill (fileblob writes it in place) fails every load until recovery removes it", async () => {
    const ref = { namespace: "ns2", name: "order4" };
    sb.setDesired("ns2/order4", [{ name: "e", content: "e1" }]);
    expect((await sb.manager.up(ref, { message: "first" })).summary).toBe("succeeded");
    // What a kill -9 between fileblob's create of `<stack>.json.attrs` and its write leaves (seen in the kill suite).
    const stacksDir = path.join(sb.stateDir, ".pulumi", "stacks", sb.manager.projectName);
    const attrs = path.join(stacksDir, "ns2--order4.json.attrs");
    expect(fs.existsSync(attrs)).toBe(true);
    fs.writeFileSync(attrs, "");
    const broken = await sb.manager.exportStack(ref).then(() => undefined, (e: unknown) => String(e));
    expect(broken).toMatch(/failed to load checkpoint: EOF/);

    const report = await sb.manager.recover(ref);
    expect(report.attrsRemoved).toEqual([attrs]);
    expect(fs.existsSync(path.join(stacksDir, "ns2--order4.json"))).toBe(true); // the checkpoint is never touched
    expect(resourcesOfType((await sb.manager.exportStack(ref)).deployment, RECORD_TYPE).map((r) => r.id)).toEqual(["e"]);
    sb.setDesired("ns2/order4", [{ name: "e", content: "e1" }, { name: "f", content: "f1" }]);
    const after = await sb.manager.up(ref, { message: "after the repair" });
    expect(after.summary).toBe("succeeded");
    expect(after.changes.create).toBe(1);
    // A readable sidecar is kept.
    expect(fs.existsSync(attrs)).toBe(true);
    expect((await sb.manager.recover(ref)).attrsRemoved ?? []).toEqual([]);
  });

  it("aborting an up (SIGINT) lets the in-flight create finish, records it and unlocks", async () => {
    const other = { namespace: "ns2", name: "order3" };
    sb.setDesired("ns2/order3", [{ name: "c", content: "c1", sleepMs: 2_000 }, { name: "d", content: "d1", sleepMs: 2_000 }]);
    const controller = new AbortController();
    const running = sb.manager.up(other, { message: "abort me", signal: controller.signal }).then(() => "finished", (e: unknown) => e);
    await eventually(async () => (sb.ops("ns2/order3").length > 0 ? true : undefined), 60_000, 50);
    controller.abort();
    await running;
    expect(await readLocks(new FileStateStore(sb.stateDir), sb.manager.projectName, "ns2--order3")).toEqual([]);
    const state = await sb.manager.exportStack(other);
    expect(pendingOperationsOf(state.deployment)).toEqual([]);
    // whatever was created is in the state: the next up creates nothing twice
    const created = sb.ops("ns2/order3").filter((l) => l.startsWith("create")).map((l) => l.slice(7)).sort();
    expect(resourcesOfType(state.deployment, RECORD_TYPE).map((r) => r.id).sort()).toEqual(created);
    sb.setDesired("ns2/order3", [{ name: "c", content: "c1" }, { name: "d", content: "d1" }]);
    expect((await sb.manager.up(other, { message: "after abort" })).summary).toBe("succeeded");
    expect(sb.ops("ns2/order3").filter((l) => l.startsWith("create")).sort()).toEqual(["create c", "create d"]);
  });
});
