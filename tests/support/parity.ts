// Preview parity (issue 17, point 1): a preview taken just before a reconcile is held to what that
// reconcile's `up` did — the same set of (URN, operation) — or, when the reconcile ran no update, to no
// change at all. "When nothing changes in between": a case counts only when the plan the preview's program
// declared hashes like the plan the update declared (the stack output `fingerprint`); a world that moved
// in between (an Agent registered, CAPI released a host) is counted apart, not compared.
import type { ReconcileResult } from "../../controller/reconcileDeps";
import { fingerprint } from "../../planner";
import type { PreviewResult } from "../../stack/operations";
import { changingSteps, describeStepDifference, describeSteps, sameSteps, stepDifference } from "../../stack/stepParity";

export class PreviewParity {
  /** Compared cases, and those of them whose update (or preview) changed something. */
  cases = 0;
  withChanges = 0;
  matched = 0;
  /** Not compared: the plan moved between the preview and the reconcile. */
  movedBetween = 0;
  /** Not compared: the reconcile paused, failed or had no preview to compare with. */
  notCompared = 0;
  readonly mismatches: string[] = [];

  /** Records one preview and the reconcile that followed it (`result` undefined: it failed). */
  record(what: string, preview: PreviewResult | undefined, result: ReconcileResult | undefined): string {
    if (!preview || !result || (result.action !== "up" && result.action !== "skipped")) {
      this.notCompared++;
      return "parity: not compared";
    }
    const previewed = preview.outputs.fingerprint;
    const declared = result.action === "up" ? result.up?.outputs?.fingerprint : result.plan && fingerprint(result.plan);
    if (typeof previewed !== "string") {
      this.mismatches.push(`${what}: the preview's program declared no fingerprint`);
      return "parity: MISMATCH";
    }
    if (previewed !== declared) {
      this.movedBetween++;
      return "parity: the plan moved in between";
    }
    this.cases++;
    const updateSteps = result.action === "up" ? result.up?.steps ?? [] : [];
    const previewChanges = changingSteps(preview.steps);
    if (previewChanges.length > 0 || changingSteps(updateSteps).length > 0) this.withChanges++;
    if (result.action === "skipped") {
      if (previewChanges.length === 0) {
        this.matched++;
        return "parity: no change previewed, none made";
      }
      this.mismatches.push(`${what}: the preview shows ${describeSteps(previewChanges)} but the reconcile ran no update`);
      return "parity: MISMATCH";
    }
    const d = stepDifference(preview.steps, updateSteps);
    if (sameSteps(d)) {
      this.matched++;
      return `parity: ${updateSteps.length} steps as previewed`;
    }
    this.mismatches.push(`${what}: ${describeStepDifference(d)}`);
    return "parity: MISMATCH";
  }

  summary(): string {
    const rate = this.cases ? ((100 * this.matched) / this.cases).toFixed(1) : "n/a";
    return `preview parity: ${this.matched}/${this.cases} cases matched (${rate} %), ${this.withChanges} of them with changes; ` +
      `${this.movedBetween} not compared because the plan moved in between, ${this.notCompared} because the reconcile paused or failed`;
  }
}
