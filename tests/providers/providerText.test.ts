// Our dynamic resources' provider text (providers/lazyProvider.ts, providers/providerModule.js) and the
// TypeScript the Pulumi SDK no longer loads for it (lib/deferTypeScript.js): the text is the same for every
// declaration, evaluates to the provider object the host calls, and keeps the type token of a
// pulumi.dynamic.Resource; a process that defers TypeScript imports the SDK without loading it, and still
// serializes a closure when asked (loading it then).
import { execFileSync, spawnSync } from "node:child_process";
import * as path from "node:path";
import * as fs from "node:fs";
import { agentBindingProvider } from "../../providers/agentBinding";
import { bareMetalInstanceProvider } from "../../providers/bareMetalInstance";
import { providerText } from "../../providers/lazyProvider";

const ROOT = path.resolve(__dirname, "../..");
const requireFromString: (code: string) => { handler(): Record<string, (...a: unknown[]) => Promise<unknown>> } = require("require-from-string");

describe("provider text", () => {
  it.each([["BareMetalInstance", bareMetalInstanceProvider], ["AgentBinding", agentBindingProvider]] as const)(
    "%s: the module file and one line naming its type, the same every time", (kind, provider) => {
      const text = providerText(provider.spec);
      expect(providerText({ ...provider.spec })).toBe(text);
      expect(text.startsWith(fs.readFileSync(path.join(ROOT, "providers/providerModule.js"), "utf8"))).toBe(true);
      expect(text).toContain(`"kind":"${kind}"`);
      const loaded = requireFromString(text).handler();
      expect(Object.keys(loaded).sort()).toEqual(["check", "create", "delete", "diff", "read", "update"]);
    });

  it("refuses `pulumi import` (read without props) with the type's hint, before loading anything", async () => {
    const loaded = requireFromString(providerText(bareMetalInstanceProvider.spec)).handler();
    await expect(loaded.read("bmi-1")).rejects.toThrow("BareMetalInstance bmi-1: import is not supported; adopt an existing BMI with the adoptId input");
  });
});

describe("TypeScript deferred", () => {
  const run = (script: string) => JSON.parse(execFileSync(process.execPath, ["-e", script], { cwd: ROOT, encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "" } }).trim().split("\n").pop()!) as Record<string, unknown>;

  it("importing the SDK loads no TypeScript; serializing a closure loads it then", () => {
    const out = run(`
      const d = require("./lib/deferTypeScript.js");
      const deferred = d.deferTypeScript(process.cwd());
      const pulumi = require("@pulumi/pulumi");
      const afterImport = d.typeScriptLoaded();
      pulumi.runtime.serializeFunction(() => 42).then((sf) => console.log(JSON.stringify({ deferred, afterImport,
        afterSerialize: d.typeScriptLoaded(), text: sf.text.includes("42") })));`);
    expect(out).toEqual({ deferred: true, afterImport: false, afterSerialize: true, text: true });
  });

  it("a property written to the deferred module loads TypeScript and is kept on the real module", () => {
    const out = run(`
      const d = require("./lib/deferTypeScript.js");
      d.deferTypeScript(process.cwd());
      const shim = require.resolve("@pulumi/pulumi/typescript-shim");
      const lazy = require(shim);
      const before = d.typeScriptLoaded();
      lazy.bmwMarker = 7;
      console.log(JSON.stringify({ before, after: d.typeScriptLoaded(), kept: require(shim).bmwMarker, version: typeof lazy.version }));`);
    expect(out).toEqual({ before: false, after: true, kept: 7, version: "string" });
  });

  it("the provider host our pulumi processes run is the SDK's (it asks for the engine's address)", () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, "providers/hostLaunch.js")], { encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } });
    expect(r.stderr).toContain("fatal: Missing <engine> address");
    expect(r.status).not.toBe(0);
  });

  it("without the deferral the SDK loads TypeScript on import (what the deferral saves)", () => {
    const out = run(`
      const d = require("./lib/deferTypeScript.js");
      require("@pulumi/pulumi");
      console.log(JSON.stringify({ loaded: d.typeScriptLoaded() }));`);
    expect(out).toEqual({ loaded: true });
  });
});
