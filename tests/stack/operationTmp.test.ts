// Each pulumi operation's private TMPDIR (stack/operationTmp.ts): private, gone when the operation ends
// however it ends, and a dead process's directories removed by the next instance.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { OperationTmp } from "../../stack/operationTmp";

let parent: string;
beforeEach(() => {
  parent = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-optmp-test-"));
});
afterEach(() => fs.rmSync(parent, { recursive: true, force: true }));

test("an operation gets its own 0700 directory, removed with what was written there, on success and on failure", async () => {
  const tmp = new OperationTmp(parent);
  const seen: string[] = [];
  await tmp.around(async (dir) => {
    seen.push(dir);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    fs.writeFileSync(path.join(dir, "kubeconfig123"), "token");
  });
  await expect(tmp.around(async (dir) => {
    seen.push(dir);
    fs.mkdirSync(path.join(dir, "pulumi-node-pipes1"));
    throw new Error("update failed");
  })).rejects.toThrow("update failed");
  expect(new Set(seen).size).toBe(2);
  for (const dir of seen) expect(fs.existsSync(dir)).toBe(false);
  tmp.close();
  expect(fs.readdirSync(parent)).toEqual([]);
});

test("operations at once each have their own directory; close() removes what running ones hold", async () => {
  const tmp = new OperationTmp(parent);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let heldDir = "";
  const running = tmp.around(async (dir) => {
    heldDir = dir;
    await held;
  });
  await tmp.around(async (dir) => expect(dir).not.toBe(heldDir));
  expect(fs.existsSync(heldDir)).toBe(true);
  tmp.close();
  expect(fs.existsSync(heldDir)).toBe(false);
  release();
  await running;
});

test("a new instance removes the directories of processes that are gone, and of this pid's earlier life, not a live one's", async () => {
  const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
  const deadDir = path.join(parent, `bmw-pulumi-${dead}-0badc0de`);
  const reusedPid = path.join(parent, `bmw-pulumi-${process.pid}-feedface`); // a killed reconciler that had this pid
  const liveOther = path.join(parent, `bmw-pulumi-${process.ppid}-00c0ffee`);
  const unrelated = path.join(parent, "bmw-pulumi-notours");
  for (const d of [deadDir, reusedPid, liveOther, unrelated]) fs.mkdirSync(path.join(d, "op-1"), { recursive: true });
  const first = new OperationTmp(parent);
  await first.around(async () => undefined);
  const firstRoot = fs.readdirSync(parent).find((n) => n.startsWith(`bmw-pulumi-${process.pid}-`) && n !== path.basename(reusedPid));
  expect(fs.existsSync(deadDir)).toBe(false);
  expect(fs.existsSync(reusedPid)).toBe(false);
  expect(fs.existsSync(liveOther)).toBe(true);
  expect(fs.existsSync(unrelated)).toBe(true);
  // A second instance in the same process leaves the first one's directory alone.
  new OperationTmp(parent).close();
  expect(firstRoot && fs.existsSync(path.join(parent, firstRoot))).toBe(true);
  first.close();
});
