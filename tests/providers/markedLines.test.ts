// The marked lines the BMI provider throws (Create rejection, Delete refusal) read back from any engine
// output, and a rejection's server text carries no part of the ignition however the server echoes it.
import fc from "fast-check";
import { FailedPreconditionError, InvalidArgumentError } from "../../clients/fulfillment";
import { createRejectionOf } from "../../providers/bareMetalInstanceOps";
import { formatCreateRejection, parseCreateRejections } from "../../providers/createRejection";
import { formatDeleteRefusal, parseDeleteRefusals } from "../../providers/deleteRefusal";

const name = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/);
const message = fc.string({ maxLength: 60 }).map((s) => s.replace(/\n/g, " ").trim());

describe("marked lines", () => {
  it("keep their wire format", () => {
    expect(formatCreateRejection({ bmiName: "co-x1", code: "INVALID_ARGUMENT", message: "bad\n  item" }))
      .toBe("[bmw:create-rejected name=co-x1 code=INVALID_ARGUMENT] bad item");
    expect(formatDeleteRefusal({ slot: "slot-1", bmiName: "co-x1", reason: "worker slot-1 is Ready" }))
      .toBe("[bmw:delete-refused slot=slot-1 bmi=co-x1] worker slot-1 is Ready");
  });

  it("read back what was written, amid other output, the last per BMI name (property)", () => {
    fc.assert(fc.property(fc.array(fc.record({ bmiName: name, code: fc.constantFrom("INVALID_ARGUMENT", "ALREADY_EXISTS"), message }), { maxLength: 4 }),
      fc.array(fc.record({ slot: name, bmiName: name, reason: message }), { maxLength: 4 }), (rejections, refusals) => {
        const text = ["Updating (ns--co):", ...rejections.map((r) => `  error: ${formatCreateRejection(r)}`),
          ...refusals.map((r) => `    error: ${formatDeleteRefusal(r)}`), "error: update failed"].join("\n");
        const last = <T extends { bmiName: string }>(xs: T[]) => [...new Map(xs.map((x) => [x.bmiName, x])).values()];
        expect(parseCreateRejections(text)).toEqual(last(rejections).map((r) => ({ ...r, message: r.message.trim() })));
        expect(parseDeleteRefusals(text)).toEqual(last(refusals).map((r) => ({ ...r, reason: r.reason.trim() })));
      }), { numRuns: 200 });
  });
});

describe("createRejectionOf", () => {
  const userData = JSON.stringify({ ignition: { version: "3.4.0" }, storage: { files: [{ contents: { source: "data:,assisted-pull-token-0123456789" } }] } });
  const grams = (s: string) => Array.from({ length: s.length - 11 }, (_, i) => s.slice(i, i + 12));

  it.each([
    ["a partial echo", userData.slice(25, 90)],
    ["a JSON-escaped echo", JSON.stringify(userData.slice(10)).slice(1, -1)],
  ])("cuts %s of the ignition from the marked line", (_case, echo) => {
    const err = new InvalidArgumentError("BareMetalInstances/Create", 3, `spec.user_data: cannot parse "${echo}" for catalog item ci-x`);
    const line = createRejectionOf(err, { name: "co-w1", userData })!;
    const [r] = parseCreateRejections(line);
    expect(r).toMatchObject({ bmiName: "co-w1", code: "INVALID_ARGUMENT" });
    expect(r.message).toContain("ci-x");
    for (const g of grams(userData.slice(25, 90))) expect(line).not.toContain(g);
    expect(line).not.toContain("assisted-pull-token");
  });

  it("cuts credentials from the server's text, and leaves transient errors unmarked", () => {
    const err = new FailedPreconditionError("BareMetalInstances/Create", 9, "token=abc123secret rejected by https://u:pw123456@host/x");
    const line = createRejectionOf(err, { name: "co-w2", userData })!;
    expect(line).not.toContain("abc123secret");
    expect(line).not.toContain("pw123456");
    expect(createRejectionOf(new Error("UNAVAILABLE"), { name: "co-w3", userData })).toBeUndefined();
  });
});
