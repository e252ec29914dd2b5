// @ts-check
// Prebuilt bundles of the project's TypeScript sources (esbuild), cached by a key of those sources under
// the toolchain cache. Plain JavaScript, typed by bundler.d.ts: the CLI's launcher (cli/launch.js) needs it
// before any TypeScript loader exists. Dependencies (node_modules) stay outside a bundle, so a process
// that loads one shares them, the Pulumi SDK's state included, with every other module.
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/** @param {NodeJS.ProcessEnv} env */
function cacheDir(env = process.env) {
  if (env.BMW_CACHE_DIR) return env.BMW_CACHE_DIR;
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "baremetal-workers");
}

/** @param {string} root @param {readonly string[]} dirs */
function sourceFiles(root, dirs) {
  /** @type {string[]} */
  const out = [];
  /** @param {string} dir */
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|js|proto)$/.test(e.name)) out.push(p);
    }
  };
  for (const d of dirs) if (fs.existsSync(path.join(root, d))) walk(path.join(root, d));
  return out.sort();
}

/** @param {string} root @param {readonly string[]} dirs */
function bundleKey(root, dirs) {
  const h = crypto.createHash("sha256");
  h.update(`${root}\0${require("esbuild/package.json").version}\0${process.versions.node.split(".")[0]}\0`);
  for (const f of [...sourceFiles(root, dirs), path.join(root, "package-lock.json")]) {
    h.update(`${path.relative(root, f)}\0`);
    h.update(fs.readFileSync(f));
    h.update("\0");
  }
  return h.digest("hex").slice(0, 20);
}

/**
 * A source's __dirname is where it lies, not where its bundle does (the protos are read from beside
 * protos/fulfillment.ts). With `refuse`, imports of packages matching it fail the build.
 * @param {RegExp | undefined} refuse @param {string} why
 * @returns {import("esbuild").Plugin}
 */
function sourcePlugin(refuse, why) {
  return {
    name: "source-dirname",
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => ({
        contents: fs.readFileSync(args.path, "utf8").replace(/\b__dirname\b/g, JSON.stringify(path.dirname(args.path))),
        loader: "ts",
      }));
      if (refuse) build.onResolve({ filter: refuse }, (args) => ({ errors: [{ text: `${args.importer} loads ${args.path}: ${why}` }] }));
    },
  };
}

/**
 * Every package import stays outside the bundle (resolved at run time) except those of `inline`, which are
 * bundled; their own imports of other packages stay outside too.
 * @param {readonly string[]} inline
 * @returns {import("esbuild").Plugin}
 */
function externalPackagesPlugin(inline) {
  return {
    name: "external-packages",
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        if (path.isAbsolute(args.path)) return undefined;
        const bundled = inline.some((p) => args.path === p || args.path.startsWith(`${p}/`));
        return bundled ? undefined : { path: args.path, external: true };
      });
    },
  };
}

/**
 * Builds `entry` (relative to `root`) into `outFile`, written whole and then renamed into place, so that
 * processes building the same key at once never read a partial file. With `externalPackages`, packages
 * are loaded from the project at run time, except those of `inlinePackages`.
 * @param {{ root: string, entry: string, outFile: string, externalPackages?: boolean, inlinePackages?: readonly string[],
 *   refuse?: RegExp, refuseWhy?: string }} o
 */
async function buildBundle(o) {
  /** @type {typeof import("esbuild")} */
  const esbuild = require("esbuild");
  const tmp = `${o.outFile}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`;
  fs.mkdirSync(path.dirname(o.outFile), { recursive: true });
  try {
    await esbuild.build({
      entryPoints: [path.join(o.root, o.entry)], outfile: tmp, bundle: true, platform: "node", format: "cjs",
      target: `node${process.versions.node.split(".")[0]}`, absWorkingDir: o.root, logLevel: "silent", legalComments: "none",
      plugins: [sourcePlugin(o.refuse, o.refuseWhy ?? "refused"), ...(o.externalPackages ? [externalPackagesPlugin(o.inlinePackages ?? [])] : [])],
      // The bundle lies in the cache: its packages are resolved from the project, as its sources' were. A
      // dynamic import() would resolve from the bundle's own path, so it becomes a require() as well.
      supported: o.externalPackages ? { "dynamic-import": false } : undefined,
      banner: o.externalPackages ? { js: `var require = require("node:module").createRequire(${JSON.stringify(path.join(o.root, "package.json"))});` } : undefined,
    });
    fs.renameSync(tmp, o.outFile);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/**
 * Packages the CLI's bundle holds rather than loading them from node_modules. client-node is over a thousand
 * ES modules (one per generated model): about 87 MiB of memory loaded one by one, about 38 MiB bundled.
 * Nothing outside the bundle uses it in the CLI's process, so no state is split between two copies.
 */
const CLI_INLINE_PACKAGES = Object.freeze(["@kubernetes/client-node"]);

module.exports = { bundleKey, buildBundle, cacheDir, CLI_INLINE_PACKAGES };
