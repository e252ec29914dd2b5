// cli/launch.js runs the CLI from its prebuilt bundle (lib/bundler.js): built on first use into the cache,
// reused after, without TypeScript or swc in the process; every way of starting the CLI carries the same
// V8 heap bounds (cli/command.ts).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { cliCommand, NODE_HEAP_FLAGS } from "../../cli/command";
import { buildBundle, bundleKey } from "../../lib/bundler";
import { PROJECT_ROOT } from "../../stack/toolchain";

const LAUNCH = path.join(PROJECT_ROOT, "cli", "launch.js");
const { SOURCE_DIRS } = require(LAUNCH) as { SOURCE_DIRS: string[] };

describe("cli/launch.js", () => {
  let cache: string;
  let probe: string;
  beforeAll(() => {
    cache = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-launch-"));
    // At exit, the probe lists every module of a TypeScript loader the process had loaded.
    probe = path.join(cache, "probe.js");
    fs.writeFileSync(probe, `process.on("exit", () => process.stderr.write("LOADED " + JSON.stringify(Object.keys(require.cache)
      .filter((k) => /node_modules\\/(typescript|ts-node|@swc)\\//.test(k))) + "\\n"));`);
  });
  const loaded = (stderr: string): unknown => JSON.parse(/LOADED (.*)/.exec(stderr)?.[1] ?? "null");
  afterAll(() => fs.rmSync(cache, { recursive: true, force: true }));
  const launch = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, [LAUNCH, ...args], { cwd: os.tmpdir(), env: { ...process.env, BMW_CACHE_DIR: cache, ...env }, encoding: "utf8", timeout: 120_000 });

  it("builds the bundle into the cache and runs the CLI from it, without TypeScript, swc or ts-node loaded", () => {
    const r = launch(["--help"], { NODE_OPTIONS: `--require ${probe}` });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("preview <order>");
    expect(fs.existsSync(path.join(cache, "cli-bundle", `${bundleKey(PROJECT_ROOT, SOURCE_DIRS)}.js`))).toBe(true);
    expect(loaded(r.stderr)).toEqual([]);
  });

  it("runs the bundle the cache holds for the sources' key, and the sources through ts-node when asked", () => {
    const file = path.join(cache, "cli-bundle", `${bundleKey(PROJECT_ROOT, SOURCE_DIRS)}.js`);
    fs.writeFileSync(file, `exports.main = (argv) => console.log("stub bundle " + JSON.stringify(argv.slice(2)));`);
    expect(launch(["status", "x"]).stdout.trim()).toBe('stub bundle ["status","x"]');
    const fromSources = launch(["--help"], { BMW_CLI_FROM_SOURCES: "1", NODE_OPTIONS: `--require ${probe}` });
    expect(fromSources.status).toBe(0);
    expect(fromSources.stdout).toContain("preview <order>");
    expect(loaded(fromSources.stderr)).toEqual(expect.arrayContaining([expect.stringMatching(/node_modules\/ts-node\//)]));
    fs.rmSync(file);
  });

  it("a bundle lying outside the project resolves its packages from the project, dynamic imports included", async () => {
    const outFile = path.join(cache, "elsewhere", "fixture.js");
    await buildBundle({ root: path.join(PROJECT_ROOT, "tests", "fixtures", "bundle-root"), entry: "main.ts", outFile, externalPackages: true });
    const fixture = require(outFile) as { packagesLoaded(): Promise<string[]> };
    // __dirname is the source's directory, not the bundle's.
    expect(await fixture.packagesLoaded()).toEqual(["function", "function", "bundle-root"]);
  });

  it("bin/baremetal-workers, the image's entry point and the project's scripts start it with the same V8 heap flags", () => {
    const bin = fs.readFileSync(path.join(PROJECT_ROOT, "bin", "baremetal-workers"), "utf8");
    const exec = /^exec "\$node" (.*) "\$root\/cli\/launch\.js" "\$@"$/m.exec(bin);
    expect(exec?.[1].split(" ")).toEqual(NODE_HEAP_FLAGS);
    const containerfile = fs.readFileSync(path.join(PROJECT_ROOT, "deploy", "Containerfile"), "utf8");
    const entry: unknown = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(containerfile)?.[1] ?? "null");
    expect(entry).toEqual(["/usr/bin/tini", "--", "node", ...NODE_HEAP_FLAGS, "/app/cli/launch.js"]);
    expect(cliCommand(["run"]).args).toEqual([...NODE_HEAP_FLAGS, LAUNCH, "run"]);
  });
});
