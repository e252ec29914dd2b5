// One parser for every process's settings: a bad value names its variable, and the program side
// parses what the reconciler hands it to the same values the reconciler uses.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  checkProviderKubeconfig, programEnv, programSettings, providerSettings, reconcilerSettings, settings, SettingsError, kubeTimeoutMs,
} from "../../config/settings";
import { loopSettings } from "../../config/loopSettings";
import { defaultPlannerConfig } from "../../planner";
import { StackManager } from "../../stack/stacks";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-settings-"));
const file = (name: string, content = "x") => {
  const p = path.join(tmp, name);
  fs.writeFileSync(p, content);
  return p;
};
const KUBECONFIG = file("kubeconfig");
const TOKEN = file("token");
const CA = file("ca.pem");
const IGNITION_CA = file("ignition-ca.pem");
const PASSPHRASE = file("passphrase");
const MISSING = path.join(tmp, "missing");

/** A complete, valid environment of the reconciler. */
const base: Record<string, string> = {
  BMW_KUBECONFIG: KUBECONFIG,
  BMW_FULFILLMENT_ADDRESS: "127.0.0.1:8000",
  BMW_FULFILLMENT_TOKEN_FILE: TOKEN,
  BMW_FULFILLMENT_CA_FILE: CA,
  BMW_IGNITION_CA_FILE: IGNITION_CA,
  PULUMI_CONFIG_PASSPHRASE_FILE: PASSPHRASE,
};
const without = (key: string) => Object.fromEntries(Object.entries(base).filter(([k]) => k !== key));

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe("programSettings", () => {
  it("reads the connection's file paths", () => {
    expect(programSettings(base)).toEqual({
      kubeconfigPath: KUBECONFIG,
      fulfillment: { address: "127.0.0.1:8000", tokenFile: TOKEN, caFile: CA, plaintext: false },
      ignitionCaFile: IGNITION_CA,
    });
  });

  it("falls back to KUBECONFIG and accepts plaintext without a CA for a loopback lab", () => {
    const env = { ...without("BMW_KUBECONFIG"), KUBECONFIG, BMW_FULFILLMENT_CA_FILE: "", BMW_FULFILLMENT_PLAINTEXT: "TRUE" };
    const s = programSettings(env);
    expect(s.kubeconfigPath).toBe(KUBECONFIG);
    expect(s.fulfillment).toEqual({ address: "127.0.0.1:8000", tokenFile: TOKEN, caFile: undefined, plaintext: true });
  });

  it.each([
    ["no kubeconfig", without("BMW_KUBECONFIG"), /BMW_KUBECONFIG \(or KUBECONFIG\) must name/],
    ["no token file", without("BMW_FULFILLMENT_TOKEN_FILE"), /^BMW_FULFILLMENT_TOKEN_FILE is not set: the file holding the fulfillment-service token$/],
    ["a missing token file", { ...base, BMW_FULFILLMENT_TOKEN_FILE: MISSING }, /^BMW_FULFILLMENT_TOKEN_FILE .*missing does not exist$/],
    ["neither CA nor plaintext", without("BMW_FULFILLMENT_CA_FILE"), /BMW_FULFILLMENT_CA_FILE must name the CA bundle/],
    ["plaintext false and no CA", { ...without("BMW_FULFILLMENT_CA_FILE"), BMW_FULFILLMENT_PLAINTEXT: "no" }, /BMW_FULFILLMENT_CA_FILE must name/],
    ["a plaintext flag that is no boolean", { ...base, BMW_FULFILLMENT_PLAINTEXT: "on" }, /^BMW_FULFILLMENT_PLAINTEXT="on" is not a boolean/],
    ["no address", without("BMW_FULFILLMENT_ADDRESS"), /^BMW_FULFILLMENT_ADDRESS is not set/],
    ["a missing kubeconfig file", { ...base, BMW_KUBECONFIG: MISSING }, /^BMW_KUBECONFIG .*missing does not exist$/],
    ["a missing KUBECONFIG file", { ...without("BMW_KUBECONFIG"), KUBECONFIG: MISSING }, /^KUBECONFIG .*missing does not exist$/],
    ["a missing CA file", { ...base, BMW_FULFILLMENT_CA_FILE: MISSING }, /^BMW_FULFILLMENT_CA_FILE .*missing does not exist$/],
    ["a missing ignition CA file", { ...base, BMW_IGNITION_CA_FILE: MISSING }, /^BMW_IGNITION_CA_FILE .*missing does not exist$/],
  ])("refuses %s, naming the variable", (_what, env, message) => {
    expect(() => programSettings(env)).toThrow(SettingsError);
    expect(() => programSettings(env)).toThrow(message);
  });
});

