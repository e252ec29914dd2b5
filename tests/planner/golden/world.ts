// A small, scripted world for the golden planner transcripts: the hub and the fulfillment service as
// plain data, stepped by the scenario. Each step observes (a Snapshot from the builders), plans,
// persists the status the way the reconciler does, and applies the plan the way `up` does.
import { plan } from "../../../planner";
import { INFRAENV_AGENT_LABEL, WORKER_NAME_LABEL } from "../../../planner/names";
import type { ObservedAgent, ObservedBmi, Plan, Snapshot, WorkerStatus } from "../../../planner/types";
import { bmRequest, NS, ORDER, snap, T0 } from "../builders";

/** One step of a transcript: when, what the scenario did to the world, and the plan that followed. */
export interface TranscriptStep {
  atMs: number;
  step: string;
  plan: Plan;
  /** What `up` did with the plan. */
  applied: string[];
}

export class World {
  nowMs = 0;
  requested = 2;
  workers: WorkerStatus[] = [];
  conditions: Plan["status"]["conditions"] = [];
  bmis = new Map<string, ObservedBmi>();
  agents = new Map<string, ObservedAgent>();
  replicas = 2;
  /** The fulfillment service cannot be listed this observation. */
  listFails = false;
  readonly transcript: TranscriptStep[] = [];
  private slots = 0;
  private ids = 0;

  /** Observes, plans, persists status and applies, recording the step. */
  step(description: string, afterMs = 0): Plan {
    this.nowMs += afterMs;
    const p = plan(this.observe());
    this.workers = p.status.workers.map((w) => structuredClone(w));
    this.conditions = p.status.conditions.map((c) => ({ ...c }));
    if (p.nodePoolReplicas["np-compute"] !== undefined && !p.paused) this.replicas = p.nodePoolReplicas["np-compute"];
    const applied = p.paused ? [] : this.apply(p);
    this.transcript.push({ atMs: this.nowMs, step: description, plan: p, applied });
    return p;
  }

  observe(): Snapshot {
    const listed = [...this.bmis.values()];
    const live = new Set(listed.map((b) => b.id));
    return snap({
      now: new Date(T0.getTime() + this.nowMs),
      nodeRequests: [bmRequest("compute", this.requested)],
      workers: this.workers.map((w) => structuredClone(w)),
      orderPatch: (o) => { o.status!.conditions = this.conditions.map((c) => ({ ...c })); },
      bmis: this.listFails ? undefined : listed.map((b) => structuredClone(b)),
      goneBmiIds: this.listFails ? [] : this.workers.map((w) => w.bareMetalInstance?.id).filter((id): id is string => Boolean(id) && !live.has(id!)),
      fulfillmentErrors: this.listFails ? 1 : 0,
      agents: [...this.agents.values()].map((a) => structuredClone(a)),
      nodePools: [{ name: "np-compute", namespace: NS, nodeSet: "compute", replicas: this.replicas, statusReplicas: this.replicas }],
      newName: () => `s${++this.slots}`,
    });
  }

  /** What `up` does: create declared BMIs, bind declared Agents, delete what is no longer declared. */
  private apply(p: Plan): string[] {
    const applied: string[] = [];
    const declared = new Set(p.workers.map((w) => w.bmi.name));
    for (const w of p.workers) {
      if (!this.bmiNamed(w.bmi.name) && !w.bmi.adoptId) {
        const id = `bmi-${++this.ids}`;
        this.bmis.set(id, { id, name: w.bmi.name, state: "Provisioning", deleting: false, macs: [], labels: { ...w.bmi.labels } });
        applied.push(`create BMI ${w.bmi.name} (${id}) for slot ${w.slot}`);
      }
      const agent = w.binding && this.agents.get(w.binding.agentName);
      if (w.binding && agent && !agent.clusterDeploymentName) {
        Object.assign(agent, { labels: { ...agent.labels, ...w.binding.labels }, clusterDeploymentName: w.binding.clusterDeploymentName, approved: true, state: "binding" });
        applied.push(`bind Agent ${agent.name} to slot ${w.slot}`);
      }
    }
    const kept = new Set(p.workers.filter((w) => w.binding || w.retainBinding).map((w) => w.slot));
    for (const a of [...this.agents.values()]) {
      const slot = a.labels[WORKER_NAME_LABEL];
      if (slot && !kept.has(slot)) {
        this.agents.delete(a.name);
        applied.push(`delete Agent ${a.name} of slot ${slot}`);
      }
    }
    for (const b of this.bmis.values()) {
      if (!declared.has(b.name) && !b.deleting) {
        Object.assign(b, { deleting: true, state: "Deleting" });
        applied.push(`delete BMI ${b.name} (${b.id})`);
      }
    }
    return applied;
  }

  /** The slots in status, in order (the planner names them; the scenario does not guess). */
  slotNames(): string[] {
    return this.workers.map((w) => w.name);
  }

  bmiNamed(name: string): ObservedBmi | undefined {
    return [...this.bmis.values()].find((b) => b.name === name);
  }

  /** The live BMI of a slot, as recorded in status. */
  bmiOf(slot: string): ObservedBmi {
    const name = this.workers.find((w) => w.name === slot)?.bareMetalInstance?.name;
    const b = name ? this.bmiNamed(name) : undefined;
    if (!b) throw new Error(`slot ${slot} has no live BMI`);
    return b;
  }

  /** The service finished provisioning: the host runs and reports its NICs. */
  boot(slot: string): void {
    const b = this.bmiOf(slot);
    Object.assign(b, { state: "Running", macs: [macFor(b.id, 0), macFor(b.id, 1)] });
  }

  fail(slot: string, reason: string, message: string): void {
    Object.assign(this.bmiOf(slot), { state: "Failed", failureReason: reason, failureMessage: message });
  }

  /** The booted host's discovery agent registers with our InfraEnv (unbound). */
  register(slot: string): void {
    const b = this.bmiOf(slot);
    const name = `agent-${b.id}`;
    this.agents.set(name, {
      name, namespace: NS, uid: `auid-${b.id}`, resourceVersion: "1",
      labels: { [INFRAENV_AGENT_LABEL]: `${ORDER}-infraenv` }, macs: [macFor(b.id, 1)], approved: false, state: "known-unbound",
    });
  }

  agentOf(slot: string): ObservedAgent {
    const a = [...this.agents.values()].find((x) => x.labels[WORKER_NAME_LABEL] === slot);
    if (!a) throw new Error(`slot ${slot} has no bound Agent`);
    return a;
  }

  /** The Agent's state moves on (installing, added-to-existing-cluster, unbinding-pending-user-action). */
  agentState(slot: string, state: string): void {
    this.agentOf(slot).state = state;
  }

  /** The service finished a deletion: the BMI is gone from List and Get. */
  finishDeletions(): void {
    for (const [id, b] of this.bmis) if (b.deleting) this.bmis.delete(id);
  }
}

function macFor(id: string, nic: number): string {
  const n = Number(id.replace(/\D/g, "")) % 256;
  return `0a:00:00:00:${n.toString(16).padStart(2, "0")}:${nic.toString(16).padStart(2, "0")}`;
}
