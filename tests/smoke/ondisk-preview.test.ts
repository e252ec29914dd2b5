// `pulumi preview` of the on-disk project (Pulumi.yaml + index.ts) through the Node.js language host we
// built, exactly as an admin runs it. Stack settings go to a temp copy of Pulumi.yaml whose `main`
// points at the repository, so nothing is written into the working tree.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PROJECT_ROOT, pulumiEnv, toolchain } from "../../automation/toolchain";

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

  it("runs index.ts through pulumi-language-nodejs and shows the stack outputs", async () => {
    const tc = toolchain();
    const project = fs.readFileSync(path.join(PROJECT_ROOT, "Pulumi.yaml"), "utf8");
    fs.writeFileSync(path.join(tmp, "Pulumi.yaml"), `${project}\nmain: ${PROJECT_ROOT}\n`);
    fs.mkdirSync(path.join(tmp, "state"));
    const env = pulumiEnv(tc, { PULUMI_BACKEND_URL: `file://${path.join(tmp, "state")}`, PULUMI_CONFIG_PASSPHRASE: "ondisk" });

    const init = await pulumi(["stack", "init", "ns1-order1", "--non-interactive"], tmp, env);
    expect(init.out).toContain("Created stack 'ns1-order1'");
    const cfg = await pulumi(["config", "set", "clusterOrder", "ns1/order1", "--stack", "ns1-order1"], tmp, env);
    expect(cfg.code).toBe(0);

    const r = await pulumi(["preview", "--stack", "ns1-order1", "--non-interactive", "--diff", "--json"], tmp, env);
    expect(r.code).toBe(0);
    const preview = JSON.parse(r.out.slice(r.out.indexOf("{")));
    expect(preview.changeSummary).toEqual({ create: 1 });
    const stackStep = preview.steps.find((s: { urn: string }) => s.urn.endsWith("pulumi:pulumi:Stack::baremetal-workers-ns1-order1"));
    expect(stackStep.op).toBe("create");
    expect(preview.config["baremetal-workers:clusterOrder"]).toBe("ns1/order1");
    // preview took no lock and wrote no checkpoint
    expect(fs.existsSync(path.join(tmp, "state", ".pulumi", "stacks", "baremetal-workers", "ns1-order1.json"))).toBe(true);
    const checkpoint = JSON.parse(fs.readFileSync(path.join(tmp, "state", ".pulumi", "stacks", "baremetal-workers", "ns1-order1.json"), "utf8"));
    expect(checkpoint.checkpoint.latest?.resources ?? []).toHaveLength(0);
  });
});
