// scripts/toolchain.sh on a machine that already has the pinned tools: it links them into an empty cache
// instead of building, and refuses a tool of another version (it would then build, which is not run here).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PROJECT_ROOT, toolchain } from "../../stack/toolchain";

const built = toolchain();
const script = path.join(PROJECT_ROOT, "scripts", "toolchain.sh");

/** A machine layout: the release's CLI dir on PATH, a PULUMI_HOME with the plugin, envtest assets. */
function fakeMachine(root: string): { env: NodeJS.ProcessEnv; cache: string } {
  const bin = path.join(root, "pulumi-release");
  const assets = path.join(root, "kubebuilder-assets");
  const plugin = path.join(root, "pulumi-home", "plugins", `resource-kubernetes-v${built.versions.kubernetesProvider}`);
  for (const d of [bin, assets, plugin]) fs.mkdirSync(d, { recursive: true });
  fs.symlinkSync(path.join(built.pulumiRoot, "bin", "pulumi"), path.join(bin, "pulumi"));
  fs.symlinkSync(path.join(built.pulumiRoot, "bin", "pulumi-language-nodejs"), path.join(bin, "pulumi-language-nodejs"));
  fs.symlinkSync(path.join(built.pulumiHome, "plugins", `resource-kubernetes-v${built.versions.kubernetesProvider}`, "pulumi-resource-kubernetes"),
    path.join(plugin, "pulumi-resource-kubernetes"));
  fs.symlinkSync(built.kubeApiserver, path.join(assets, "kube-apiserver"));
  fs.symlinkSync(built.kubeControllerManager, path.join(assets, "kube-controller-manager"));
  fs.symlinkSync(built.etcd, path.join(assets, "etcd"));
  const cache = path.join(root, "cache");
  return {
    cache,
    env: {
      ...process.env, BMW_CACHE_DIR: cache, KUBEBUILDER_ASSETS: assets, PULUMI_HOME: path.join(root, "pulumi-home"),
      PATH: `${bin}:${process.env.PATH}`, HOME: root,
    },
  };
}

describe("toolchain.sh uses the pinned tools a machine already has", () => {
  let root: string;
  beforeEach(() => { root = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-adopt-")); });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it("links every piece into an empty cache without building any", () => {
    const { env, cache } = fakeMachine(root);
    const r = spawnSync("bash", [script, "all"], { env, encoding: "utf8", timeout: 120_000 });
    expect(r.status).toBe(0);
    expect(r.stderr).not.toMatch(/\bbuilding\b/);
    for (const piece of ["pulumi", "pulumi-language-nodejs", "pulumi-resource-kubernetes", "kube-apiserver", "kube-controller-manager", "etcd"]) {
      expect(r.stderr).toContain(`${piece}: using `);
    }
    const tc = toolchain({ BMW_CACHE_DIR: cache });
    expect(fs.realpathSync(path.join(tc.pulumiRoot, "bin", "pulumi"))).toBe(fs.realpathSync(path.join(built.pulumiRoot, "bin", "pulumi")));
    expect(fs.realpathSync(tc.kubeApiserver)).toBe(fs.realpathSync(built.kubeApiserver));
    expect(fs.realpathSync(tc.etcd)).toBe(fs.realpathSync(built.etcd));
    // The plugin is installed into the project's own PULUMI_HOME, where the engine looks for it.
    expect(fs.existsSync(path.join(tc.pulumiHome, "plugins", `resource-kubernetes-v${tc.versions.kubernetesProvider}`, "pulumi-resource-kubernetes"))).toBe(true);
    // Run again: everything is present, nothing is linked twice.
    const again = spawnSync("bash", [script, "all"], { env, encoding: "utf8", timeout: 120_000 });
    expect(again.status).toBe(0);
    expect(again.stderr).not.toContain(": using ");
  }, 180_000);

  it("does not take a pulumi CLI of another version", () => {
    const { env, cache } = fakeMachine(root);
    const other = path.join(root, "other-pulumi");
    fs.mkdirSync(other);
    // A CLI that reports another version, first on PATH.
    fs.writeFileSync(path.join(other, "pulumi"), "#!/bin/sh\necho v3.1.0\n", { mode: 0o755 });
    fs.rmSync(path.join(root, "pulumi-release", "pulumi"));
    const r = spawnSync("bash", ["-c", `source <(sed -n '/^adopt()/,/^}/p;/_is_pinned()/p' ${script}); ` +
      `LOGS=${cache}/logs; log() { echo "$*" >&2; }; mkdir -p ${cache}/bin; ` +
      `adopt pulumi ${cache}/bin/pulumi pulumi_is_pinned ${other}/pulumi && echo ADOPTED || echo REFUSED`],
    { env: { ...env, PULUMI_VERSION: built.versions.pulumi, K8S_VERSION: built.versions.kubernetes, ETCD_VERSION: built.versions.etcd }, encoding: "utf8" });
    expect(r.stdout.trim()).toBe("REFUSED");
    expect(fs.existsSync(path.join(cache, "bin", "pulumi"))).toBe(false);
  });
});
