// Whether what a plan declares was observed to exist. The skip shortcut compares fingerprints of plans,
// and a plan built from a world where the InfraEnv or a BMI was deleted by hand declares the same
// resources as before; carrying the absences on the plan makes such a plan hash differently, so the
// loop runs `up`, which recreates what is missing, instead of waiting for the next periodic refresh.
import type { Plan, PlanPresence, Snapshot } from "./types";

export function presenceOf(snapshot: Snapshot, plan: Pick<Plan, "infraEnv" | "workers">): PlanPresence {
  const bmis = snapshot.bmis ?? [];
  const bmiAbsent: string[] = [];
  const agentAbsent: string[] = [];
  for (const w of plan.workers) {
    const listed = w.bmi.adoptId ? bmis.some((b) => b.id === w.bmi.adoptId) : bmis.some((b) => b.name === w.bmi.name);
    if (!listed) bmiAbsent.push(w.slot);
    const binding = w.binding;
    if (binding && !snapshot.agents.some((a) => a.name === binding.agentName && a.namespace === binding.agentNamespace && a.uid === binding.agentUid)) {
      agentAbsent.push(w.slot);
    }
  }
  const env = snapshot.infraEnv;
  return {
    infraEnv: plan.infraEnv === undefined || (env !== undefined && env.name === plan.infraEnv.name),
    bmiAbsent: bmiAbsent.sort(),
    agentAbsent: agentAbsent.sort(),
  };
}
