// Bounded state on the file backend (issue 15, finding 7): after N + k operations only the newest N history
// entries of a stack remain, numbered as before (rollback to a retained one works, to a pruned one is refused
// with the reason), no checkpoint backup copies are kept, and bmw_state_bytes reports the state's size.
// The first part runs on synthetic history files; the second on the real engine and the fixture project.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseDesired } from "../../controller/app";
import { ReconcilerMetrics } from "../../controller/metrics";
import { missingUpdateMessage } from "../../stack/history";
import { historyDir, prunedCount, pruneStackState, StateSize, stackStateBytes } from "../../stack/stateRetention";
import { FileStateStore } from "../../stack/stateStore";
import { stackSandbox } from "../controller/support";

const PROJECT = "proj";
const STACK = "ns--order";

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => fs.statSync(path.join(dir, f)).isFile());
}

function bytesUnder(dir: string): number {
  return filesUnder(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
}

/** What Pulumi's DIY backend writes for one operation of a stack (addToHistory, backupStack, backupTarget). */
function writeOperation(stateDir: string, stamp: bigint, stack = STACK): void {
  // the file bucket writes an .attrs sidecar beside every object
  const put = (file: string, content: string) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    fs.writeFileSync(`${file}.attrs`, '{"user.content_type":"application/octet-stream"}');
  };
  const h = historyDir(stateDir, PROJECT, stack);
  put(path.join(h, `${stack}-${stamp}.history.json`), JSON.stringify({ kind: "update", result: "succeeded" }));
  put(path.join(h, `${stack}-${stamp}.checkpoint.json`), JSON.stringify({ version: 3, checkpoint: { stamp: String(stamp) } }));
  const checkpoint = path.join(stateDir, ".pulumi", "stacks", PROJECT, `${stack}.json`);
  if (fs.existsSync(checkpoint)) put(`${checkpoint}.bak`, fs.readFileSync(checkpoint, "utf8"));
  put(checkpoint, JSON.stringify({ checkpoint: String(stamp) }));
  put(path.join(stateDir, ".pulumi", "backups", PROJECT, stack, `${stack}.${stamp}.json`), "{}");
}

