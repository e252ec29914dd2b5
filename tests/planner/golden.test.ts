// Golden planner transcripts: realistic scenarios stepped through the pure planner, each step's plan
// (declared resources, status, conditions, events, requeue) compared with the committed JSON in
// tests/planner/golden/. A change of planner behaviour shows up as a reviewable diff of those files:
// regenerate them with BMW_UPDATE_GOLDEN=1 and review the diff before committing.
import * as fs from "node:fs";
import * as path from "node:path";
import { UNBINDING_STATE } from "../../planner/names";
import { AGENT_INSTALLED_STATE } from "../../planner/correlation";
import { MIN } from "./builders";
import { World, type TranscriptStep } from "./golden/world";

const GOLDEN_DIR = path.join(__dirname, "golden");
const UPDATE = process.env.BMW_UPDATE_GOLDEN === "1";

function expectGolden(name: string, transcript: TranscriptStep[]): void {
  const file = path.join(GOLDEN_DIR, `${name}.json`);
  const text = `${JSON.stringify(transcript, null, 2)}\n`;
  if (UPDATE) {
    fs.writeFileSync(file, text);
    return;
  }
  if (!fs.existsSync(file)) throw new Error(`${file} is missing: run the test with BMW_UPDATE_GOLDEN=1 and commit the file`);
  expect(JSON.parse(text)).toEqual(JSON.parse(fs.readFileSync(file, "utf8")));
}

/** A new order of two workers up to Ready, then scaled from 2 to 3. */
function createAndScaleUp(): World {
  const w = new World();
  w.step("a new order asks for 2 compute workers");
  w.step("the next pass: the fenced slots are recorded, their BMIs provisioning", 1 * MIN);
  const slots = w.slotNames();
  for (const s of slots) w.boot(s);
  w.step("both hosts booted, no Agent registered yet", 5 * MIN);
  for (const s of slots) w.register(s);
  w.step("both discovery Agents registered unbound", 3 * MIN);
  for (const s of slots) w.agentState(s, "installing");
  w.step("both Agents installing", 2 * MIN);
  for (const s of slots) w.agentState(s, AGENT_INSTALLED_STATE);
  w.step("both Agents joined the hosted cluster", 20 * MIN);
  w.requested = 3;
  w.step("numberOfNodes 2 -> 3", 1 * MIN);
  w.step("the third slot's BMI provisioning", 1 * MIN);
  return w;
}

/** Three Ready workers scaled to 2: CAPI unbinds an Agent of its choice, its BMI is deleted and the slot leaves. */
function scaleDown(): World {
  const w = readyWorld(3);
  w.requested = 2;
  w.step("numberOfNodes 3 -> 2: only the NodePool's replicas change", 1 * MIN);
  w.agentState(w.slotNames()[2], UNBINDING_STATE);
  w.step("CAPI removed a Machine: its Agent is unbinding", 2 * MIN);
  w.step("the next pass: the binding and the BMI are dropped", 1 * MIN);
  w.finishDeletions();
  w.step("the service finished the deletion", 2 * MIN);
  return w;
}

/** The service fails one BMI (no host): backoff, then a new incarnation in the same slot. */
function failedBmiRetry(): World {
  const w = new World();
  w.requested = 1;
  w.step("a new order asks for 1 compute worker");
  const [slot] = w.slotNames();
  w.fail(slot, "HostSelectionFailed", "no free host of instance type bm.small");
  w.step("the service failed the BMI", 2 * MIN);
  w.step("the next pass: the failed BMI is dropped, the retry waits for its backoff", 1 * MIN);
  w.finishDeletions();
  w.step("the failed BMI is gone; the backoff expired", 10 * MIN);
  w.step("the new incarnation provisioning", 1 * MIN);
  return w;
}

/** The fulfillment service cannot be listed for a while: nothing is declared or deleted meanwhile. */
function fulfillmentOutage(): World {
  const w = readyWorld(2);
  w.listFails = true;
  for (let i = 1; i <= 3; i++) w.step(`the fulfillment service cannot be listed (${i})`, 1 * MIN);
  w.listFails = false;
  w.step("the service answers again", 5 * MIN);
  return w;
}

/** A world whose `n` workers went through the whole lifecycle; its own transcript is dropped. */
function readyWorld(n: number): World {
  const w = new World();
  w.requested = n;
  w.replicas = 0;
  w.step("setup");
  const slots = w.workers.map((x) => x.name);
  for (const s of slots) w.boot(s);
  w.step("setup", 5 * MIN);
  for (const s of slots) w.register(s);
  w.step("setup", 3 * MIN);
  for (const s of slots) w.agentState(s, AGENT_INSTALLED_STATE);
  w.step("setup", 20 * MIN);
  w.step("setup", 61 * MIN);
  w.transcript.length = 0;
  return w;
}

describe("golden planner transcripts", () => {
  it("create and scale up: 2 workers to Ready, then a third", () => {
    const w = createAndScaleUp();
    const last = w.transcript[w.transcript.length - 1].plan;
    expect(last.status.desiredWorkers).toBe(3);
    expect(w.transcript.find((s) => s.step === "both Agents joined the hosted cluster")!.plan.status.readyWorkers).toBe(2);
    expectGolden("create-and-scale-up", w.transcript);
  });

  it("scale down: one slot unbinds, its BMI is deleted, the slot leaves status", () => {
    const w = scaleDown();
    const last = w.transcript[w.transcript.length - 1].plan;
    expect(last.status.workers).toHaveLength(2);
    expect(w.transcript.flatMap((s) => s.applied).filter((a) => a.startsWith("delete BMI"))).toHaveLength(1);
    expectGolden("scale-down", w.transcript);
  });

  it("failed BMI: backoff, then a new incarnation in the same slot", () => {
    const w = failedBmiRetry();
    const created = w.transcript.flatMap((s) => s.applied).filter((a) => a.startsWith("create BMI"));
    expect(created).toHaveLength(2);
    expect(new Set(created.map((a) => a.split(" for slot ")[1]))).toEqual(new Set(w.slotNames()));
    expectGolden("failed-bmi-retry", w.transcript);
  });

  it("fulfillment outage: no BMI is created or deleted while the service cannot be listed", () => {
    const w = fulfillmentOutage();
    for (const s of w.transcript.slice(0, 3)) expect(s.applied).toEqual([]);
    expectGolden("fulfillment-outage", w.transcript);
  });

  it("every committed golden file belongs to a scenario", () => {
    const files = fs.readdirSync(GOLDEN_DIR).filter((f) => f.endsWith(".json")).sort();
    expect(files).toEqual(["create-and-scale-up.json", "failed-bmi-retry.json", "fulfillment-outage.json", "scale-down.json"]);
  });
});
