// New stacks written without `pulumi stack init` (stack/stackInit.ts), checked against the real CLI on a
// file backend: the stack it writes is one the CLI lists, updates, encrypts secrets for and guards with
// the passphrase; its checkpoint has the shape of one the CLI makes; and whatever it cannot mirror is left
// to the CLI.
import * as fs from "node:fs";
import * as path from "node:path";
import * as crypto from "node:crypto";
import * as yaml from "js-yaml";
import { createPulumiShim } from "../../bench/pulumiShim";
import { StackManager } from "../../stack/stacks";
import { toolchain } from "../../stack/toolchain";
import { FIXTURE_PROJECT, RECORD_TYPE, resourcesOfType, stackSandbox } from "../controller/support";

/** The passphrase provider's check as the CLI makes it: the word "pulumi" decrypts with the key of the salt. */
function saltOpens(state: string, passphrase: string): boolean {
  const [v1, salt, v1b, nonce, sealed] = state.split(":");
  if (v1 !== "v1" || v1b !== "v1") return false;
  const key = crypto.pbkdf2Sync(passphrase, Buffer.from(salt, "base64"), 1_000_000, 32, "sha256");
  const body = Buffer.from(sealed, "base64");
  const d = crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(nonce, "base64"));
  d.setAuthTag(body.subarray(body.length - 16));
  try {
    return Buffer.concat([d.update(body.subarray(0, body.length - 16)), d.final()]).toString("utf8") === "pulumi";
  } catch {
    return false;
  }
}

interface Checkpoint {
  version: number;
  checkpoint: { stack: string; latest: { manifest: { time: string; magic: string; version: string }; secrets_providers: { type: string; state: { salt: string } } } };
}

describe("a new stack without `pulumi stack init`", () => {
  const sb = stackSandbox();
  afterAll(() => sb.cleanup());
  const passphrase = fs.readFileSync(path.join(sb.tmp, "passphrase"), "utf8").trim();
  const shim = createPulumiShim(toolchain(), path.join(sb.tmp, "shim"));
  const manager = (passphraseFile = path.join(sb.tmp, "passphrase")) => new StackManager({
    programDir: FIXTURE_PROJECT, workDir: sb.workDir, stateDir: sb.stateDir, passphraseFile,
    envVars: { BMW_FIXTURE_WORLD: sb.world, BMW_FIXTURE_DESIRED: path.join(sb.tmp, "desired.json") },
    toolchain: toolchain({ ...process.env, BMW_CACHE_DIR: shim.cacheDir }),
  });
  const inits = () => shim.byCommand()["stack init"]?.count ?? 0;
  const settings = (stack: string) => yaml.load(fs.readFileSync(path.join(sb.workDir, `Pulumi.${stack}.yaml`), "utf8")) as Record<string, unknown>;
  const checkpoint = (stack: string) =>
    JSON.parse(fs.readFileSync(path.join(sb.stateDir, ".pulumi", "stacks", sb.manager.projectName, `${stack}.json`), "utf8")) as Checkpoint;

  it("leaves a backend without its meta.yaml to the CLI, then writes the next stacks itself with one salt per process", async () => {
    const m = manager();
    await m.ensureStack({ namespace: "ns", name: "first" }); // a fresh backend: the CLI lays it out (meta.yaml)
    expect(inits()).toBe(1);
    await m.ensureStack({ namespace: "ns", name: "second" });
    await m.ensureStack({ namespace: "ns", name: "third" });
    expect(inits()).toBe(1);
    const [a, b] = [settings("ns--second"), settings("ns--third")];
    expect(a).toEqual({ encryptionsalt: expect.stringMatching(/^v1:[A-Za-z0-9+/=]+:v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/), config: { [`${m.projectName}:clusterOrder`]: "ns/second" } });
    expect(b.encryptionsalt).toBe(a.encryptionsalt);
    expect(saltOpens(a.encryptionsalt as string, passphrase)).toBe(true);
    expect(saltOpens(settings("ns--first").encryptionsalt as string, passphrase)).toBe(true); // the CLI's salt passes the same check
    // Another process mints its own salt.
    await manager().ensureStack({ namespace: "ns", name: "fourth" });
    expect(settings("ns--fourth").encryptionsalt).not.toBe(a.encryptionsalt);
    expect(inits()).toBe(1);
  });

  it("writes the checkpoint the CLI writes: the same fields, version and provider, with its own salt", () => {
    const cli = checkpoint("ns--first");
    const ours = checkpoint("ns--second");
    const shape = (c: Checkpoint) => JSON.stringify(c, (k, v: unknown) => (["time", "salt"].includes(k) ? typeof v : v))
      .replace(/ns--(first|second)/, "ns--X");
    expect(shape(ours)).toBe(shape(cli));
    expect(ours.checkpoint.latest.secrets_providers.state.salt).toBe(settings("ns--second").encryptionsalt);
    expect(Date.parse(ours.checkpoint.latest.manifest.time)).toBeGreaterThan(Date.now() - 600_000);
  });

  it("is a stack the CLI lists, updates and keeps secrets for", async () => {
    const m = manager();
    const ref = { namespace: "ns", name: "second" };
    const desired = { "ns/second": { records: [{ name: "r", content: "one" }] } };
    fs.writeFileSync(path.join(sb.tmp, "desired.json"), JSON.stringify(desired));
    expect((await (await m.ensureStack(ref)).workspace.listStacks()).map((s) => s.name)).toEqual(
      expect.arrayContaining(["ns--first", "ns--second", "ns--third", "ns--fourth"]));
    await m.setConfig(ref, { token: { value: "s3cret-token", secret: true } });
    expect(fs.readFileSync(path.join(sb.workDir, "Pulumi.ns--second.yaml"), "utf8")).not.toContain("s3cret-token");
    expect(await m.getConfig(ref, "token")).toBe("s3cret-token");
    const r = await m.up(ref, { message: "first update" });
    expect(r.summary).toBe("succeeded");
    expect(r.changes.create).toBe(2); // the stack and one record
    const state = await m.exportStack(ref);
    expect(resourcesOfType(state.deployment, RECORD_TYPE).map((x) => x.id)).toEqual(["r"]);
    expect(inits()).toBe(1);
  });

  it("is refused by the CLI under another passphrase, as a stack it made would be", async () => {
    const wrong = path.join(sb.tmp, "wrong-passphrase");
    fs.writeFileSync(wrong, "not-the-passphrase\n", { mode: 0o600 });
    const m = manager(wrong);
    await expect(m.getConfig({ namespace: "ns", name: "second" }, "token")).resolves.toBeUndefined(); // unreadable secret
    const stack = await m.ensureStack({ namespace: "ns", name: "second" });
    await expect(stack.getConfig("token")).rejects.toThrow(/incorrect passphrase/);
  });

  it("leaves a stack whose settings file is already there to the CLI, which keeps its salt", async () => {
    const file = path.join(sb.workDir, "Pulumi.ns--kept.yaml");
    fs.copyFileSync(path.join(sb.workDir, "Pulumi.ns--first.yaml"), file);
    const salt = settings("ns--first").encryptionsalt;
    await manager().ensureStack({ namespace: "ns", name: "kept" });
    expect(inits()).toBe(2);
    expect(settings("ns--kept").encryptionsalt).toBe(salt);
    expect(checkpoint("ns--kept").checkpoint.latest.secrets_providers.state.salt).toBe(salt);
  });
});
