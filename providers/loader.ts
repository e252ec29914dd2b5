// Loads a provider's operations module at run time, inside the dynamic provider host. Pulumi
// serializes the provider object's methods by value and captures module-scope imports with them, which
// breaks on gRPC, client-node and Node built-ins (pulumi-toolchain.md §5). So the provider methods hold
// no imports: each call loads the real logic from the project's sources through this function, which
// itself only require()s built-ins. The project root is BMW_PROJECT_ROOT, else the working directory
// (the program's directory, where the provider host runs).

/**
 * require()s `relPath` (a .ts file under the project root), registering ts-node in transpile-only mode
 * once per process unless a TypeScript loader is already installed.
 */
export function loadProjectModule(relPath: string): unknown {
  const path: typeof import("node:path") = require("node:path");
  const nodeModule: typeof import("node:module") = require("node:module");
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
