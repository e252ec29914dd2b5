// The operators' CLI runs from any working directory: ts-node would otherwise look for a tsconfig.json
// from there up, find none (or someone else's), and refuse to compile the project.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const BIN = path.resolve(__dirname, "../../bin/baremetal-workers");

describe("bin/baremetal-workers", () => {
  it("answers --help from a directory outside the repository", () => {
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-cwd-"));
    try {
      const env = { ...process.env };
      delete env.TS_NODE_PROJECT;
      const out = execFileSync(BIN, ["--help"], { cwd: elsewhere, env, encoding: "utf8", timeout: 60_000 });
      expect(out).toContain("preview <order>");
      expect(out).toContain("approve <order>");
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
