// Starts one real etcd + kube-apiserver for the whole run and installs every CRD.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { assertToolchainBuilt, toolchain } from "../../stack/toolchain";
import { startControlPlane } from "../../lab/controlplane";
import { newRunDir, PROJECT_CRDS, SHARED_CRDS } from "./env";

export default async function globalSetup(): Promise<void> {
  // Pure unit suites (planner) can run without building or starting anything: BMW_TEST_PLANE=off.
  if (process.env.BMW_TEST_PLANE === "off") return;
  const tc = toolchain();
  assertToolchainBuilt(tc);
  const dir = newRunDir();
  fs.mkdirSync(dir, { recursive: true });
  process.env.BMW_TEST_RUN_DIR = dir;
  // An authenticated user with no RBAC bindings, so tests can prove that RBAC is enforced.
  const unprivileged = crypto.randomBytes(24).toString("hex");
  const cp = await startControlPlane({
    dir: path.join(dir, "controlplane"), toolchain: tc, crdDirs: [SHARED_CRDS, PROJECT_CRDS],
    users: [{ token: unprivileged, user: "unprivileged", groups: ["bmw:tests"] }],
  });
  fs.writeFileSync(path.join(dir, "controlplane", "pki", "unprivileged.token"), unprivileged, { mode: 0o600 });
  process.env.KUBECONFIG = cp.kubeconfigPath;
  process.stdout.write(
    `\n[test plane] kube-apiserver ${tc.versions.kubernetes} + etcd ${tc.versions.etcd} at ${cp.server}: ` +
      `ready in ${cp.timings.readyMs} ms, CRDs established at ${cp.timings.crdsMs} ms\n`,
  );
}
