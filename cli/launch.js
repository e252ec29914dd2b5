#!/usr/bin/env node
// @ts-check
// Starts the operators' CLI (cli/main.ts) from one prebuilt bundle of its sources (lib/bundler.js), built
// into the toolchain cache the first time a version of the sources runs. A process started through
// ts-node carries TypeScript and swc for its whole life (about 85 MiB of memory) and transpiles a few
// hundred modules at every start; the bundle needs neither. Without esbuild, or when the build fails, the
// sources run through ts-node as before (with a warning).
"use strict";
const path = require("node:path");
const fs = require("node:fs");
const { buildBundle, bundleKey, cacheDir, CLI_INLINE_PACKAGES } = require("../lib/bundler");
const { deferTypeScript } = require("../lib/deferTypeScript");

const ROOT = path.resolve(__dirname, "..");
const ENTRY = "cli/main.ts";
/** Every directory cli/main.ts may import from (never lab/, tests/ or bench/). */
const SOURCE_DIRS = ["cli", "controller", "stack", "io", "program", "components", "providers", "clients", "config", "lib", "planner", "protos"];

/** @returns {Promise<string>} */
async function bundle() {
  const file = path.join(cacheDir(), "cli-bundle", `${bundleKey(ROOT, SOURCE_DIRS)}.js`);
  if (!fs.existsSync(file)) await buildBundle({ root: ROOT, entry: ENTRY, outFile: file, externalPackages: true, inlinePackages: CLI_INLINE_PACKAGES });
  return file;
}

async function launch() {
  /** @type {string | undefined} */
  let file;
  if (process.env.BMW_CLI_FROM_SOURCES !== "1") {
    file = await bundle().catch((err) => {
      process.emitWarning(`the CLI's bundle could not be built; running the sources through ts-node: ${String(err)}`);
      return undefined;
    });
  }
  if (!file) {
    process.env.TS_NODE_PROJECT ??= path.join(ROOT, "tsconfig.json");
    require("ts-node/register/transpile-only");
    file = path.join(ROOT, ENTRY);
  }
  deferTypeScript(ROOT);
  /** @type {{ main(argv: string[]): void }} */
  const cli = require(file);
  cli.main(process.argv);
}

if (require.main === module) void launch();

module.exports = { SOURCE_DIRS, bundle };
