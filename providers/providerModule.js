// @ts-check
// The module Pulumi keeps in each of our dynamic resources' state (`__provider`) and the provider host
// evaluates (require-from-string, then `.handler()`): the provider object of one resource type, whose
// methods load the type's operations module at run time. It is this file's text plus one line naming the
// type (providers/lazyProvider.ts `providerText`), not a closure the Pulumi SDK serializes: the text is the
// same in every process that declares a resource (the reconciler's bundle, ts-node, jest), and making it
// needs no TypeScript, which the SDK's serializer loads (about 53 MiB in the reconciler). It uses Node's
// built-ins only: their modules are not in the provider host's scope when the text is evaluated.
"use strict";

/**
 * The operations module at `relPath` (a .ts file under the project root): from the prebuilt bundle
 * BMW_PROVIDER_BUNDLE names (stack/providerBundle.ts, set by the reconciler and the CLI for every pulumi
 * process) when it is present, else require()d from the sources with ts-node in transpile-only mode,
 * registered once per process unless a TypeScript loader is already installed (an admin's plain `pulumi`
 * in the project: BMW_PROJECT_ROOT, else the working directory).
 * @param {string} relPath
 * @returns {unknown}
 */
function loadProjectModule(relPath) {
  const fs = require("node:fs");
  const path = require("node:path");
  const nodeModule = require("node:module");
  const bundle = process.env.BMW_PROVIDER_BUNDLE;
  if (bundle && fs.existsSync(bundle)) {
    const { hostModules } = require(bundle);
    if (!(relPath in hostModules)) throw new Error(`the provider bundle ${bundle} holds no ${relPath} (providers/hostModules.ts lists what it holds)`);
    return hostModules[relPath];
  }
  const root = path.resolve(process.env.BMW_PROJECT_ROOT || process.cwd());
  const req = nodeModule.createRequire(path.join(root, "package.json"));
  const flags = /** @type {{ __bmwTsNodeRegistered?: boolean }} */ (globalThis);
  if (!flags.__bmwTsNodeRegistered) {
    const extensions = /** @type {{ _extensions: Record<string, unknown> }} */ (/** @type {unknown} */ (nodeModule))._extensions;
    if (!extensions[".ts"]) req("ts-node").register({ transpileOnly: true, project: path.join(root, "tsconfig.json") });
    flags.__bmwTsNodeRegistered = true;
  }
  return req(path.join(root, relPath));
}

/**
 * The provider object of one resource type: every method delegates to the operations module (delete is
 * its `remove`); `read` without props is `pulumi import`, which is refused.
 * @param {{ kind: string, opsPath: string, importHint?: string }} spec
 */
function providerOf(spec) {
  const { kind, opsPath, importHint } = spec;
  /** @returns {any} */
  const ops = () => loadProjectModule(opsPath);
  return {
    /** @param {unknown} olds @param {unknown} news */
    async check(olds, news) {
      return ops().check(olds, news);
    },
    /** @param {string} id @param {unknown} olds @param {unknown} news */
    async diff(id, olds, news) {
      return ops().diff(id, olds, news);
    },
    /** @param {unknown} inputs */
    async create(inputs) {
      return ops().create(inputs);
    },
    /** @param {string} id @param {unknown} [props] */
    async read(id, props) {
      if (!props) throw new Error(`${kind} ${id}: import is not supported${importHint ? `; ${importHint}` : ""}`);
      return ops().read(id, props);
    },
    /** @param {string} id @param {unknown} olds @param {unknown} news */
    async update(id, olds, news) {
      return ops().update(id, olds, news);
    },
    /** @param {string} id @param {unknown} props */
    async delete(id, props) {
      return ops().remove(id, props);
    },
  };
}

module.exports = { loadProjectModule, providerOf };
