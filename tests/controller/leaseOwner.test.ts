// Failover on the real engine (issue 15, finding 6): a leader's `pulumi up` records which leader it ran
// for; when that leader loses the Lease its running update is stopped (SIGINT, then the tree is killed),
// leaving a lock as a crash would; the next leader, on another host, clears that lock at once because
// its holder no longer holds the Lease, resolves the pending create, and its up adopts instead of
// duplicating. While the holder's Lease is live the lock is kept.
import * as fs from "node:fs";
import * as path from "node:path";
import { NotLeaderError } from "../../lib/notLeader";
import { lockHolderDir, readLocks } from "../../stack/locks";
import { FileStateStore } from "../../stack/stateStore";
import { Slots } from "../../controller/slots";
import type { OrderRef } from "../../io/observe";
import { StackManager } from "../../stack/stacks";
import { eventually } from "../support/eventually";
import { FIXTURE_PROJECT, RECORD_TYPE, resourcesOfType, stackSandbox } from "./support";

const ORDER = { namespace: "ns3", name: "order3" };
const KEY = "ns3/order3";

describe("stack lock of a leader that lost the Lease", () => {
  const sb = stackSandbox();
  afterAll(() => sb.cleanup());

  it("records the holder, is stopped on losing the Lease, and its lock is recovered by the next leader at once", async () => {
    let oldLeaderGone = false;
    sb.manager.setLeaseOwner({ identity: "reconciler-old", isHolderGone: () => false, isLeading: () => true });
    sb.setDesired(KEY, [{ name: "a", content: "a1" }]);
    await sb.manager.up(ORDER, { message: "first" });
    expect(fs.readdirSync(lockHolderDir(sb.stateDir))).toEqual([]); // records go when their process ends cleanly

    sb.setDesired(KEY, [{ name: "a", content: "a1" }, { name: "b", content: "b1", sleepMs: 30_000 }]);
    const running = sb.manager.up(ORDER, { message: "add b" }).then(() => "finished", (e: unknown) => e);
    await eventually(async () => (fs.existsSync(path.join(sb.orderDir(KEY), "b.json")) ? true : undefined), 60_000, 50);
    const [lock] = await readLocks(new FileStateStore(sb.stateDir), sb.manager.projectName, "ns3--order3");
    expect(lock.holder).toBe("reconciler-old");

    // the next leader runs on another host (its own pod); same state volume
    const next = new StackManager({
      programDir: FIXTURE_PROJECT, workDir: sb.workDir, stateDir: sb.stateDir, passphraseFile: path.join(sb.tmp, "passphrase"),
      envVars: Object.fromEntries(Object.entries(sb.manager.pulumiEnvironment()).filter(([k]) => k.startsWith("BMW_"))),
    });
    const policy = { hostname: "reconciler-new-host", isHolderGone: (h: string) => h === "reconciler-old" && oldLeaderGone };
    expect((await next.recover(ORDER, policy)).locks?.held).toHaveLength(1); // its Lease is live: kept

    // the old leader steps down: its update is stopped well within the time before anyone can take over
    const t0 = Date.now();
    sb.manager.abortRunning(500);
    expect(await running).toBeInstanceOf(Error);
    expect(Date.now() - t0).toBeLessThan(10_000);
    const [left] = await readLocks(new FileStateStore(sb.stateDir), sb.manager.projectName, "ns3--order3");
    expect(left?.holder).toBe("reconciler-old"); // killed mid-step: lock and record stay, as after a crash

    oldLeaderGone = true;
    const report = await next.recover(ORDER, policy);
    expect(report.locks?.cleared.map((a) => a.reason)).toEqual([expect.stringMatching(/ran for leader reconciler-old, which no longer holds the Lease$/)]);
    expect(report.pendingCleared.map((p) => p.type)).toEqual(["creating"]);
    sb.setDesired(KEY, [{ name: "a", content: "a1" }, { name: "b", content: "b1" }]);
    await next.up(ORDER, { message: "after failover" });
    expect(resourcesOfType((await next.exportStack(ORDER)).deployment, RECORD_TYPE).map((r) => r.id).sort()).toEqual(["a", "b"]);
    expect(sb.ops(KEY)).toEqual(["create a", "create b", "adopt b"]); // adopted, not created twice
    expect(fs.readdirSync(lockHolderDir(sb.stateDir))).toEqual([]);
  }, 240_000);

  it("refuses recovery, up and destroy unless leading when the pulumi process would start: an update queued for a slot runs nothing after the loss", async () => {
    let leading = true;
    sb.manager.setLeaseOwner({ identity: "reconciler-x", isHolderGone: () => false, isLeading: () => leading });
    const running = { namespace: "ns4", name: "order4" };
    const queuedRef = { namespace: "ns5", name: "order5" };
    sb.setDesired("ns4/order4", [{ name: "a", content: "a1", sleepMs: 30_000 }]);
    sb.setDesired("ns5/order5", [{ name: "c", content: "c1" }]);
    // as App.runner does: recovery and update in one pulumi slot
    const slots = new Slots(1);
    const inSlot = (ref: OrderRef) => slots.run(async () => {
      await sb.manager.recover(ref);
      return sb.manager.up(ref, { message: "update" });
    }).then(() => "finished", (e: unknown) => e);
    const first = inSlot(running);
    const queued = inSlot(queuedRef);
    await eventually(async () => (fs.existsSync(path.join(sb.orderDir("ns4/order4"), "a.json")) ? true : undefined), 60_000, 50);
    expect(slots.waiting).toBe(1);

    leading = false; // the elector's renew deadline passed: it steps down and stops what runs
    sb.manager.abortRunning(500);
    const stopped = await first;
    expect(stopped).toBeInstanceOf(NotLeaderError);
    expect((stopped as Error).message).toBe("not the leader: up of stack ns4--order4 stopped, leadership was lost meanwhile");
    const refused = await queued;
    expect(refused).toBeInstanceOf(NotLeaderError);
    expect((refused as Error).message).toMatch(/^not the leader: (recovery|up) of stack ns5--order5 refused/);
    expect(sb.ops("ns5/order5")).toEqual([]);
    await expect(sb.manager.destroy(running)).rejects.toBeInstanceOf(NotLeaderError);
    await expect(sb.manager.recover(running)).rejects.toBeInstanceOf(NotLeaderError);
    // no holder record but the killed update's (its lock stays with it, as after a crash)
    const records = fs.readdirSync(lockHolderDir(sb.stateDir)).map((f) => JSON.parse(fs.readFileSync(path.join(lockHolderDir(sb.stateDir), f), "utf8")) as { stack: string });
    expect(records.map((r) => r.stack)).toEqual(["ns4--order4"]);

    // leading again: our own dead process's lock is recovered and the update completes
    leading = true;
    sb.setDesired("ns4/order4", [{ name: "a", content: "a1" }]);
    await sb.manager.recover(running);
    await sb.manager.up(running, { message: "again" });
    expect(fs.readdirSync(lockHolderDir(sb.stateDir))).toEqual([]);
  }, 240_000);
});
