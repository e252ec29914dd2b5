import { allowedTransition, PHASES } from "../../planner";
import type { WorkerPhase } from "../../planner/types";

// The full matrix: every pair not listed here is forbidden.
const ALLOWED: Array<[WorkerPhase, WorkerPhase]> = [
  ["Provisioning", "WaitingForAgent"], ["Provisioning", "Binding"], ["Provisioning", "Ready"], ["Provisioning", "Failed"],
  ["Provisioning", "Deleting"],
  ["WaitingForAgent", "Binding"], ["WaitingForAgent", "Ready"], ["WaitingForAgent", "Failed"], ["WaitingForAgent", "Deleting"],
  ["Binding", "Ready"], ["Binding", "Failed"], ["Binding", "Unbinding"],
  ["Ready", "Unbinding"],
  ["Failed", "Provisioning"],
  ["Unbinding", "Deleting"],
];

describe("phase machine (§3.1, §11.10)", () => {
  const pairs = PHASES.flatMap((from) => PHASES.map((to) => [from, to] as [WorkerPhase, WorkerPhase]));
  test.each(pairs)("%s → %s", (from, to) => {
    const expected = from === to || ALLOWED.some(([f, t]) => f === from && t === to);
    expect(allowedTransition(from, to)).toBe(expected);
  });

  test("Failed is reachable only from Provisioning, WaitingForAgent and Binding", () => {
    expect(PHASES.filter((p) => p !== "Failed" && allowedTransition(p, "Failed"))).toEqual(["Provisioning", "WaitingForAgent", "Binding"]);
  });

  test("teardown phases never lead to Failed or back to provisioning", () => {
    for (const p of ["Unbinding", "Deleting"] as WorkerPhase[]) {
      for (const to of ["Failed", "Provisioning", "WaitingForAgent", "Binding", "Ready"] as WorkerPhase[]) {
        expect(allowedTransition(p, to)).toBe(false);
        expect(allowedTransition(p, to, "clusterDeletion")).toBe(false);
      }
    }
  });

  test("cluster deletion may move any phase to Deleting, and nothing else", () => {
    for (const p of PHASES) expect(allowedTransition(p, "Deleting", "clusterDeletion")).toBe(true);
    expect(allowedTransition("Ready", "Deleting")).toBe(false);
    expect(allowedTransition("Ready", "Failed", "clusterDeletion")).toBe(false);
  });
});