describe("numbers and durations", () => {
  it.each([
    // variable, value, what the reconciler gets (or the error)
    ["BMW_REFRESH_INTERVAL_MS", undefined, { refreshIntervalMs: 3_600_000 }],
    ["BMW_REFRESH_INTERVAL_MS", "", { refreshIntervalMs: 3_600_000 }],
    ["BMW_REFRESH_INTERVAL_MS", "0", { refreshIntervalMs: 0 }],
    ["BMW_REFRESH_INTERVAL_MS", " 60000 ", { refreshIntervalMs: 60_000 }],
    ["BMW_REFRESH_INTERVAL_MS", "1h", /^BMW_REFRESH_INTERVAL_MS="1h" is not a non-negative integer$/],
    ["BMW_REFRESH_INTERVAL_MS", "-5", /^BMW_REFRESH_INTERVAL_MS="-5" is not a non-negative integer$/],
    ["BMW_REFRESH_INTERVAL_MS", "1e3", /BMW_REFRESH_INTERVAL_MS="1e3"/],
    ["BMW_RESYNC_INTERVAL_MS", undefined, { resyncIntervalMs: 600_000 }],
    ["BMW_RESYNC_INTERVAL_MS", "0", { resyncIntervalMs: 0 }],
    ["BMW_RESYNC_INTERVAL_MS", "120000", { resyncIntervalMs: 120_000 }],
    ["BMW_RESYNC_INTERVAL_MS", "10m", /^BMW_RESYNC_INTERVAL_MS="10m" is not a non-negative integer$/],
    ["BMW_MEMORY_TRIM_INTERVAL_MS", undefined, { memoryTrimIntervalMs: 60_000 }],
    ["BMW_MEMORY_TRIM_INTERVAL_MS", "0", { memoryTrimIntervalMs: 0 }],
    ["BMW_MEMORY_TRIM_INTERVAL_MS", "-1", /^BMW_MEMORY_TRIM_INTERVAL_MS="-1" is not a non-negative integer$/],
    ["BMW_BMI_RELIST_INTERVAL_MS", undefined, { bmiRelistIntervalMs: 600_000 }],
    ["BMW_BMI_RELIST_INTERVAL_MS", "0", { bmiRelistIntervalMs: 0 }],
    ["BMW_BMI_RELIST_INTERVAL_MS", "5m", /^BMW_BMI_RELIST_INTERVAL_MS="5m" is not a non-negative integer$/],
    ["BMW_PROGRAM_MODE", undefined, { programMode: "inline" }],
    ["BMW_PROGRAM_MODE", "process", { programMode: "process" }],
    ["BMW_PROGRAM_MODE", "Inline", /^BMW_PROGRAM_MODE="Inline" is not one of inline, process$/],
    ["BMW_PROVIDER_HOST", undefined, { providerHost: "shared" }],
    ["BMW_PROVIDER_HOST", "per-update", { providerHost: "per-update" }],
    ["BMW_PROVIDER_HOST", "one", /^BMW_PROVIDER_HOST="one" is not one of shared, per-update$/],
    ["BMW_PROGRESS_REPORT_MS", undefined, { progressReportMs: 10_000 }],
    ["BMW_PROGRESS_REPORT_MS", "6000", { progressReportMs: 6000 }],
    ["BMW_PROGRESS_REPORT_MS", "soon", /^BMW_PROGRESS_REPORT_MS="soon"/],
    ["BMW_HISTORY_RETENTION", undefined, { historyRetention: 100 }],
    ["BMW_HISTORY_RETENTION", "5", { historyRetention: 5 }],
    ["BMW_HISTORY_RETENTION", "0", /^BMW_HISTORY_RETENTION="0" must be a positive integer$/],
    ["BMW_HISTORY_RETENTION", "2.5", /^BMW_HISTORY_RETENTION="2.5" is not a positive integer$/],
    ["BMW_KUBE_TIMEOUT_MS", undefined, { kubeTimeoutMs: 30_000 }],
    ["BMW_KUBE_TIMEOUT_MS", "5000", { kubeTimeoutMs: 5000 }],
    ["BMW_KUBE_TIMEOUT_MS", "0", /^BMW_KUBE_TIMEOUT_MS="0" must be a positive integer$/],
    ["BMW_KUBE_TIMEOUT_MS", "99999999999999999999", /^BMW_KUBE_TIMEOUT_MS=.* is too large$/],
    ["BMW_FULFILLMENT_DEADLINE_MS", undefined, { provider: { hubKubeconfigPath: KUBECONFIG } }],
    ["BMW_FULFILLMENT_DEADLINE_MS", "3000", { provider: { fulfillmentDeadlineMs: 3000, hubKubeconfigPath: KUBECONFIG } }],
    ["BMW_FULFILLMENT_DEADLINE_MS", "0", /^BMW_FULFILLMENT_DEADLINE_MS="0" must be a positive integer$/],
    ["BMW_FULFILLMENT_DEADLINE_MS", "fast", /^BMW_FULFILLMENT_DEADLINE_MS="fast" is not a positive integer$/],
    ["BMW_AGENT_REGISTRATION_TIMEOUT_MS", "600000", { planner: { ...defaultPlannerConfig(), agentRegistrationTimeoutMs: 600_000 } }],
    ["BMW_AGENT_REGISTRATION_TIMEOUT_MS", "ten", /BMW_AGENT_REGISTRATION_TIMEOUT_MS/],
    ["BMW_AGENT_REGISTRATION_TIMEOUT_MS", "", { planner: defaultPlannerConfig() }],
  ])("%s=%j", (variable, value, expected) => {
    const env = value === undefined ? base : { ...base, [variable]: value };
    if (expected instanceof RegExp) {
      expect(() => reconcilerSettings(env)).toThrow(expected);
    } else {
      expect(reconcilerSettings(env)).toMatchObject(expected);
    }
  });

  it("gives the provider host the same deadline and hub kubeconfig as the reconciler", () => {
    const env = { ...base, BMW_FULFILLMENT_DEADLINE_MS: "3000" };
    expect(providerSettings(env)).toEqual(reconcilerSettings(env).provider);
    expect(providerSettings({ KUBECONFIG })).toEqual({ hubKubeconfigPath: KUBECONFIG });
    expect(providerSettings({})).toEqual({});
    expect(kubeTimeoutMs({})).toBe(30_000);
  });

  it("StackManager reads BMW_HISTORY_RETENTION of its program environment with the same rule", () => {
    const stateDir = path.join(tmp, "state");
    expect(() => new StackManager({ stateDir, passphraseFile: PASSPHRASE, envVars: { BMW_HISTORY_RETENTION: "lots" } }))
      .toThrow(/^BMW_HISTORY_RETENTION="lots" is not a positive integer$/);
    expect(new StackManager({ stateDir, passphraseFile: PASSPHRASE, envVars: { BMW_HISTORY_RETENTION: "7" } }).historyRetention).toBe(7);
  });
});

