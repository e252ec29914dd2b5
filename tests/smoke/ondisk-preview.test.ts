// `pulumi preview` of the on-disk project (Pulumi.yaml + index.ts) through the Node.js language host we
// built, exactly as an admin runs it. Stack settings go to a temp copy of Pulumi.yaml whose `main`
// points at the repository, so nothing is written into the working tree.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PROJECT_ROOT, pulumiEnv, toolchain } from "../../stack/toolchain";

function pulumi(args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
  const tc = toolchain();
  return new Promise((resolve) => {
    execFile(path.join(tc.pulumiRoot, "bin", "pulumi"), args, { cwd, env: { ...process.env, ...env }, timeout: 240_000 },
      (err, stdout, stderr) => resolve({ code: err ? 1 : 0, out: stdout + stderr }));
  });
}

describe("pulumi preview of the on-disk project", () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-ondisk-"));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("runs index.ts through pulumi-language-nodejs, which reports a missing setting by name", async () => {
    const tc = toolchain();
    const project = fs.readFileSync(path.join(PROJECT_ROOT, "Pulumi.yaml"), "utf8");
    fs.writeFileSync(path.join(tmp, "Pulumi.yaml"), `${project}\nmain: ${PROJECT_ROOT}\n`);
    fs.mkdirSync(path.join(tmp, "state"));
    const env = pulumiEnv(tc, { PULUMI_BACKEND_URL: `file://${path.join(tmp, "state")}`, PULUMI_CONFIG_PASSPHRASE: "ondisk" });

    const init = await pulumi(["stack", "init", "ns1-order1", "--non-interactive"], tmp, env);
    expect(init.out).toContain("Created stack 'ns1-order1'");
    const cfg = await pulumi(["config", "set", "clusterOrder", "ns1/order1", "--stack", "ns1-order1"], tmp, env);
    expect(cfg.code).toBe(0);

    // The real program needs its connection settings; without them preview fails and says which one.
    // (tests/engine/program.test.ts previews the same program with them against the lab.)
    const r = await pulumi(["preview", "--stack", "ns1-order1", "--non-interactive", "--diff"], tmp,
      { ...env, BMW_FULFILLMENT_TOKEN_FILE: "" });
    expect(r.code).toBe(1);
    expect(r.out).toContain("BMW_FULFILLMENT_TOKEN_FILE is not set: the file holding the fulfillment-service token");
    // preview took no lock and wrote no resources
    expect(fs.readdirSync(path.join(tmp, "state", ".pulumi", "locks", "organization", "baremetal-workers", "ns1-order1"))).toEqual([]);
  });
});
