// Loads a provider's operations module at run time, inside the dynamic provider host. Pulumi
// serializes the provider object's methods by value and captures module-scope imports with them, which
// breaks on gRPC, client-node and Node built-ins (pulumi-toolchain.md §5). So the provider methods hold
// no imports: each call loads the real logic through this function, which itself only require()s
// built-ins. The logic comes from the prebuilt bundle BMW_PROVIDER_BUNDLE names (stack/providerBundle.ts,
// set by the reconciler and the CLI for every pulumi process) or, without one (an admin's plain `pulumi`
// in the project), from the project's sources under BMW_PROJECT_ROOT, else the working directory.

/**
 * The module at `relPath` (a .ts file under the project root): from the bundle when one is named and
 * present, else require()d from the sources with ts-node in transpile-only mode, registered once per
 * process unless a TypeScript loader is already installed.
 */
export function loadProjectModule(relPath: string): unknown {
  const fs: typeof import("node:fs") = require("node:fs");
  const path: typeof import("node:path") = require("node:path");
  const nodeModule: typeof import("node:module") = require("node:module");
  const bundle = process.env.BMW_PROVIDER_BUNDLE;
  if (bundle && fs.existsSync(bundle)) {
    const { hostModules } = require(bundle) as { hostModules: Record<string, unknown> };
    if (!(relPath in hostModules)) throw new Error(`the provider bundle ${bundle} holds no ${relPath} (providers/hostModules.ts lists what it holds)`);
    return hostModules[relPath];
  }
  const root = path.resolve(process.env.BMW_PROJECT_ROOT || process.cwd());
  const req = nodeModule.createRequire(path.join(root, "package.json"));
  const flags = globalThis as { __bmwTsNodeRegistered?: boolean };
  if (!flags.__bmwTsNodeRegistered) {
    const extensions = (nodeModule as unknown as { _extensions: Record<string, unknown> })._extensions;
    if (!extensions[".ts"]) {
      const tsNode: { register(opts: { transpileOnly: boolean; project: string }): unknown } = req("ts-node");
      tsNode.register({ transpileOnly: true, project: path.join(root, "tsconfig.json") });
    }
    flags.__bmwTsNodeRegistered = true;
  }
  return req(path.join(root, relPath));
}
