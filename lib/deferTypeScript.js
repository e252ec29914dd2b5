// @ts-check
// Importing the Pulumi SDK loads TypeScript (about 53 MiB of memory and 0.15 CPU-s), which only its closure
// serializer uses, to parse the functions it serializes. Our dynamic resources carry provider text of
// their own (providers/providerModule.js), so a process of ours need not hold TypeScript: the SDK's
// TypeScript shim is registered as a module that loads the real one at its first use. A process that
// does serialize a closure still gets TypeScript, when it first needs it.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const Module = require("node:module");

/**
 * Registers the lazy shim for the @pulumi/pulumi that `root`'s package resolves; returns whether it did
 * (not when the SDK or its shim is missing, or the shim is loaded already).
 * @param {string} root
 * @returns {boolean}
 */
function deferTypeScript(root) {
  let shim;
  try {
    shim = path.join(path.dirname(Module.createRequire(path.join(root, "package.json")).resolve("@pulumi/pulumi")), "typescript-shim.js");
  } catch {
    return false;
  }
  const cache = /** @type {Record<string, Module>} */ (/** @type {unknown} */ (require.cache));
  if (!fs.existsSync(shim) || cache[shim]) return false;
  /** @type {Record<string | symbol, unknown> | undefined} */
  let ts;
  const real = () => {
    if (!ts) {
      // The SDK's own shim, compiled under another module record: it picks the project's TypeScript or its vendored one.
      const m = new Module(shim, undefined);
      m.filename = shim;
      m.paths = /** @type {{ _nodeModulePaths(dir: string): string[] }} */ (/** @type {unknown} */ (Module))._nodeModulePaths(path.dirname(shim));
      /** @type {{ _compile(content: string, filename: string): void }} */ (/** @type {unknown} */ (m))._compile(fs.readFileSync(shim, "utf8"), shim);
      ts = /** @type {Record<string | symbol, unknown>} */ (m.exports);
    }
    return ts;
  };
  const lazy = new Module(shim, undefined);
  lazy.filename = shim;
  lazy.loaded = true;
  lazy.exports = new Proxy({}, {
    get: (_t, k) => real()[k],
    has: (_t, k) => k in real(),
    // A write loads it too and goes to the real module: kept on the proxy's empty target it would be lost.
    set: (_t, k, v) => Reflect.set(real(), k, v),
    defineProperty: (_t, k, d) => Reflect.defineProperty(real(), k, d),
    deleteProperty: (_t, k) => Reflect.deleteProperty(real(), k),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor: (_t, k) => {
      const d = Reflect.getOwnPropertyDescriptor(real(), k);
      return d && { ...d, configurable: true };
    },
  });
  cache[shim] = lazy;
  return true;
}

/** Whether TypeScript has been loaded in this process (by the shim or anything else). */
function typeScriptLoaded() {
  return Object.keys(require.cache).some((f) => /[\\/]typescript[\\/]lib[\\/]typescript\.js$|[\\/]vendor[\\/]typescript@[^\\/]+[\\/]typescript\.js$/.test(f));
}

module.exports = { deferTypeScript, typeScriptLoaded };
