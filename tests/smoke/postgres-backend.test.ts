// The Pulumi CLI the toolchain builds keeps DIY state in PostgreSQL (`postgres://` backend URL): stacks in
// the project layout, stack tags, one row per blob in the table `pulumi_state`, and stack locks as rows
// that never expire and that `pulumi cancel` removes. Against a real
// server from the Debian package (lab/postgres.ts), started here and stopped after.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { Client } from "pg";
import { startPostgres, type PostgresServer } from "../../lab/postgres";
import { PROJECT_ROOT, pulumiEnv, toolchain } from "../../stack/toolchain";
import { runDir } from "../support/env";

jest.setTimeout(180_000);

function pulumi(args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
  const tc = toolchain();
  return new Promise((resolve) => {
    execFile(path.join(tc.pulumiRoot, "bin", "pulumi"), args, { cwd, env: { ...process.env, ...env }, timeout: 120_000 },
      (err, stdout, stderr) => resolve({ code: err ? 1 : 0, out: stdout + stderr }));
  });
}

describe("the postgres:// DIY backend of the built CLI", () => {
  let pg: PostgresServer;
  const dir = path.join(runDir(), "postgres-backend");

  beforeAll(async () => {
    pg = await startPostgres(path.join(dir, "postgres"));
  });
  afterAll(async () => {
    await pg?.stop();
  });

  it("holds stacks in the project layout with their tags, one row per blob", async () => {
    const work = path.join(dir, "project");
    fs.mkdirSync(work, { recursive: true });
    fs.copyFileSync(path.join(PROJECT_ROOT, "Pulumi.yaml"), path.join(work, "Pulumi.yaml"));
    const env = pulumiEnv(toolchain(), { PULUMI_BACKEND_URL: pg.url, PULUMI_CONFIG_PASSPHRASE: "pg-smoke" });
    const init = await pulumi(["stack", "init", "tenant-a--cluster-1", "--non-interactive"], work, env);
    expect(init.out).toContain("Created stack 'tenant-a--cluster-1'");
    expect((await pulumi(["stack", "tag", "set", "osac.openshift.io/order-uid", "uid-1", "--stack", "tenant-a--cluster-1"], work, env)).code).toBe(0);
    const tags = await pulumi(["stack", "tag", "ls", "--stack", "tenant-a--cluster-1", "--json"], work, env);
    expect(JSON.parse(tags.out)).toMatchObject({ "osac.openshift.io/order-uid": "uid-1" });

    const db = new Client({ connectionString: pg.url });
    await db.connect();
    try {
      const keys = (await db.query<{ key: string }>("SELECT key FROM pulumi_state ORDER BY key")).rows.map((r) => r.key);
      // The database name prefixes every key; the project layout puts stacks under their project.
      expect(keys).toEqual(expect.arrayContaining([
        "pulumi/.pulumi/meta.yaml",
        "pulumi/.pulumi/stacks/baremetal-workers/tenant-a--cluster-1.json",
        "pulumi/.pulumi/stacks/baremetal-workers/tenant-a--cluster-1.pulumi-tags",
      ]));
      // A lock is a row with no expiry: it blocks the stack's writers until `pulumi cancel` removes it.
      const lockKey = "pulumi/.pulumi/locks/organization/baremetal-workers/tenant-a--cluster-1/00000000-0000-0000-0000-000000000001.json";
      const lock = { pid: 1, username: "ghost", hostname: "gone", timestamp: new Date().toISOString() };
      await db.query("INSERT INTO pulumi_state (key, data) VALUES ($1, $2)",
        [lockKey, JSON.stringify({ data: Buffer.from(JSON.stringify(lock)).toString("base64") })]);
      const state = path.join(work, "state.json");
      expect((await pulumi(["stack", "export", "--stack", "tenant-a--cluster-1", "--file", state], work, env)).code).toBe(0);
      const blocked = await pulumi(["stack", "import", "--stack", "tenant-a--cluster-1", "--file", state], work, env);
      expect(blocked.code).toBe(1);
      expect(blocked.out).toContain("currently locked");
      expect((await pulumi(["cancel", "--yes", "--stack", "tenant-a--cluster-1"], work, env)).code).toBe(0);
      expect((await db.query("SELECT key FROM pulumi_state WHERE key LIKE '%/.pulumi/locks/%'")).rowCount).toBe(0);
      expect((await pulumi(["stack", "import", "--stack", "tenant-a--cluster-1", "--file", state], work, env)).code).toBe(0);
    } finally {
      await db.end();
    }
  });
});
