// The dynamic provider host of every update loads the providers' logic (providers/hostModules.ts) with
// its gRPC, protobuf and client-node dependencies. Through ts-node that is a few hundred modules to
// resolve, transpile and compile: about half a CPU-second per update. One prebuilt bundle of that logic
// (esbuild) loads in a fraction of it. It is built once per version of its sources into the toolchain
// cache and named to every pulumi process in BMW_PROVIDER_BUNDLE (stack/toolchain.ts pulumiEnv); a pulumi
// run without it (an admin's plain `pulumi preview` in the project) loads the same sources with ts-node.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { PROJECT_ROOT } from "./toolchain";

/** The bundle's entry, relative to the project root. */
export const BUNDLE_ENTRY = "providers/hostModules.ts";

/** Every directory whose sources the bundle may hold; any change to one of them is a new bundle. */
const SOURCE_DIRS = ["providers", "clients", "config", "lib", "planner", "protos"];

function sourceFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|proto)$/.test(e.name)) out.push(p);
    }
  };
  for (const d of SOURCE_DIRS) if (fs.existsSync(path.join(root, d))) walk(path.join(root, d));
  return out.sort();
}

/** The bundle's version: its sources, the locked dependencies, the bundler and where the sources are. */
export function bundleKey(root = PROJECT_ROOT): string {
  const h = crypto.createHash("sha256");
  h.update(`${root}\0${require("esbuild/package.json").version as string}\0`);
  for (const f of [...sourceFiles(root), path.join(root, "package-lock.json")]) {
    h.update(`${path.relative(root, f)}\0`);
    h.update(fs.readFileSync(f));
    h.update("\0");
  }
  return h.digest("hex").slice(0, 20);
}

/**
 * The sources' __dirname is where they lie, not where the bundle does: the protos are read from beside
 * protos/fulfillment.ts.
 */
const sourceDirname = {
  name: "source-dirname",
  setup(build: import("esbuild").PluginBuild) {
    build.onLoad({ filter: /\.ts$/ }, (args) => ({
      contents: fs.readFileSync(args.path, "utf8").replace(/\b__dirname\b/g, JSON.stringify(path.dirname(args.path))),
      loader: "ts",
    }));
    // The host's SDK is the one the dynamic-provider host runs; a second copy would not share its state.
    build.onResolve({ filter: /^@pulumi\// }, (args) => ({
      errors: [{ text: `${args.importer} loads ${args.path} at run time: the provider host's logic must not load the Pulumi SDK` }],
    }));
  },
};

/** Builds the bundle of `root`'s provider logic into `outFile` (written whole, then renamed into place). */
export async function buildProviderBundle(outFile: string, root = PROJECT_ROOT): Promise<void> {
  const esbuild: typeof import("esbuild") = require("esbuild");
  const tmp = `${outFile}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`;
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  try {
    await esbuild.build({
      entryPoints: [path.join(root, BUNDLE_ENTRY)], outfile: tmp, bundle: true, platform: "node", format: "cjs",
      target: `node${process.versions.node.split(".")[0]}`, absWorkingDir: root, logLevel: "silent",
      plugins: [sourceDirname], legalComments: "none",
    });
    fs.renameSync(tmp, outFile);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

const built = new Map<string, Promise<string>>();
/** Each root's key, hashed once per process: this process's own modules do not change under it either. */
const keys = new Map<string, string>();

/**
 * The path of the current bundle under `cacheDir`, built first when missing (once per process; other
 * processes building the same key at once each write their own file and rename it into place).
 */
export function providerBundle(cacheDir: string, root = PROJECT_ROOT): Promise<string> {
  let key = keys.get(root);
  if (!key) keys.set(root, (key = bundleKey(root)));
  const file = path.join(cacheDir, "provider-bundle", `${key}.js`);
  let p = built.get(file);
  if (!p) {
    p = fs.existsSync(file) ? Promise.resolve(file) : buildProviderBundle(file, root).then(() => file);
    p.catch(() => built.delete(file));
    built.set(file, p);
  }
  return p;
}

let warned = false;

/**
 * `env` with BMW_PROVIDER_BUNDLE naming the current bundle of `root`'s provider logic. Without one (no
 * provider logic under `root`, or the build failed: warned once) the provider host loads the sources.
 */
export async function withProviderBundle(env: Record<string, string>, cacheDir: string, root = PROJECT_ROOT): Promise<Record<string, string>> {
  if (!fs.existsSync(path.join(root, BUNDLE_ENTRY))) return env;
  try {
    return { ...env, BMW_PROVIDER_BUNDLE: await providerBundle(cacheDir, root) };
  } catch (err) {
    if (!warned) process.emitWarning(`the provider host's bundle could not be built; its hosts load the sources instead: ${String(err)}`);
    warned = true;
    return env;
  }
}
