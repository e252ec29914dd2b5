// A failed stack update as the ClusterOrder shows it (issue 15, finding 12): the reason read from the
// provider's markers, the telling line of the engine's output, and never a secret.
import fc from "fast-check";
import { failureEvents } from "../../controller/reconcile";
import { PulumiCommandError } from "../../stack/pulumiProcess";
import { describeUpdateFailure, MAX_FAILURE_MESSAGE, relevantLine } from "../../controller/updateFailure";
import { redact } from "../../planner/redact";
import { formatCreateRejection } from "../../providers/createRejection";
import { formatDeleteRefusal } from "../../providers/deleteRefusal";

const WHICH = "update of stack ns--co started 2026-01-01T00:00:00.000Z";

function engineError(stdout: string, stderr = ""): PulumiCommandError {
  return new PulumiCommandError({ code: 255, stdout, stderr }, ["up"]);
}

describe("describeUpdateFailure", () => {
  it("names a refused delete and its slot (DeleteRefused), with one Warning event per slot", () => {
    const out = [
      "Updating (ns--co):",
      "  pulumi-nodejs:dynamic:Resource (co-abc):",
      `    error: ${formatDeleteRefusal({ slot: "slot-1", bmiName: "co-abc", reason: "worker slot-1 is Ready and was not retired" })}`,
      "error: update failed",
    ].join("\n");
    const f = describeUpdateFailure(engineError(out), WHICH);
    expect(f.reason).toBe("DeleteRefused");
    expect(f.message).toContain("slot-1");
    expect(f.message).toContain("co-abc");
    expect(f.message.startsWith(`${WHICH} failed: `)).toBe(true);
    const events = failureEvents(f);
    expect(events.map((e) => [e.type, e.reason])).toEqual([["Warning", "UpdateFailed"], ["Warning", "DeleteRefused"]]);
    expect(events[1].message).toContain("worker slot-1");
  });

  it("carries a definitive Create rejection to the planner (CreateRejected)", () => {
    const out = `    error: ${formatCreateRejection({ bmiName: "co-x1", code: "INVALID_ARGUMENT", message: "spec.catalog_item: not found" })}\n`;
    const f = describeUpdateFailure(engineError(out), WHICH);
    expect(f.reason).toBe("CreateRejected");
    expect(f.createRejections).toEqual([{ bmiName: "co-x1", code: "INVALID_ARGUMENT", message: "spec.catalog_item: not found" }]);
    expect(f.message).toContain("co-x1");
  });

  it("reads the marker from the whole output, even when the message keeps only its tail", () => {
    const noise = Array.from({ length: 400 }, (_, i) => `    info: step ${i} done`).join("\n");
    const out = `    error: ${formatCreateRejection({ bmiName: "co-x2", code: "FAILED_PRECONDITION", message: "no" })}\n${noise}`;
    expect(engineError(out).message).not.toContain("co-x2");
    expect(describeUpdateFailure(engineError(out), WHICH).createRejections.map((r) => r.bmiName)).toEqual(["co-x2"]);
  });

  it("reports any other engine error by its telling line (EngineError), not by 'update failed'", () => {
    const out = [
      "Updating (ns--co):",
      "Diagnostics:",
      "  pulumi:pulumi:Stack (bmw-ns--co):",
      "    error: the checkpoint for stack 'ns--co' is corrupt: unexpected end of JSON input",
      "error: update failed",
    ].join("\n");
    const f = describeUpdateFailure(engineError(out), WHICH);
    expect(f.reason).toBe("EngineError");
    expect(f.detail).toBe("the checkpoint for stack 'ns--co' is corrupt: unexpected end of JSON input");
    expect(relevantLine("error: update failed\nerror: boom")).toBe("boom");
  });

  it("recognises a stack held by another operation (StackLocked)", () => {
    const f = describeUpdateFailure(engineError("", "error: the stack is currently locked by 1 lock(s)"), WHICH);
    expect(f.reason).toBe("StackLocked");
  });

  it("keeps the message bounded", () => {
    const f = describeUpdateFailure(new Error(`error: ${"x ".repeat(5000)}`), WHICH);
    expect(f.message.length).toBeLessThanOrEqual(MAX_FAILURE_MESSAGE);
  });

  it("never carries a token, a JWT or an ignition, wherever the engine quotes them (property)", () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9]{24,48}$/).filter((s) => /[A-Z]/.test(s) && /[a-z]/.test(s) && /[0-9]/.test(s));
    fc.assert(fc.property(secret, fc.constantFrom("bearer", "jwt", "kv", "ignition", "userData"), fc.string({ maxLength: 40 }),
      (token, form, around) => {
        const quoted = {
          bearer: `authorization: Bearer ${token}`,
          jwt: `eyJhbGciOiJIUzI1NiJ9.${token}.sig`,
          kv: `token=${token}`,
          ignition: `{"ignition":{"version":"3.4.0"},"passwd":{"users":[{"sshAuthorizedKeys":["${token}"]}]}}`,
          userData: `user_data: "${token}"`,
        }[form];
        const f = describeUpdateFailure(engineError(`    error: create failed ${around} ${quoted} ${around}\nerror: update failed`), WHICH);
        return !f.message.includes(token) && !f.detail.includes(token) && !failureEvents(f).some((e) => e.message.includes(token));
      }), { numRuns: 300 });
  });

  it("cuts an ignition document the engine quotes JSON-escaped, even when its secrets look like plain words", () => {
    const doc = JSON.stringify(JSON.stringify({ ignition: { version: "3.4.0" }, passwd: { users: [{ name: "core", passwordHash: "core-user-passphrase-value" }] } })).slice(1, -1);
    const f = describeUpdateFailure(engineError(`    error: BareMetalInstances/Create: INVALID_ARGUMENT: user_data ${doc} is invalid\nerror: update failed`), WHICH);
    expect(f.message).not.toContain("core-user-passphrase-value");
    expect(f.message).toContain("is invalid");
  });

  it("keeps resource names, even long ones", () => {
    const name = "a-very-long-cluster-order-name-for-testing-0123456789-abcdef";
    expect(redact(`BareMetalInstance ${name} failed`)).toContain(name);
  });
});
