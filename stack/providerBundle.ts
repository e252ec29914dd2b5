// The dynamic provider host of every update loads the providers' logic (providers/hostModules.ts) with
// its gRPC, protobuf and client-node dependencies. Through ts-node that is a few hundred modules to
// resolve, transpile and compile: about half a CPU-second per update. One prebuilt bundle of that logic
// (esbuild) loads in a fraction of it. It is built once per version of its sources into the toolchain
// cache and named to every pulumi process in BMW_PROVIDER_BUNDLE (stack/toolchain.ts pulumiEnv); a pulumi
// run without it (an admin's plain `pulumi preview` in the project) loads the same sources with ts-node.
import * as fs from "node:fs";
import * as path from "node:path";
import { buildBundle, bundleKey as keyOf } from "../lib/bundler";
import { PROJECT_ROOT } from "./toolchain";

/** The bundle's entry, relative to the project root. */
export const BUNDLE_ENTRY = "providers/hostModules.ts";

/** Every directory whose sources the bundle may hold; any change to one of them is a new bundle. */
const SOURCE_DIRS = ["providers", "clients", "config", "lib", "planner", "protos"];

/** The bundle's version: its sources, the locked dependencies, the bundler and where the sources are. */
export function bundleKey(root = PROJECT_ROOT): string {
  return keyOf(root, SOURCE_DIRS);
}

/**
 * Builds the bundle of `root`'s provider logic into `outFile`. Its dependencies are inside it: the host
 * then resolves none of them. The host's Pulumi SDK is the one the dynamic-provider host runs; a second
 * copy would not share its state, so an import of @pulumi/* fails the build.
 */
export function buildProviderBundle(outFile: string, root = PROJECT_ROOT): Promise<void> {
  return buildBundle({ root, entry: BUNDLE_ENTRY, outFile, refuse: /^@pulumi\//,
    refuseWhy: "the provider host's logic must not load the Pulumi SDK" });
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
