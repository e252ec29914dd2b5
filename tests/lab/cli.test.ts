// `lab up|status|down` as an operator runs them: detached processes with their own control plane,
// PIDs and logs in the state directory; a second `up` reuses, a crashed component is reported and a
// partly running lab is refused; `down` stops everything by PID. With `--postgres`, a PostgreSQL server too.
import * as fs from "node:fs";
import * as k8s from "@kubernetes/client-node";
import { Client } from "pg";
import type { LabStatus } from "../../lab";
import { alive } from "../../lab/processes";
import { runTs } from "../support/run";
import { eventually } from "../support/eventually";
import { tempDir } from "./helpers";

interface UpOutput {
  reused: boolean;
  postgresUrl?: string;
  kubeconfig: string;
  orders: { namespace: string; name: string; nodePools: Record<string, string> }[];
  status: LabStatus;
}

const dir = tempDir("cli");
const lab = (...args: string[]) => runTs("lab/cli.ts", [...args, "--dir", dir]);
const json = <T>(out: string): T => JSON.parse(out.trim().split("\n").pop() ?? "") as T;
let pids: number[] = [];

afterAll(async () => {
  await lab("down", "--purge");
  for (const pid of pids) expect(alive(pid)).toBe(false);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("lab up starts every component detached; up again reuses it; status reports a killed component; down stops all", async () => {
  const up = await lab("up", "--timings", "fast", "--orders", "1", "--postgres", "--output", "json");
  expect({ code: up.code, stderr: up.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  const first = json<UpOutput>(up.stdout);
  expect(first.reused).toBe(false);
  expect(first.status.state).toBe("running");
  expect(first.status.components.map((c) => c.name)).toEqual(
    ["etcd", "kube-apiserver", "kube-controller-manager", "fulfillment-simulator", "lab-controllers", "postgres"]);
  // The state backend's database answers at the URL the lab prints.
  expect(first.postgresUrl).toMatch(/^postgres:\/\/pulumi@127\.0\.0\.1:\d+\/pulumi\?sslmode=disable$/);
  const db = new Client({ connectionString: first.postgresUrl });
  await db.connect();
  expect((await db.query("SELECT current_database() AS d")).rows[0]).toEqual({ d: "pulumi" });
  await db.end();
  pids = first.status.components.map((c) => c.pid);
  for (const c of first.status.components) {
    expect(c.pid).not.toBe(process.pid);
    expect(fs.existsSync(c.log)).toBe(true);
  }

  // The sample order is on the lab's apiserver, with its clusterReference.
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(first.kubeconfig);
  const co = await kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({
    group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders", namespace: "lab-order-1", name: "order-1",
  }) as { status?: { clusterReference?: { hostedClusterName?: string } } };
  expect(co.status?.clusterReference?.hostedClusterName).toBe("order-1");

  const again = await lab("up", "--output", "json");
  expect(again.code).toBe(0);
  const second = json<UpOutput>(again.stdout);
  expect(second.reused).toBe(true);
  expect(second.status.components.map((c) => c.pid)).toEqual(pids);

  const status = await lab("status", "--output", "json");
  expect(status.code).toBe(0);
  expect(json<LabStatus>(status.stdout).components.every((c) => c.alive)).toBe(true);

  const fault = await lab("fault", "set", "--method", "BareMetalInstances/Create", "--code", "UNAVAILABLE", "--times", "1");
  expect(fault.code).toBe(0);
  expect((await lab("fault", "clear")).code).toBe(0);

  const controllers = first.status.components.find((c) => c.name === "lab-controllers")!;
  process.kill(controllers.pid, "SIGKILL");
  await eventually(async () => (alive(controllers.pid) ? undefined : true));
  const crashed = await lab("status", "--output", "json");
  expect(crashed.code).toBe(1);
  const report = json<LabStatus>(crashed.stdout);
  expect(report.state).toBe("degraded");
  expect(report.components.find((c) => c.name === "lab-controllers")?.alive).toBe(false);
  expect(report.components.filter((c) => c.alive)).toHaveLength(5);
  const text = await lab("status");
  expect(text.stdout).toMatch(/lab-controllers\s+DOWN/);

  const refused = await lab("up");
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(/only partly running \(not alive: lab-controllers\)/);

  const down = await lab("down");
  expect(down.code).toBe(0);
  for (const pid of pids) expect(alive(pid)).toBe(false);
  const after = await lab("status", "--output", "json");
  expect(after.code).toBe(3);
  expect(json<LabStatus>(after.stdout).state).toBe("stopped");
});