describe("pruneStackState on a DIY layout", () => {
  let stateDir = "";
  beforeEach(() => {
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-retention-"));
  });
  afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

  it("keeps the newest N history entries of N + k, counts the pruned ones, and leaves no backup copies", async () => {
    const base = 1_780_000_000_000_000_000n;
    for (let i = 0; i < 8; i++) {
      writeOperation(stateDir, base + BigInt(i) * 1_000_000_000n);
      await pruneStackState(new FileStateStore(stateDir), PROJECT, STACK, 5);
    }
    writeOperation(stateDir, base + 100n, "ns--neighbour"); // another stack is not touched
    const h = historyDir(stateDir, PROJECT, STACK);
    const stamps = (suffix: string) => fs.readdirSync(h).filter((f) => f.endsWith(suffix)).map((f) => BigInt(/-(\d+)\./.exec(f)![1])).sort();
    expect(stamps(".history.json")).toEqual([3, 4, 5, 6, 7].map((i) => base + BigInt(i) * 1_000_000_000n));
    for (const suffix of [".history.json.attrs", ".checkpoint.json", ".checkpoint.json.attrs"]) expect(stamps(suffix)).toEqual(stamps(".history.json"));
    expect(await prunedCount(new FileStateStore(stateDir), PROJECT, STACK)).toBe(3);
    expect(filesUnder(path.join(stateDir, ".pulumi", "backups", PROJECT, STACK))).toEqual([]);
    expect(filesUnder(path.join(stateDir, ".pulumi", "stacks")).filter((f) => f.includes(".bak") && f.includes(STACK))).toEqual([]);
    expect(filesUnder(historyDir(stateDir, PROJECT, "ns--neighbour"))).toHaveLength(4);
    // pruning again changes nothing
    expect(await pruneStackState(new FileStateStore(stateDir), PROJECT, STACK, 5)).toEqual({ removed: 0, kept: 5, pruned: 3 });
  });

  it("refuses a retention below one", async () => {
    await expect(pruneStackState(new FileStateStore(stateDir), PROJECT, STACK, 0)).rejects.toThrow(/positive integer/);
  });

  it("StateSize walks the directory once, then follows each changed stack without a full walk", async () => {
    let t = 0;
    const size = new StateSize(new FileStateStore(stateDir), PROJECT, 60_000, () => t);
    writeOperation(stateDir, 1n);
    writeOperation(stateDir, 1n, "ns--other");
    expect(await size.bytes()).toBe(bytesUnder(stateDir));
    writeOperation(stateDir, 2n);
    await size.stackChanged(STACK);
    expect(await size.bytes()).toBe(bytesUnder(stateDir));
    expect((await stackStateBytes(new FileStateStore(stateDir), PROJECT, STACK)) + (await stackStateBytes(new FileStateStore(stateDir), PROJECT, "ns--other"))).toBe(bytesUnder(stateDir));
    // another process's writes show at the next full walk
    fs.writeFileSync(path.join(stateDir, "elsewhere"), "x".repeat(1000));
    expect(await size.bytes()).toBe(bytesUnder(stateDir) - 1000);
    t += 60_000;
    expect(await size.bytes()).toBe(bytesUnder(stateDir));
  });

  it("a stack changed while the full walk runs is counted once: the total stays exact wherever the change lands", async () => {
    // The change lands after 0, 8, 16, ... turns of the event loop into the walk, until the walk ends before
    // it: before, inside and after the walk's measure of that stack.
    let walkEndedFirst = false;
    for (let turns = 0; !walkEndedFirst; turns += 8) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-size-race-"));
      try {
        let t = 0;
        const size = new StateSize(new FileStateStore(dir), PROJECT, 60_000, () => t);
        for (let i = 0; i < 6; i++) writeOperation(dir, 1n, `ns--s${i}`);
        await size.bytes();
        t += 60_000;
        let walkDone = false;
        const walk = size.bytes().finally(() => (walkDone = true));
        for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
        walkEndedFirst = walkDone;
        writeOperation(dir, 2n, "ns--s3");
        fs.appendFileSync(path.join(historyDir(dir, PROJECT, "ns--s3"), "ns--s3-2.history.json"), "x".repeat(5000));
        const changed = size.stackChanged("ns--s3");
        await Promise.all([walk, changed]);
        expect({ turns, bytes: await size.bytes() }).toEqual({ turns, bytes: bytesUnder(dir) });
        writeOperation(dir, 3n, "ns--s3");
        await size.stackChanged("ns--s3");
        expect({ turns, bytes: await size.bytes() }).toEqual({ turns, bytes: bytesUnder(dir) });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it("rollback's refusal says whether an update was pruned or never existed", () => {
    const entries = [12, 11, 10].map((number) => ({ number }) as Parameters<typeof missingUpdateMessage>[1][number]);
    expect(missingUpdateMessage(4, entries)).toBe("update 4 was pruned: the stack keeps its last 3 updates (10..12; BMW_HISTORY_RETENTION)");
    expect(missingUpdateMessage(13, entries)).toBe("update 13 does not exist (the stack has updates 10..12)");
    expect(missingUpdateMessage(0, entries)).toMatch(/does not exist/);
    expect(missingUpdateMessage(1, [])).toBe("update 1 does not exist (the stack has updates none)");
  });
});

describe("history retention on the real engine", () => {
  const KEEP = 3;
  const sb = stackSandbox({ historyRetention: KEEP });
  const ORDER = { namespace: "ns1", name: "retained" };
  afterAll(() => sb.cleanup());

  it("after N + k updates only N history entries remain, numbered as before, with no backup copies; the metric reports the size", async () => {
    const total = KEEP + 3;
    for (let i = 1; i <= total; i++) {
      sb.setDesired("ns1/retained", [{ name: "a", content: `v${i}` }]);
      await sb.manager.up(ORDER, { message: `desired compute=${i}; update ${i}` });
    }
    const h = await sb.manager.history(ORDER);
    expect(h.map((e) => e.number)).toEqual([6, 5, 4]);
    expect(h.map((e) => e.message)).toEqual(["desired compute=6; update 6", "desired compute=5; update 5", "desired compute=4; update 4"]);
    const dir = historyDir(sb.stateDir, sb.manager.projectName, "ns1--retained");
    // each with the bucket's .attrs sidecar
    expect(fs.readdirSync(dir).filter((f) => f.includes(".history.json"))).toHaveLength(2 * KEEP);
    expect(fs.readdirSync(dir).filter((f) => f.includes(".checkpoint.json"))).toHaveLength(2 * KEEP);
    expect(filesUnder(path.join(sb.stateDir, ".pulumi", "backups"))).toEqual([]);
    expect(filesUnder(sb.stateDir).filter((f) => /\.bak\b/.test(f))).toEqual([]);
    expect(missingUpdateMessage(2, h)).toMatch(/^update 2 was pruned/);
    // rollback reads the desired set of a retained update by its number
    expect(parseDesired(h.find((e) => e.number === 5)!.message)).toEqual({ compute: 5 });

    // one more update: numbering continues where it was
    sb.setDesired("ns1/retained", [{ name: "a", content: "v7" }]);
    await sb.manager.up(ORDER, { message: "desired compute=7; update 7" });
    expect((await sb.manager.history(ORDER)).map((e) => e.number)).toEqual([7, 6, 5]);

    const metrics = new ReconcilerMetrics({ defaultMetrics: false, stateBytes: () => sb.manager.stateBytes() });
    const line = (await metrics.render()).split("\n").find((l) => l.startsWith("bmw_state_bytes "));
    const reported = Number(line?.split(" ")[1]);
    expect(reported).toBeGreaterThan(0);
    // measured while nothing runs: the gauge is the directory's size
    expect(reported).toBe(bytesUnder(sb.stateDir));
  }, 240_000);
});
