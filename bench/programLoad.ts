// Program load: the CPU a fresh Node process spends loading the Pulumi program (index.ts and what it
// imports, plus the `typescript` module Pulumi's Node host always loads), the largest share of every
// update's CPU. Measured in the same run for the transpiler and compile-cache settings an update can
// run with, so the ratio of the product's setting (swc + Node's compile cache) to tsc is from one run.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { providerBundle } from "../stack/providerBundle";
import { PROJECT_ROOT } from "../stack/toolchain";
import { median } from "./stats";

export interface LoadVariant {
  /** ts-node's transpiler: swc (tsconfig's ts-node.swc, the product's setting) or TypeScript's. */
  transpiler: "swc" | "tsc";
  compileCache: boolean;
  cpuMs: number[];
  medianCpuMs: number;
}

const VARIANTS: Array<Pick<LoadVariant, "transpiler" | "compileCache">> = [
  { transpiler: "tsc", compileCache: false },
  { transpiler: "swc", compileCache: false },
  { transpiler: "swc", compileCache: true },
];

// Registers ts-node as Pulumi's Node host does (transpile only, the project's tsconfig), loads the
// program and prints the process's CPU time.
const SCRIPT = `
const root = process.argv[1];
require(require.resolve("ts-node", { paths: [root] })).register({
  transpileOnly: true, project: root + "/tsconfig.json", swc: process.env.LOAD_SWC === "1",
});
require(root + "/index.ts");
require(require.resolve("typescript", { paths: [root] }));
const u = process.cpuUsage();
process.stdout.write(String((u.user + u.system) / 1000));
`;

