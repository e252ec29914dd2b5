// The rollback pin is read from the stack's config on every reconcile: a value `rollback` did not write
// is refused with a message that says what it is, not turned into counts.
import { parsePin } from "../../planner/pin";

describe("parsePin", () => {
  it("reads what rollback writes", () => {
    expect(parsePin(JSON.stringify({ compute: 3, gpu: 0 }))).toEqual({ compute: 3, gpu: 0 });
    expect(parsePin("{}")).toEqual({});
  });

  it.each([
    ["not JSON", "compute=3"],
    ["a list", "[3]"],
    ["a number", "3"],
    ["a count that is a string", '{"compute":"3"}'],
    ["a negative count", '{"compute":-1}'],
    ["a fractional count", '{"compute":1.5}'],
  ])("refuses %s", (_what, raw) => {
    expect(() => parsePin(raw)).toThrow(/^the stack config 'pin' is not a map of node set to worker count/);
  });
});
