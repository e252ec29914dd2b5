// @ts-check
// The dynamic provider host our pulumi processes run (stack/toolchain.ts names it in
// PULUMI_DYNAMIC_PROVIDER_SCRIPT_PATH for the toolchain's shim): @pulumi/pulumi's own host, started after
// its TypeScript shim is deferred (lib/deferTypeScript.js). Our resources' provider text needs no
// TypeScript, so a host spares loading it on every update (about 0.15 CPU-s and 53 MiB).
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");
const { deferTypeScript } = require("../lib/deferTypeScript");

const root = path.resolve(__dirname, "..");
deferTypeScript(root);
require(createRequire(path.join(root, "package.json")).resolve("@pulumi/pulumi/cmd/dynamic-provider"));
