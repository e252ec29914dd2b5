// Where the offline toolchain built by scripts/toolchain.sh lives. The versions come from
// scripts/versions.env so that the shell build and the TypeScript runtime can never disagree.
import * as fs from "node:fs";
import * as path from "node:path";
import { cacheDir } from "../lib/bundler";

export const PROJECT_ROOT = path.resolve(__dirname, "..");

export interface ToolchainVersions {
  pulumi: string;
  kubernetesProvider: string;
  kubernetes: string;
  etcd: string;
}

export interface Toolchain {
  versions: ToolchainVersions;
  cacheDir: string;
  /** Directory whose bin/ holds pulumi, pulumi-language-nodejs and the dynamic-provider shim. */
  pulumiRoot: string;
  /** PULUMI_HOME with the kubernetes resource plugin installed. */
  pulumiHome: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  etcd: string;
}

export function readVersions(file = path.join(PROJECT_ROOT, "scripts", "versions.env")): ToolchainVersions {
  const vars = new Map<string, string>();
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = /^\s*([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) vars.set(m[1], m[2].trim());
  }
  const get = (k: string): string => {
    const v = vars.get(k);
    if (!v) throw new Error(`${file} does not define ${k}`);
    return v;
  };
  return {
    pulumi: get("PULUMI_VERSION"),
    kubernetesProvider: get("KUBERNETES_PROVIDER_VERSION"),
    kubernetes: get("K8S_VERSION"),
    etcd: get("ETCD_VERSION"),
  };
}

/** BMW_CACHE_DIR, else baremetal-workers under XDG_CACHE_HOME (~/.cache). */
export { cacheDir };

export function toolchain(env: NodeJS.ProcessEnv = process.env): Toolchain {
  const versions = readVersions();
  const dir = cacheDir(env);
  return {
    versions,
    cacheDir: dir,
    pulumiRoot: path.join(dir, "pulumi", versions.pulumi),
    pulumiHome: path.join(dir, "pulumi-home"),
    kubeApiserver: path.join(dir, "kubernetes", versions.kubernetes, "kube-apiserver"),
    kubeControllerManager: path.join(dir, "kubernetes", versions.kubernetes, "kube-controller-manager"),
    etcd: path.join(dir, "etcd", versions.etcd, "etcd"),
  };
}

/** Fails with a message naming the missing piece and the command that builds it. */
export function assertToolchainBuilt(tc: Toolchain = toolchain()): void {
  const pieces: Array<[string, string]> = [
    ["pulumi CLI", path.join(tc.pulumiRoot, "bin", "pulumi")],
    ["pulumi-language-nodejs", path.join(tc.pulumiRoot, "bin", "pulumi-language-nodejs")],
    ["pulumi-resource-pulumi-nodejs shim", path.join(tc.pulumiRoot, "bin", "pulumi-resource-pulumi-nodejs")],
    [
      "pulumi-resource-kubernetes plugin",
      path.join(tc.pulumiHome, "plugins", `resource-kubernetes-v${tc.versions.kubernetesProvider}`),
    ],
    ["kube-apiserver", tc.kubeApiserver],
    ["kube-controller-manager", tc.kubeControllerManager],
    ["etcd", tc.etcd],
  ];
  const missing = pieces.filter(([, p]) => !fs.existsSync(p));
  if (missing.length > 0) {
    throw new Error(
      `toolchain incomplete: ${missing.map(([n, p]) => `${n} (${p})`).join(", ")}; ` +
        "build it with `npm run toolchain`",
    );
  }
}

/** Where the Pulumi processes' Node keeps its compile cache: BMW_NODE_COMPILE_CACHE, else in the toolchain cache. */
export function nodeCompileCacheDir(tc: Toolchain, env: NodeJS.ProcessEnv = process.env): string {
  return env.BMW_NODE_COMPILE_CACHE || path.join(tc.cacheDir, "node-compile-cache");
}

/** What the pulumi CLI's own debug logs may take in $PULUMI_HOME/logs (PULUMI_LOG_ROTATION_MAX_TOTAL_MB). */
export const PULUMI_LOGS_MAX_MB = 100;

/**
 * Environment for every pulumi process we start: offline, file backend, no plugin downloads,
 * and the project's Node first on PATH so the dynamic-provider shim runs the same Node as we do.
 */
export function pulumiEnv(tc: Toolchain, extra: Record<string, string> = {}): Record<string, string> {
  const nodeDir = path.dirname(process.execPath);
  return {
    PATH: [path.join(tc.pulumiRoot, "bin"), nodeDir, process.env.PATH ?? ""].join(path.delimiter),
    PULUMI_HOME: tc.pulumiHome,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_CREDENTIAL_STORE: "plaintext",
    PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER: "true",
    // The SDK's dynamic-provider host without TypeScript (providers/hostLaunch.js); named here, the shim also
    // need not start a node process on every update just to find the host's path.
    PULUMI_DYNAMIC_PROVIDER_SCRIPT_PATH: path.join(PROJECT_ROOT, "providers", "hostLaunch.js"),
    // Every update starts two Node processes (program, provider host) that load the same large modules;
    // Node's on-disk compile cache (keyed by file content) spares them most of the parsing each time.
    NODE_COMPILE_CACHE: nodeCompileCacheDir(tc),
    // Every pulumi command writes a debug log (encrypted once the stack's secrets provider is open) under
    // $PULUMI_HOME/logs and keeps 500 MB of them by default: about 65 KB per update, 8000 files after a
    // day of benches, and in a pod that is the container's ephemeral storage. 100 MB keeps the last
    // hour or so of a busy reconciler for a support case.
    PULUMI_LOG_ROTATION_MAX_TOTAL_MB: String(PULUMI_LOGS_MAX_MB),
    ...extra,
  };
}