describe("reconcilerSettings", () => {
  it("takes the state location from the flags before the environment", () => {
    const env = { ...base, BMW_STATE_DIR: "/var/lib/bmw/state", BMW_WORK_DIR: "/var/lib/bmw/work" };
    expect(reconcilerSettings(env)).toMatchObject({ stateDir: "/var/lib/bmw/state", workDir: "/var/lib/bmw/work", passphraseFile: PASSPHRASE });
    const other = file("other-passphrase");
    expect(reconcilerSettings(env, { stateDir: "/tmp/s", backendUrl: "s3://bucket", passphraseFile: other }))
      .toMatchObject({ stateDir: "/tmp/s", backendUrl: "s3://bucket", passphraseFile: other });
  });

  it("reads the backend URL from BMW_BACKEND_URL_FILE (a Secret's), a flag first; an empty or missing file stops it", () => {
    const url = file("backend-url", "postgres://bmw:s3cret@db.example:5432/pulumi?sslmode=verify-full\n");
    expect(reconcilerSettings({ ...base, BMW_BACKEND_URL_FILE: url }).backendUrl).toBe("postgres://bmw:s3cret@db.example:5432/pulumi?sslmode=verify-full");
    expect(reconcilerSettings({ ...base, BMW_BACKEND_URL_FILE: url }, { backendUrl: "file:///tmp/x" }).backendUrl).toBe("file:///tmp/x");
    expect(() => reconcilerSettings({ ...base, BMW_BACKEND_URL_FILE: file("empty-url", "\n") })).toThrow(/^BMW_BACKEND_URL_FILE .* is empty$/);
    expect(() => reconcilerSettings({ ...base, BMW_BACKEND_URL_FILE: MISSING })).toThrow(/^BMW_BACKEND_URL_FILE .*missing does not exist$/);
  });

  it("defaults the state directory under XDG_STATE_HOME and leaves the passphrase to be generated", () => {
    const s = reconcilerSettings({ ...without("PULUMI_CONFIG_PASSPHRASE_FILE"), XDG_STATE_HOME: "/x" });
    expect(s.stateDir).toBe("/x/baremetal-workers/state");
    expect(s.passphraseFile).toBeUndefined();
    expect(s.workDir).toBeUndefined();
    expect(s.backendUrl).toBeUndefined();
  });

  it.each([
    ["PULUMI_CONFIG_PASSPHRASE_FILE", { ...base, PULUMI_CONFIG_PASSPHRASE_FILE: MISSING }, {}],
    ["--passphrase-file", base, { passphraseFile: MISSING }],
  ])("refuses a missing passphrase file given by %s", (name, env, flags) => {
    expect(() => reconcilerSettings(env, flags)).toThrow(new RegExp(`^${name} .*missing does not exist$`));
  });
});

