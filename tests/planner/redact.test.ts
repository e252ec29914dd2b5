// The one redactor (planner/redact.ts): credentials by shape or key, and any fragment of a given secret
// (the ignition), raw or JSON-escaped, wherever and however partially a message quotes it.
import fc from "fast-check";
import { MIN_FRAGMENT, redact } from "../../planner/redact";

const IGNITION = JSON.stringify({
  ignition: { version: "3.4.0", config: { merge: [{ source: "https://assisted.example/ignition?token=QXNzaXN0ZWRQdWxsVG9rZW4xMjM0NTY3ODkw" }] } },
  passwd: { users: [{ name: "core", sshAuthorizedKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtlc3Q core@bastion"] }] },
});

describe("redact", () => {
  it("cuts a partial echo of a given secret, raw, JSON-escaped once or twice, and keeps the text around it", () => {
    const part = IGNITION.slice(40, 110);
    const once = JSON.stringify(part).slice(1, -1);
    const twice = JSON.stringify(once).slice(1, -1);
    for (const echo of [part, once, twice]) {
      const out = redact(`spec.user_data: invalid value "${echo}" for catalog item ci-missing`, [IGNITION]);
      expect(out).toContain("ci-missing");
      expect(out).toContain("[redacted]");
      for (let i = 0; i + MIN_FRAGMENT <= part.length; i++) expect(out).not.toContain(part.slice(i, i + MIN_FRAGMENT));
    }
  });

  it("leaves no run of MIN_FRAGMENT characters of the secret, in any quoted form, in the output (property)", () => {
    const secret = fc.string({ minLength: 24, maxLength: 200, unit: fc.constantFrom(..."abcXYZ019\"\\/:{}. -_\n") });
    fc.assert(fc.property(secret, fc.nat(), fc.nat(), fc.constantFrom(0, 1, 2), fc.string({ maxLength: 30 }), fc.string({ maxLength: 30 }),
      (s, a, b, escapes, before, after) => {
        const from = a % (s.length - MIN_FRAGMENT);
        const to = Math.min(s.length, from + MIN_FRAGMENT + (b % s.length));
        let echo = s.slice(from, to);
        for (let i = 0; i < escapes; i++) echo = JSON.stringify(echo).slice(1, -1);
        const out = redact(`${before}${echo}${after}`, [s]);
        let form = s;
        for (let i = 0; i < escapes; i++) form = JSON.stringify(form).slice(1, -1);
        for (let i = 0; i + MIN_FRAGMENT <= form.length; i++) {
          const gram = form.slice(i, i + MIN_FRAGMENT);
          if (!`${before}${after}`.includes(gram) && !gram.includes("[redacted]")) expect(out).not.toContain(gram);
        }
      }), { numRuns: 300 });
  });

  it("keeps text that shares only short runs with the secret, and ignores trivial secrets", () => {
    expect(redact("catalog item ci-missing does not exist", [IGNITION])).toBe("catalog item ci-missing does not exist");
    expect(redact("user data {} was refused", ["{}"])).toBe("user data {} was refused");
    expect(redact("value pullsecret1 is wrong", ["pullsecret1"])).toBe("value [redacted] is wrong");
  });

  it.each([
    ["Authorization: Bearer s3cr3t-t0ken", "s3cr3t-t0ken", "Authorization: Bearer [redacted]"],
    ["basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "basic [redacted]"],
    ["jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl here", "eyJhbGciOiJIUzI1NiJ9", "jwt [redacted] here"],
    ["token=abc123secret; next", "abc123secret", "token=[redacted]; next"],
    ['{\\"token\\":\\"abc123secret\\"}', "abc123secret", undefined],
    ["https://user:pa55w0rd@host/x", "pa55w0rd", "https://[redacted]@host/x"],
    ["source data:text/plain;base64,SGVsbG8= end", "SGVsbG8=", "source data:[redacted] end"],
    ["blob QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZn end", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZn", "blob [redacted] end"],
    ['doc {\\"ignition\\":{\\"version\\":\\"3.4.0\\"}} end', '\\"version\\"', "doc [document redacted] end"],
  ])("cuts credentials by shape or key: %s", (text, secret, expected) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    if (expected) expect(out).toBe(expected);
  });

  it("keeps resource names and ordinary words", () => {
    const text = "BareMetalInstance a-very-long-cluster-order-name-for-testing-0123456789-abcdef failed; metadata:labels unchanged";
    expect(redact(text)).toBe(text);
  });
});
