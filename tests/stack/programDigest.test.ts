// The program digest decides whether a restarted loop may trust an order's "applied" record: it must
// change with anything that changes what an update would run, and only then. (The App passes the parsed
// program settings; the engine suite checks that per-process variables do not count.)
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { programDigest } from "../../stack/programDigest";

describe("programDigest", () => {
  let dir: string;
  const versions = { pulumi: "3.0.0", kubernetesProvider: "4.0.0" };
  const env = { kubeconfigPath: "/etc/kube/config", fulfillment: { address: "fulfillment:8000" } };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-digest-"));
    fs.writeFileSync(path.join(dir, "index.ts"), "export = async () => ({});\n");
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: p\nruntime: nodejs\n");
    fs.mkdirSync(path.join(dir, "planner"));
    fs.writeFileSync(path.join(dir, "planner", "plan.ts"), "export const x = 1;\n");
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("is stable for the same program, toolchain and settings, whatever the key order", () => {
    const a = programDigest(dir, versions, env);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(programDigest(dir, { kubernetesProvider: "4.0.0", pulumi: "3.0.0" }, { fulfillment: { address: "fulfillment:8000" }, kubeconfigPath: "/etc/kube/config" })).toBe(a);
    expect(programDigest(dir, versions, env)).toBe(a);
  });

  it("changes with a program source, a new source file, the toolchain or a program setting", () => {
    const a = programDigest(dir, versions, env);
    fs.writeFileSync(path.join(dir, "planner", "plan.ts"), "export const x = 2;\n");
    const b = programDigest(dir, versions, env);
    expect(b).not.toBe(a);
    fs.mkdirSync(path.join(dir, "providers"));
    fs.writeFileSync(path.join(dir, "providers", "bmi.ts"), "export {};\n");
    const c0 = programDigest(dir, versions, env);
    expect(c0).not.toBe(b);
    fs.mkdirSync(path.join(dir, "program"));
    fs.writeFileSync(path.join(dir, "program", "orderProgram.ts"), "export {};\n"); // the program itself
    const c = programDigest(dir, versions, env);
    expect(c).not.toBe(c0);
    expect(programDigest(dir, { ...versions, pulumi: "3.0.1" }, env)).not.toBe(c);
    expect(programDigest(dir, versions, { ...env, fulfillment: { address: "other:8000" } })).not.toBe(c);
  });

  it("ignores what the program never loads: tests, docs, node_modules", () => {
    const a = programDigest(dir, versions, env);
    for (const d of ["tests", "docs", path.join("planner", "node_modules")]) {
      fs.mkdirSync(path.join(dir, d), { recursive: true });
      fs.writeFileSync(path.join(dir, d, "x.ts"), "export {};\n");
    }
    fs.writeFileSync(path.join(dir, "README.md"), "# readme\n");
    expect(programDigest(dir, versions, env)).toBe(a);
  });
});
