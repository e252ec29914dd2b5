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
const fromRoot = createRequire(path.join(root, "package.json"));
if (process.env.BMW_SHARED_PROVIDER_HOST === "1") shareAmongEngines();
endWithParent();
deferTypeScript(root);
require(fromRoot.resolve("@pulumi/pulumi/cmd/dynamic-provider"));

/**
 * One host for every update of a reconciler (stack/sharedProviderHost.ts). The engine attaches to a running
 * provider with an Attach call, which the SDK's host refuses (dynamic providers are never attached to), and
 * which it would use only for the engine's address, which it never uses; so Attach is accepted.
 */
function shareAmongEngines() {
  const fromSdk = createRequire(fromRoot.resolve("@pulumi/pulumi/package.json"));
  /** @type {typeof import("@grpc/grpc-js")} */
  const grpc = fromSdk("@grpc/grpc-js");
  const { Empty } = fromSdk("google-protobuf/google/protobuf/empty_pb");
  const addService = grpc.Server.prototype.addService;
  grpc.Server.prototype.addService = function (service, implementation) {
    const attach = /** @type {{ path?: string } | undefined} */ (service.attach);
    const impl = attach?.path === "/pulumirpc.ResourceProvider/Attach"
      ? Object.assign(Object.create(implementation), { attach: (/** @type {unknown} */ _call, /** @type {(e: null, r: unknown) => void} */ done) => done(null, new Empty()) })
      : implementation;
    return addService.call(this, service, impl);
  };
}

/**
 * The engine (a host per update) and the stack manager (a shared host) each give the host a pipe on stdin
 * and never write to it nor close it while they run: its end means they are gone, a kill -9 included.
 * Without this a host whose pulumi process was killed ran on, an orphan. Started without one (stdin a
 * terminal or /dev/null), the host runs as before.
 */
function endWithParent() {
  let pipe = false;
  try {
    const stdin = require("node:fs").fstatSync(0);
    pipe = stdin.isFIFO() || stdin.isSocket(); // Go's os.Pipe, Node's socketpair
  } catch {
    // no stdin at all
  }
  if (pipe) process.stdin.on("end", () => process.exit(0)).on("error", () => process.exit(0)).resume();
}
