// The provider host's bundle (stack/providerBundle.ts) holds the same logic as the sources it is built
// from: every module a provider asks for, with the same exports, reading the protos from the project; it
// loads no second Pulumi SDK; a new version of any source is a new bundle; and the loader takes the
// bundle when one is named and present, else the sources.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { hostModules } from "../../providers/hostModules";
import { loadProjectModule } from "../../providers/loader";
import { UNKNOWN_VALUE } from "../../providers/providerHost";
import { BUNDLE_ENTRY, buildProviderBundle, bundleKey, providerBundle, withProviderBundle } from "../../stack/providerBundle";
import { PROJECT_ROOT } from "../../stack/toolchain";

jest.setTimeout(120_000);

let dir: string;
let bundle: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-bundle-"));
  bundle = await providerBundle(dir);
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** What a plain Node process (as the provider host is) finds in the bundle: each module's export names and the protos' directory. */
function bundleContents(file: string): { exports: Record<string, string[]>; protoDir: string } {
  const script = `
    const m = require(process.argv[1]).hostModules;
    const exports = Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Object.keys(v).sort()]));
    process.stdout.write(JSON.stringify({ exports, protoDir: require("node:fs").readFileSync(process.argv[1], "utf8").match(/PROTO_DIR = ("[^"]*")/)[1] }));`;
  return JSON.parse(execFileSync(process.execPath, ["-e", script, file], { encoding: "utf8" })) as { exports: Record<string, string[]>; protoDir: string };
}

it("Pulumi's placeholder for an unknown value is the constant the provider host compares with", () => {
  expect(pulumi.runtime.unknownValue).toBe(UNKNOWN_VALUE);
});

it("holds every operations module a provider names, with the exports of its source", () => {
  const named = fs.readdirSync(path.join(PROJECT_ROOT, "providers")).flatMap((f) =>
    [...fs.readFileSync(path.join(PROJECT_ROOT, "providers", f), "utf8").matchAll(/opsPath: "([^"]+)"/g)].map((m) => m[1]));
  expect(named.sort()).toEqual(["providers/agentBindingOps.ts", "providers/bareMetalInstanceOps.ts"]);
  for (const p of named) expect(Object.keys(hostModules)).toContain(p);
  const { exports, protoDir } = bundleContents(bundle);
  expect(exports).toEqual(Object.fromEntries(Object.entries(hostModules).map(([k, v]) => [k, Object.keys(v as object).sort()])));
  expect(JSON.parse(protoDir)).toBe(path.join(PROJECT_ROOT, "protos"));
  expect(fs.existsSync(path.join(JSON.parse(protoDir) as string, "osac/private/v1/baremetal_instances_service.proto"))).toBe(true);
});

it("loads no Pulumi SDK of its own: a provider module importing one is refused at build", async () => {
  expect(fs.readFileSync(bundle, "utf8")).not.toMatch(/require\("@pulumi\//);
  const root = path.join(dir, "bad-root");
  fs.mkdirSync(path.join(root, "providers"), { recursive: true });
  fs.writeFileSync(path.join(root, BUNDLE_ENTRY), 'import * as pulumi from "@pulumi/pulumi";\nexport const hostModules = { x: pulumi };\n');
  await expect(buildProviderBundle(path.join(dir, "bad.js"), root)).rejects.toThrow(/must not load the Pulumi SDK/);
  expect(fs.existsSync(path.join(dir, "bad.js"))).toBe(false);
});

it("is a new bundle when any of its sources or the locked dependencies change", () => {
  const root = path.join(dir, "key-root");
  for (const f of ["providers/hostModules.ts", "clients/x.ts", "protos/a.proto", "package-lock.json", "controller/y.ts"]) {
    fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    fs.writeFileSync(path.join(root, f), `// ${f}\n`);
  }
  const keys = [bundleKey(root)];
  fs.appendFileSync(path.join(root, "controller/y.ts"), "// not in the bundle\n");
  expect(bundleKey(root)).toBe(keys[0]);
  for (const f of ["clients/x.ts", "protos/a.proto", "package-lock.json"]) {
    fs.appendFileSync(path.join(root, f), "// changed\n");
    keys.push(bundleKey(root));
  }
  expect(new Set(keys).size).toBe(4);
});

it("is named to pulumi processes only where the provider logic lives", async () => {
  expect((await withProviderBundle({ A: "1" }, dir)).BMW_PROVIDER_BUNDLE).toBe(bundle);
  expect(await withProviderBundle({ A: "1" }, dir, path.join(dir, "key-root-without-entry"))).toEqual({ A: "1" });
});

it("the loader takes the named bundle when present, else the sources", () => {
  const before = process.env.BMW_PROVIDER_BUNDLE;
  try {
    process.env.BMW_PROVIDER_BUNDLE = bundle;
    const fromBundle = (require(bundle) as { hostModules: Record<string, unknown> }).hostModules["providers/bareMetalInstanceOps.ts"];
    expect(loadProjectModule("providers/bareMetalInstanceOps.ts")).toBe(fromBundle);
    expect(() => loadProjectModule("providers/lazyProvider.ts")).toThrow(/holds no providers\/lazyProvider.ts/);
    process.env.BMW_PROVIDER_BUNDLE = path.join(dir, "gone.js");
    process.env.BMW_PROJECT_ROOT = PROJECT_ROOT;
    const fromSources = loadProjectModule("providers/bareMetalInstanceOps.ts") as object;
    expect(fromSources).not.toBe(fromBundle);
    expect(Object.keys(fromSources).sort()).toEqual(Object.keys(fromBundle as object).sort());
  } finally {
    if (before === undefined) delete process.env.BMW_PROVIDER_BUNDLE;
    else process.env.BMW_PROVIDER_BUNDLE = before;
  }
});