export function measureProgramLoad(dir: string, runs: number): LoadVariant[] {
  const cacheDir = path.join(dir, "program-load-cache");
  fs.rmSync(cacheDir, { recursive: true, force: true });
  const once = (v: (typeof VARIANTS)[number]): number => {
    const env: NodeJS.ProcessEnv = { ...process.env, LOAD_SWC: v.transpiler === "swc" ? "1" : "0" };
    delete env.NODE_COMPILE_CACHE;
    if (v.compileCache) env.NODE_COMPILE_CACHE = cacheDir;
    const r = spawnSync(process.execPath, ["-e", SCRIPT, PROJECT_ROOT], { env, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`program load (${v.transpiler}, cache ${v.compileCache}) failed: ${r.stderr}`);
    return Number(r.stdout);
  };
  // One unmeasured round fills the page cache and the compile cache; then the variants alternate,
  // so drift in the machine's load spreads over all of them.
  for (const v of VARIANTS) once(v);
  const out = VARIANTS.map((v) => ({ ...v, cpuMs: [] as number[], medianCpuMs: 0 }));
  for (let i = 0; i < runs; i++) for (const v of out) v.cpuMs.push(once(v));
  for (const v of out) v.medianCpuMs = median(v.cpuMs);
  return out;
}

export interface ProviderLoadVariant {
  /**
   * Where the provider host takes the providers' logic from (providers/providerModule.js); "bundle, no
   * TypeScript": the bundle in a host that deferred the SDK's TypeScript (providers/hostLaunch.js, the product's).
   */
  from: "sources" | "bundle" | "bundle, no TypeScript";
  cpuMs: number[];
  medianCpuMs: number;
}

// What a dynamic provider host loads before its first call: the Pulumi SDK, then the providers' logic,
// from the sources through ts-node (as providers/loader.ts does without a bundle) or from the bundle.
const PROVIDER_SCRIPT = `
const [root, bundle, defer] = process.argv.slice(1);
if (defer) require(root + "/lib/deferTypeScript.js").deferTypeScript(root);
require(require.resolve("@pulumi/pulumi", { paths: [root] }));
const paths = ["providers/bareMetalInstanceOps.ts", "providers/agentBindingOps.ts"];
if (bundle) {
  for (const p of paths) require(bundle).hostModules[p];
} else {
  require(require.resolve("ts-node", { paths: [root] })).register({ transpileOnly: true, project: root + "/tsconfig.json" });
  for (const p of paths) require(root + "/" + p);
}
const u = process.cpuUsage();
process.stdout.write(String((u.user + u.system) / 1000));
`;

/** Provider host load CPU from the sources and from the bundle, both with Node's compile cache (the product's setting). */
export async function measureProviderLoad(dir: string, runs: number): Promise<ProviderLoadVariant[]> {
  const cacheDir = path.join(dir, "provider-load-cache");
  fs.rmSync(cacheDir, { recursive: true, force: true });
  const bundle = await providerBundle(path.join(dir, "provider-load-bundle"));
  const once = (from: ProviderLoadVariant["from"]): number => {
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_COMPILE_CACHE: cacheDir };
    const args = [PROJECT_ROOT, from === "sources" ? "" : bundle, from === "bundle, no TypeScript" ? "1" : ""];
    const r = spawnSync(process.execPath, ["-e", PROVIDER_SCRIPT, ...args], { env, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`provider load (${from}) failed: ${r.stderr}`);
    return Number(r.stdout);
  };
  const out: ProviderLoadVariant[] = (["sources", "bundle", "bundle, no TypeScript"] as const).map((from) => ({ from, cpuMs: [], medianCpuMs: 0 }));
  for (const v of out) once(v.from); // fills the page cache and the compile cache
  for (let i = 0; i < runs; i++) for (const v of out) v.cpuMs.push(once(v.from));
  for (const v of out) v.medianCpuMs = median(v.cpuMs);
  return out;
}

export interface ReconcilerLoadVariant {
  /** How the reconciler's modules are loaded: as the CLI launcher does now, or with every package from node_modules and the SDK's TypeScript. */
  how: "product" | "packages external, TypeScript loaded";
  rssMiB: number[];
  heapUsedMiB: number[];
  medianRssMiB: number;
  medianHeapUsedMiB: number;
}

// Loads a bundle of the reconciler's modules (controller/run.ts and all it imports) and prints the
// process's RSS and V8 heap in use after a full collection: what the process holds before any order.
const RECONCILER_SCRIPT = `
const [root, bundle, defer] = process.argv.slice(1);
if (defer) require(root + "/lib/deferTypeScript.js").deferTypeScript(root);
require(bundle);
setTimeout(() => {
  globalThis.gc();
  const m = process.memoryUsage();
  process.stdout.write(JSON.stringify({ rss: m.rss / 2 ** 20, heapUsed: m.heapUsed / 2 ** 20 }));
}, 200);
`;

/**
 * The memory the reconciler's loaded modules take, as the CLI launcher loads them (client-node inside the
 * bundle, the SDK's TypeScript deferred: cli/launch.js) against every package from node_modules with the
 * SDK loading TypeScript (as before).
 */
export async function measureReconcilerLoad(dir: string, runs: number): Promise<ReconcilerLoadVariant[]> {
  const { buildBundle, CLI_INLINE_PACKAGES } = await import("../lib/bundler");
  const files = { product: path.join(dir, "reconciler-load-product.js"), external: path.join(dir, "reconciler-load-external.js") };
  await buildBundle({ root: PROJECT_ROOT, entry: "controller/run.ts", outFile: files.product, externalPackages: true, inlinePackages: CLI_INLINE_PACKAGES });
  await buildBundle({ root: PROJECT_ROOT, entry: "controller/run.ts", outFile: files.external, externalPackages: true });
  const out: ReconcilerLoadVariant[] = (["product", "packages external, TypeScript loaded"] as const)
    .map((how) => ({ how, rssMiB: [], heapUsedMiB: [], medianRssMiB: 0, medianHeapUsedMiB: 0 }));
  for (let i = 0; i < runs; i++) {
    for (const v of out) {
      const product = v.how === "product";
      const r = spawnSync(process.execPath, ["--expose-gc", "--max-semi-space-size=16", "-e", RECONCILER_SCRIPT, PROJECT_ROOT,
        product ? files.product : files.external, product ? "1" : ""], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`reconciler load (${v.how}) failed: ${r.stderr}`);
      const m = JSON.parse(r.stdout) as { rss: number; heapUsed: number };
      v.rssMiB.push(m.rss);
      v.heapUsedMiB.push(m.heapUsed);
    }
  }
  for (const v of out) {
    v.medianRssMiB = median(v.rssMiB);
    v.medianHeapUsedMiB = median(v.heapUsedMiB);
  }
  return out;
}