describe("programEnv", () => {
  it("hands the program every BMW_* setting and no other variable, with an absolute kubeconfig", () => {
    const env = { ...base, BMW_KUBECONFIG: path.relative(process.cwd(), KUBECONFIG), BMW_REFRESH_INTERVAL_MS: "0", BMW_EMPTY: "", HOME: "/root" };
    const out = programEnv(programSettings(env), env);
    expect(out.BMW_KUBECONFIG).toBe(KUBECONFIG);
    expect(out.KUBECONFIG).toBe(KUBECONFIG); // for the Kubernetes provider, which has no kubeconfig of its own
    expect(Object.keys(out).sort()).toEqual(["BMW_FULFILLMENT_ADDRESS", "BMW_FULFILLMENT_CA_FILE", "BMW_FULFILLMENT_TOKEN_FILE",
      "BMW_IGNITION_CA_FILE", "BMW_KUBECONFIG", "BMW_REFRESH_INTERVAL_MS", "KUBECONFIG"]);
    expect(() => checkProviderKubeconfig(programSettings(out), out)).not.toThrow();
    expect(Object.keys(out)).not.toContain("PULUMI_CONFIG_PASSPHRASE_FILE");
  });

  it("makes the program parse the same settings as the reconciler", () => {
    const env = { ...base, BMW_FULFILLMENT_DEADLINE_MS: "3000", BMW_KUBE_TIMEOUT_MS: "5000", BMW_TRANSIENT_BACKOFF_MS: "1000,2000",
      BMW_MIN_HEALTHY_DURATION_MS: "", BMW_PROGRESS_REPORT_MS: "" };
    const r = reconcilerSettings(env);
    const program = settings(programEnv(r.program, env));
    expect(program).toEqual({ program: r.program, planner: r.planner, provider: r.provider, kubeTimeoutMs: r.kubeTimeoutMs });
  });
});

