// The real Pulumi engine (our CLI build) drives a Node dynamic provider through the Automation API on a
// file backend: up, preview, refresh (with drift made outside Pulumi), destroy and history; a secret
// input is stored encrypted.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runTsJson } from "../support/run";

const DRIVER = "tests/fixtures/dynamic-stack.ts";

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.join(d.parentPath, d.name));
}

describe("Automation API with a dynamic resource on the file backend", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-smoke-"));
  const workDir = path.join(tmp, "work");
  const backend = path.join(tmp, "state");
  const target = path.join(tmp, "resource.json");
  const secret = `pull-secret-${Date.now()}-do-not-leak`;
  fs.mkdirSync(workDir);
  fs.mkdirSync(backend);
  const run = <T>(op: string, content: string) => runTsJson<T>(DRIVER, [op, workDir, backend, target, content, secret]);

  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("up creates the resource and keeps the secret encrypted in state", async () => {
    const r = await run<{ summary: string; changes: Record<string, number>; outputs: { content: string } }>("up", "v1");
    expect(r.summary).toBe("succeeded");
    expect(r.changes.create).toBe(2); // the stack and the dynamic resource
    expect(r.outputs.content).toBe("v1");
    expect(JSON.parse(fs.readFileSync(target, "utf8"))).toEqual({ content: "v1", secretValue: secret });

    const stateFiles = filesUnder(path.join(backend, ".pulumi"));
    expect(stateFiles.some((f) => f.endsWith(path.join("stacks", "bmw-smoke", "smoke.json")))).toBe(true);
    for (const f of stateFiles) expect(fs.readFileSync(f, "utf8")).not.toContain(secret);
    const checkpoint = fs.readFileSync(stateFiles.find((f) => f.endsWith("smoke.json"))!, "utf8");
    expect(checkpoint).toContain("ciphertext");
  });

  it("preview shows an update without applying it", async () => {
    const r = await run<{ changes: Record<string, number> }>("preview", "v2");
    expect(r.changes.update).toBe(1);
    expect(JSON.parse(fs.readFileSync(target, "utf8")).content).toBe("v1");
  });

  it("refresh reads the real resource, records drift, and the next preview wants to correct it", async () => {
    fs.writeFileSync(target, JSON.stringify({ content: "changed-outside", secretValue: secret }));
    const r = await run<{ summary: string }>("refresh", "v1");
    expect(r.summary).toBe("succeeded");
    const stateText = fs.readFileSync(path.join(backend, ".pulumi", "stacks", "bmw-smoke", "smoke.json"), "utf8");
    expect(stateText).toContain("changed-outside");
    expect(stateText).not.toContain(secret);
    // desired content is still v1: the engine now sees a difference and plans an update
    const p = await run<{ changes: Record<string, number> }>("preview", "v1");
    expect(p.changes.update).toBe(1);
  });

  it("destroy deletes the real resource", async () => {
    const r = await run<{ summary: string; changes: Record<string, number> }>("destroy", "v1");
    expect(r.summary).toBe("succeeded");
    expect(r.changes.delete).toBe(2);
    expect(fs.existsSync(target)).toBe(false);
  });

  it("history lists every update, newest first", async () => {
    const r = await run<{ history: Array<{ kind: string; result: string; message: string }> }>("history", "v1");
    expect(r.history.map((h) => h.kind)).toEqual(["destroy", "refresh", "update"]);
    expect(r.history.every((h) => h.result === "succeeded")).toBe(true);
    expect(r.history[2].message).toBe("smoke up");
    for (const f of filesUnder(path.join(backend, ".pulumi"))) expect(fs.readFileSync(f, "utf8")).not.toContain(secret);
  });
});
