import * as fs from "node:fs";
import * as path from "node:path";
import { stopControlPlane } from "../../lab/controlplane";

export default async function globalTeardown(): Promise<void> {
  const dir = process.env.BMW_TEST_RUN_DIR;
  if (!dir) return;
  await stopControlPlane(path.join(dir, "controlplane"));
  if (!process.env.BMW_KEEP_TEST_DIR) fs.rmSync(dir, { recursive: true, force: true });
}