describe("loopSettings", () => {
  it("applies the defaults, and runs at least as many reconciles as updates at once", () => {
    expect(loopSettings({})).toEqual({ namespaces: [], intervalMs: 60_000, concurrency: 4, reconcileConcurrency: 16, healthPort: 8080,
      healthHost: "127.0.0.1", leaseNamespace: "bmw-system", identity: undefined, mode: "act", leaseDurationSeconds: 15 });
    expect(loopSettings({ mode: "observe" }).mode).toBe("observe");
    expect(loopSettings({ shards: 3, leaseDuration: 9 })).toMatchObject({ shards: 3, leaseDurationSeconds: 9 });
    expect(() => loopSettings({ shards: 0 })).toThrow(/^--shards must be a positive integer, got 0$/);
    expect(() => loopSettings({ shards: 2, mode: "observe" })).toThrow(/--shards applies to --mode act only/);
    expect(() => loopSettings({ leaseDuration: 1.5 })).toThrow(/^--lease-duration must be a positive integer/);
    expect(() => loopSettings({ leaseDuration: 3 })).toThrow(/^--lease-duration must be at least 4 seconds/);
    expect(() => loopSettings({ mode: "watch" })).toThrow(/--mode must be act or observe/);
    expect(loopSettings({ concurrency: 32 }).reconcileConcurrency).toBe(32);
    expect(loopSettings({ interval: 0.5, namespace: ["a"] })).toMatchObject({ intervalMs: 500, namespaces: ["a"] });
  });

  it.each([
    [{ interval: Number.NaN }, /^--interval must be a positive number of seconds, got NaN$/],
    [{ interval: 0 }, /^--interval must be/],
    [{ concurrency: 0 }, /^--concurrency must be a positive integer, got 0$/],
    [{ concurrency: 1.5 }, /^--concurrency must be a positive integer/],
    [{ reconcileConcurrency: -1 }, /^--reconcile-concurrency must be a positive integer/],
    [{ healthPort: 70_000 }, /^--health-port must be a port number/],
  ])("refuses %j", (flags, message) => {
    expect(() => loopSettings(flags)).toThrow(message);
  });
});

describe("checkProviderKubeconfig", () => {
  const other = path.join(path.dirname(KUBECONFIG), "other-kubeconfig");
  it.each([
    ["KUBECONFIG alone", { ...without("BMW_KUBECONFIG"), KUBECONFIG }],
    ["both naming the same file, one of them relative", { ...base, KUBECONFIG: path.relative(process.cwd(), KUBECONFIG) }],
  ])("accepts %s", (_name, env) => {
    expect(() => checkProviderKubeconfig(programSettings(env), env)).not.toThrow();
  });

  it.each([
    ["BMW_KUBECONFIG without KUBECONFIG", base, /KUBECONFIG \(unset\) must name the hub's kubeconfig/],
    ["KUBECONFIG naming another file", { ...base, KUBECONFIG: other }, /KUBECONFIG \(.*other-kubeconfig\) must name/],
  ])("refuses %s: the provider would reach another hub than the program observes", (_name, env, message) => {
    expect(() => checkProviderKubeconfig(programSettings(env), env)).toThrow(message);
  });
});
