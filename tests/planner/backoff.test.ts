import { backoffFor, classifyFailure, defaultPlannerConfig } from "../../planner";

const config = defaultPlannerConfig();
const S = 1000;
const M = 60 * S;

describe("backoff (§4.1): the failure of attempt n waits steps[n-1], then the class cap", () => {
  test.each([
    ["transient", 1, 30 * S], ["transient", 2, 60 * S], ["transient", 3, 120 * S], ["transient", 4, 5 * M], ["transient", 40, 5 * M],
    ["resource", 1, 5 * M], ["resource", 2, 15 * M], ["resource", 3, 30 * M], ["resource", 4, 30 * M],
    ["agentTimeout", 1, 5 * M], ["agentTimeout", 2, 15 * M], ["agentTimeout", 3, 30 * M], ["agentTimeout", 9, 30 * M],
  ])("%s attempt %i → %i ms", (cls, attempt, expected) => {
    expect(backoffFor(cls, attempt, config)).toBe(expected);
  });

  test("attempt 0 (never counted) is treated as the first attempt", () => {
    expect(backoffFor("transient", 0, config)).toBe(30 * S);
  });

  test.each([
    ["AgentRegistrationTimeout", "agentTimeout"],
    ["HostSelectionFailed", "resource"],
    ["NoHostAvailable", "resource"],
    ["ResourceExhausted", "resource"],
    ["BMIProvisioningFailed", "transient"],
    ["ImageDownloadFailed", "transient"],
    [undefined, "transient"],
  ])("reason %s is class %s", (reason, cls) => {
    expect(classifyFailure(reason)).toBe(cls);
  });

  test("a reason is classified when passed instead of a class", () => {
    expect(backoffFor("AgentRegistrationTimeout", 2, config)).toBe(15 * M);
    expect(backoffFor("NoHostAvailable", 1, config)).toBe(5 * M);
    expect(backoffFor("SomethingElse", 3, config)).toBe(120 * S);
  });

  test("custom steps and caps are honoured", () => {
    const c = { ...config, transientBackoffMs: [1, 2], transientCapMs: 7 };
    expect([1, 2, 3, 4].map((n) => backoffFor("transient", n, c))).toEqual([1, 2, 7, 7]);
  });
});
