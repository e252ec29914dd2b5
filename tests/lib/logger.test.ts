// Structured logs: one JSON object per line, and no secret value anywhere in them, whatever the
// nesting or the spelling of the key.
import { Writable } from "node:stream";
import { createLogger, isSecretKey, REDACTED, redactSecrets } from "../../lib/logger";

function capture(): { lines: () => Record<string, unknown>[]; stream: Writable } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString());
      cb();
    },
  });
  return { stream, lines: () => chunks.join("").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe("logger", () => {
  it("writes JSON lines with level, time, name and message", () => {
    const c = capture();
    const log = createLogger({ destination: c.stream, level: "debug", base: { replica: "r0" } });
    log.info({ order: "ns/a" }, "reconciled");
    log.debug("tick");
    const [first, second] = c.lines();
    expect(first).toMatchObject({ level: "info", name: "baremetal-workers", replica: "r0", order: "ns/a", msg: "reconciled" });
    expect(typeof first.time).toBe("string");
    expect(second).toMatchObject({ level: "debug", msg: "tick" });
  });

  it("redacts secret-looking keys at any depth, in child bindings and in errors", () => {
    const c = capture();
    const log = createLogger({ destination: c.stream });
    const secrets = ["tok-123", "pull-456", "ign-789", "ud-000", "pass-111", "bearer-222", "grandchild-333"];
    log.child({ token: secrets[0] }).info({
      order: { spec: { pullSecret: secrets[1], nodeRequests: [{ nodeSet: "a" }] } },
      bmi: { spec: { user_data: secrets[3], ignition: { content: secrets[2] } } },
      settings: { passphrase: secrets[4], passphraseFile: "/etc/bmw/passphrase", pullSecretName: "a-pull-secret" },
    }, "observed");
    const err = Object.assign(new Error("call failed"), { authorization: secrets[5] });
    log.error({ err }, "failed");
    log.child({ order: "ns/a" }).child({ hub: { accessToken: secrets[6] } }).warn("nested child");
    const text = c.lines().map((l) => JSON.stringify(l)).join("\n");
    for (const s of secrets) expect(text).not.toContain(s);
    const [observed, failed, nested] = c.lines();
    expect(nested).toMatchObject({ order: "ns/a", hub: { accessToken: REDACTED }, msg: "nested child" });
    expect(observed).toMatchObject({
      token: REDACTED,
      order: { spec: { pullSecret: REDACTED, nodeRequests: [{ nodeSet: "a" }] } },
      bmi: { spec: { user_data: REDACTED, ignition: REDACTED } },
      // a file path or a name is not the secret itself
      settings: { passphrase: REDACTED, passphraseFile: "/etc/bmw/passphrase", pullSecretName: "a-pull-secret" },
    });
    expect(failed).toMatchObject({ err: { message: "call failed", authorization: REDACTED } });
  });

  it("classifies keys and cuts cycles", () => {
    expect(["token", "accessToken", "pull_secret", "userData", "ignition", "PULUMI_CONFIG_PASSPHRASE", "password"].every(isSecretKey)).toBe(true);
    expect(["tokenFile", "ignitionBytes", "name", "namespace", "nodeSet"].some(isSecretKey)).toBe(false);
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    expect(redactSecrets(a)).toEqual({ x: 1, self: "[Circular]" });
  });
});
