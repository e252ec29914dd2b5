// StackManager against the real Pulumi CLI on a temp file backend, with a small on-disk fixture
// project (tests/fixtures/stack-project) run through the Node.js language host exactly as the
// reconciler runs index.ts: create, up, preview, history beyond one CLI page, export/import, destroy.
import * as fs from "node:fs";
import * as path from "node:path";
import { createPulumiShim } from "../../bench/pulumiShim";
import { StackManager } from "../../stack/stacks";
import { toolchain } from "../../stack/toolchain";
import { FIXTURE_PROJECT, RECORD_TYPE, resourcesOfType, stackSandbox } from "../controller/support";

const ORDER = { namespace: "ns1", name: "order1" };
const KEY = "ns1/order1";

describe("StackManager on a file backend", () => {
  const sb = stackSandbox();
  afterAll(() => sb.cleanup());

  it("refuses environment variables outside the BMW_* allow-list and a missing passphrase", () => {
    expect(() => new StackManager({ programDir: sb.workDir, stateDir: sb.stateDir, passphraseFile: path.join(sb.tmp, "passphrase"),
      envVars: { AWS_SECRET_ACCESS_KEY: "x" } })).toThrow(/only BMW_\* keys.*AWS_SECRET_ACCESS_KEY/);
    expect(() => new StackManager({ stateDir: sb.stateDir, passphraseFile: path.join(sb.tmp, "nope") })).toThrow(/does not exist/);
  });

  it("creates one stack per order, named from namespace and name, with its clusterOrder config", async () => {
    expect(await sb.manager.stackExists(ORDER)).toBe(false);
    expect(await sb.manager.recover(ORDER)).toEqual({ pendingCleared: [] }); // nothing to recover, nothing created
    expect(await sb.manager.stackExists(ORDER)).toBe(false);
    const stack = await sb.manager.ensureStack(ORDER);
    expect(stack.name).toBe("ns1--order1");
    expect(await sb.manager.stackExists(ORDER)).toBe(true);
    expect(await sb.manager.getConfig(ORDER, "clusterOrder")).toBe(KEY);
    // the work dir is a copy of the project pointing at the on-disk program
    expect(fs.readFileSync(path.join(sb.workDir, "Pulumi.yaml"), "utf8")).toMatch(/^main: .*tests\/fixtures\/stack-project$/m);
    expect(fs.readFileSync(path.join(sb.workDir, "Pulumi.ns1--order1.yaml"), "utf8")).toContain("clusterOrder: ns1/order1");
    // Written into the settings file without `pulumi config set`: the CLI reads it back.
    expect((await stack.getConfig("clusterOrder")).value).toBe(KEY);
  });

  it("a fresh process corrects a stack's settings that name another order (read from the file, not the CLI)", async () => {
    const file = path.join(sb.workDir, "Pulumi.ns1--order1.yaml");
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("clusterOrder: ns1/order1", "clusterOrder: ns1/other"));
    const fresh = new StackManager({ programDir: FIXTURE_PROJECT, workDir: sb.workDir, stateDir: sb.stateDir, passphraseFile: path.join(sb.tmp, "passphrase") });
    await fresh.ensureStack(ORDER);
    expect(fs.readFileSync(file, "utf8")).toContain("clusterOrder: ns1/order1");
    const mtime = fs.statSync(file).mtimeMs;
    const again = new StackManager({ programDir: FIXTURE_PROJECT, workDir: sb.workDir, stateDir: sb.stateDir, passphraseFile: path.join(sb.tmp, "passphrase") });
    await again.ensureStack(ORDER);
    expect(fs.statSync(file).mtimeMs).toBe(mtime); // already right: not written again
  });

  /** Fresh managers (each as a new process would be) whose pulumi processes a shim counts, by sub-command. */
  function countedManagers(shimDir: string) {
    const shim = createPulumiShim(toolchain(), path.join(sb.tmp, shimDir));
    const counted = () => new StackManager({ programDir: FIXTURE_PROJECT, workDir: sb.workDir, stateDir: sb.stateDir,
      passphraseFile: path.join(sb.tmp, "passphrase"), toolchain: toolchain({ ...process.env, BMW_CACHE_DIR: shim.cacheDir }) });
    // `pulumi version` runs once per manager (the CLI's version check), not per stack.
    const stackCommands = () => Object.fromEntries(Object.entries(shim.byCommand()).filter(([c]) => c !== "version").map(([c, v]) => [c, v.count]));
    return { counted, stackCommands };
  }

  it("opens a new stack and a stack the backend holds without a pulumi process (the backend laid out already)", async () => {
    const { counted, stackCommands } = countedManagers("shim");
    const ref = { namespace: "ns1", name: "counted" };
    await counted().ensureStack(ref); // written as `stack init` writes it (stack/stackInit.ts)
    expect(stackCommands()).toEqual({});
    const again = await counted().ensureStack(ref); // a fresh process: the checkpoint exists, the settings file is right
    expect(stackCommands()).toEqual({});
    expect((await again.getConfig("clusterOrder")).value).toBe("ns1/counted"); // the unselected stack still answers by name
    await sb.manager.removeStack(ref);
  });

  it("recovers a stack with nothing pending without a pulumi process; a pending create still goes through export and import", async () => {
    const { counted, stackCommands } = countedManagers("shim-recover");
    const ref = { namespace: "ns1", name: "recovered" };
    await counted().ensureStack(ref);
    expect((await counted().recover(ref)).pendingCleared).toEqual([]); // a fresh process: the checkpoint says nothing is pending
    expect(stackCommands()).toEqual({});
    // A pending create in the checkpoint, as a kill leaves it: cleared through pulumi's export and import.
    const file = path.join(sb.stateDir, ".pulumi", "stacks", sb.manager.projectName, "ns1--recovered.json");
    const doc = JSON.parse(fs.readFileSync(file, "utf8")) as { checkpoint: { latest: Record<string, unknown> } };
    doc.checkpoint.latest.pending_operations = [{ resource: { urn: "urn:pulumi:ns1--recovered::p::t::r", type: "t", custom: true }, type: "creating" }];
    fs.writeFileSync(file, JSON.stringify(doc));
    const report = await counted().recover(ref);
    expect(report.pendingCleared.map((o) => o.type)).toEqual(["creating"]);
    expect(stackCommands()).toEqual({ "stack export": 1, "stack import": 1 });
    expect((await counted().recover(ref)).pendingCleared).toEqual([]);
    expect(stackCommands()).toEqual({ "stack export": 1, "stack import": 1 });
    await sb.manager.removeStack(ref);
  });

  it("sees a config value another process set (the pin of a CLI rollback); reads are cached until the settings file changes", async () => {
    // A second manager on the same work dir stands for the CLI process; sb.manager for the running loop.
    const cli = new StackManager({ programDir: FIXTURE_PROJECT, workDir: sb.workDir, stateDir: sb.stateDir, passphraseFile: path.join(sb.tmp, "passphrase") });
    expect(await sb.manager.getConfig(ORDER, "pin")).toBeUndefined();
    await cli.setConfig(ORDER, { pin: { value: JSON.stringify({ compute: 2 }) } });
    expect(await sb.manager.getConfig(ORDER, "pin")).toBe('{"compute":2}');
    expect(await sb.manager.getConfig(ORDER, "pin")).toBe('{"compute":2}'); // unchanged file: from the cache
    await cli.setConfig(ORDER, { pin: { value: "null" } });
    expect(await sb.manager.getConfig(ORDER, "pin")).toBe("null");
  });

  it("reads plain values from the settings file as `pulumi config get` does, and secrets through the CLI", async () => {
    const cli = new StackManager({ programDir: FIXTURE_PROJECT, workDir: sb.workDir, stateDir: sb.stateDir, passphraseFile: path.join(sb.tmp, "passphrase") });
    await cli.setConfig(ORDER, { pin: { value: JSON.stringify({ compute: 3, gpu: 1 }) }, token: { value: "s3cret-value", secret: true } });
    const viaCli = async (key: string) => (await (await cli.ensureStack(ORDER)).getConfig(key)).value;
    expect(await sb.manager.getConfig(ORDER, "pin")).toBe(await viaCli("pin"));
    // The settings file holds the secret encrypted; the value still comes back decrypted.
    expect(fs.readFileSync(path.join(sb.workDir, "Pulumi.ns1--order1.yaml"), "utf8")).not.toContain("s3cret-value");
    expect(await sb.manager.getConfig(ORDER, "token")).toBe("s3cret-value");
    expect(await sb.manager.getConfig(ORDER, "absent")).toBeUndefined();
    await cli.setConfig(ORDER, { pin: { value: "null" } });
  });

  it("up applies the program and stores the one-line message", async () => {
    sb.setDesired(KEY, [{ name: "a", content: "a1" }, { name: "b", content: "b1" }]);
    const chunks: string[] = [];
    const r = await sb.manager.up(ORDER, { message: "scale to 2\nworkers: a, b", onOutput: (c) => chunks.push(c) });
    expect(r.summary).toBe("succeeded");
    expect(r.changes).toEqual({ create: 3, update: 0, delete: 0, replace: 0, same: 0 }); // stack + 2 records
    expect(r.outputs).toEqual({ clusterOrder: KEY, recordCount: 2 });
    expect(r.durationMs).toBeGreaterThan(0);
    expect(chunks.join("")).toContain("create");
    expect(sb.ops(KEY).sort()).toEqual(["create a", "create b"]); // created in parallel
    const [last] = await sb.manager.history(ORDER);
    expect(last.message).toBe("scale to 2 workers: a, b");
  });

  it("preview shows a readable diff and applies nothing", async () => {
    sb.setDesired(KEY, [{ name: "a", content: "a2" }, { name: "b", content: "b1" }]);
    const p = await sb.manager.preview(ORDER);
    expect(p.changeSummary).toEqual({ same: 2, update: 1 });
    expect(p.stdout).toMatch(/~ .*a.*update/);
    expect(p.stdout).toMatch(/content\s*:\s*"a1"\s*=>\s*"a2"/);
    expect(JSON.parse(fs.readFileSync(path.join(sb.orderDir(KEY), "a.json"), "utf8")).content).toBe("a1");
  });

  it("serialises concurrent operations on one stack instead of failing on the Pulumi lock", async () => {
    const [r1, r2] = await Promise.all([
      sb.manager.up(ORDER, { message: "concurrent 1" }),
      sb.manager.up(ORDER, { message: "concurrent 2" }),
    ]);
    expect([r1.summary, r2.summary]).toEqual(["succeeded", "succeeded"]);
    expect(r1.changes.update + r2.changes.update).toBe(1);
  });

  it("history returns every update (more than one CLI page), numbered 1..n from the oldest", async () => {
    // refreshes are cheap updates (the program does not run); mix in ups so kinds and messages vary
    for (let i = 0; i < 8; i++) await sb.manager.refresh(ORDER, { message: `refresh ${i}` });
    sb.setDesired(KEY, [{ name: "a", content: "a3" }, { name: "b", content: "b1" }]);
    await sb.manager.up(ORDER, { message: "content a3" });
    const h = await sb.manager.history(ORDER);
    expect(h.length).toBe(12); // 3 ups before, 8 refreshes, 1 up
    expect(h.map((e) => e.number)).toEqual(Array.from({ length: 12 }, (_, i) => 12 - i));
    expect(h[0]).toMatchObject({ number: 12, kind: "update", result: "succeeded", message: "content a3" });
    expect(h[11]).toMatchObject({ number: 1, kind: "update", message: "scale to 2 workers: a, b" });
    expect(h.filter((e) => e.kind === "refresh").map((e) => e.message)).toEqual(
      Array.from({ length: 8 }, (_, i) => `refresh ${7 - i}`));
    expect(h[0].config["bmw-stack-fixture:clusterOrder"]).toEqual({ value: KEY, secret: false });
    expect(h[0].resourceChanges).toMatchObject({ update: 1, same: 2 });
  });

  it("export and import restore an earlier state", async () => {
    const before = await sb.manager.exportStack(ORDER);
    expect(resourcesOfType(before.deployment, RECORD_TYPE).map((r) => r.id).sort()).toEqual(["a", "b"]);
    sb.setDesired(KEY, [{ name: "a", content: "a3" }]);
    const down = await sb.manager.up(ORDER, { message: "scale to 1" });
    expect(down.changes.delete).toBe(1);
    expect(resourcesOfType((await sb.manager.exportStack(ORDER)).deployment, RECORD_TYPE).map((r) => r.id)).toEqual(["a"]);

    await sb.manager.importStack(ORDER, before);
    expect(resourcesOfType((await sb.manager.exportStack(ORDER)).deployment, RECORD_TYPE).map((r) => r.id).sort()).toEqual(["a", "b"]);
    // The restored state believes b exists, but a preview refreshes first (as `up --refresh` does): b is
    // gone, so there is nothing to delete.
    const p = await sb.manager.preview(ORDER);
    expect(p.changeSummary).toEqual({ same: 2 });
    const steps = p.steps.map((s) => `${s.op} ${s.urn.slice(s.urn.lastIndexOf("::") + 2)}`);
    expect(steps).toEqual(expect.arrayContaining(["refresh a", "refresh b", "same a"]));
    expect(steps.filter((s) => / b$/.test(s))).toEqual(["refresh b"]);
    expect(p.outputs).toEqual({ clusterOrder: KEY, recordCount: 1 });
  });

  it("destroy deletes every resource, then removeStack removes the stack and its config", async () => {
    const r = await sb.manager.destroy(ORDER, { message: "order deleted" });
    expect(r.summary).toBe("succeeded");
    expect(r.changes.delete).toBe(3); // a, the re-imported b, the stack
    expect(fs.readdirSync(sb.orderDir(KEY)).filter((f) => f.endsWith(".json"))).toEqual([]);
    expect((await sb.manager.history(ORDER))[0]).toMatchObject({ kind: "destroy", message: "order deleted" });
    await sb.manager.removeStack(ORDER);
    expect(await sb.manager.stackExists(ORDER)).toBe(false);
    expect(fs.existsSync(path.join(sb.workDir, "Pulumi.ns1--order1.yaml"))).toBe(false);
  });
});
