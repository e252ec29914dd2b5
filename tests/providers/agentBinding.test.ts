// The AgentBinding dynamic provider against the run's real kube-apiserver. Provider methods are called
// directly through the run-time loader, as the provider host calls them.
import * as k8s from "@kubernetes/client-node";
import { Kube, loadKubeConfig, type AgentObject } from "../../clients/kube";
import { AGENT_BAREMETAL_LABEL, NODE_SET_LABEL, ORDER_LABEL, UNBINDING_STATE, WORKER_NAME_LABEL } from "../../planner/names";
import { agentBindingProvider as provider } from "../../providers/agentBinding";
import type { AgentBindingInputs, AgentBindingOutputs } from "../../providers/agentBinding";
import { bind } from "../../providers/agentBindingOps";
import { PROJECT_ROOT } from "../../stack/toolchain";
import { createTestNamespace, kubeConfig } from "../support/kube";

const ORDER = "3c2b1a00-order-uid";
let kc: k8s.KubeConfig;
let kube: Kube;

beforeAll(() => {
  process.env.BMW_PROJECT_ROOT = PROJECT_ROOT;
  kc = kubeConfig();
  kube = new Kube(loadKubeConfig(process.env.KUBECONFIG));
});

async function agent(ns: string, name: string, opts: { labels?: Record<string, string>; state?: string; cd?: { name: string; namespace: string } } = {}): Promise<AgentObject> {
  const created = await kube.createAgent({
    metadata: { name, namespace: ns, labels: { "infraenvs.agent-install.openshift.io": "order-1-infraenv", ...opts.labels } },
    spec: { approved: false, role: "worker", ...(opts.cd ? { clusterDeploymentName: opts.cd } : {}) },
  });
  if (!opts.state) return created;
  return kube.patchAgentStatus(ns, name, { debugInfo: { state: opts.state } });
}

function inputs(ns: string, a: AgentObject, extra: Partial<AgentBindingInputs> = {}): AgentBindingInputs {
  return {
    agentName: a.metadata.name, agentNamespace: ns, agentUid: a.metadata.uid!,
    clusterDeploymentName: { name: "order-1", namespace: ns },
    labels: { [NODE_SET_LABEL]: "compute" },
    slot: "slot-a", orderUid: ORDER, kubeconfigPath: process.env.KUBECONFIG!, bmiId: "bmi-1",
    ...extra,
  };
}

async function bound(i: AgentBindingInputs): Promise<{ id: string; outs: AgentBindingOutputs }> {
  const r = await provider.create(i);
  return { id: r.id, outs: r.outs as AgentBindingOutputs };
}

describe("bind", () => {
  it("binds with one patch: ClusterDeployment, approval and labels; a repeat changes nothing", async () => {
    const ns = await createTestNamespace(kc, "bind");
    const a = await agent(ns, "agent-1", { state: "known-unbound" });
    const { id, outs } = await bound(inputs(ns, a));
    expect(id).toBe(`${ns}/agent-1`);
    expect(outs).toMatchObject({ bound: true, approved: true, state: "known-unbound" });
    const now = (await kube.getAgent(ns, "agent-1"))!;
    expect(now.spec).toMatchObject({ approved: true, role: "worker", clusterDeploymentName: { name: "order-1", namespace: ns } });
    expect(now.metadata.labels).toEqual({
      "infraenvs.agent-install.openshift.io": "order-1-infraenv", [AGENT_BAREMETAL_LABEL]: "true",
      [WORKER_NAME_LABEL]: "slot-a", [NODE_SET_LABEL]: "compute", [ORDER_LABEL]: ORDER,
    });
    const again = await bound(inputs(ns, a));
    expect(again.outs.resourceVersion).toBe(now.metadata.resourceVersion);
  });

  it("refuses Agents of another order, another worker, another ClusterDeployment, or re-created ones", async () => {
    const ns = await createTestNamespace(kc, "refuse");
    const other = await agent(ns, "other-order", { labels: { [ORDER_LABEL]: "someone-else" } });
    await expect(provider.create(inputs(ns, other))).rejects.toThrow(/another ClusterOrder/);
    const otherSlot = await agent(ns, "other-slot", { labels: { [ORDER_LABEL]: ORDER, [WORKER_NAME_LABEL]: "slot-z" } });
    await expect(provider.create(inputs(ns, otherSlot))).rejects.toThrow(/another worker/);
    const otherCd = await agent(ns, "other-cd", { cd: { name: "foreign", namespace: "elsewhere" } });
    await expect(provider.create(inputs(ns, otherCd))).rejects.toThrow(/another ClusterDeployment \(elsewhere\/foreign\)/);
    const fresh = await agent(ns, "recreated");
    await expect(provider.create(inputs(ns, fresh, { agentUid: "11111111-2222-3333-4444-555555555555" }))).rejects.toThrow(/re-created/);
    await expect(provider.create({ ...inputs(ns, fresh), agentName: "missing" })).rejects.toThrow(/does not exist/);
    // Nothing was written to any of them.
    for (const name of ["other-order", "other-slot", "other-cd", "recreated"]) {
      expect((await kube.getAgent(ns, name))?.spec?.approved).toBe(false);
    }
  });

  it("patches only the Agent it read: a concurrent change is a conflict, re-checked before retrying", async () => {
    const ns = await createTestNamespace(kc, "stale");
    const a = await agent(ns, "agent-1");
    let touches = 0;
    // Someone else changes the Agent between our read and our patch, once: the retry binds.
    const ok = await bind(kube, inputs(ns, a), {
      beforePatch: async (seen) => {
        if (touches++ === 0) await kube.patchAgent(ns, "agent-1", { metadata: { labels: { unrelated: "1" } } }, seen.metadata.resourceVersion!);
      },
    });
    expect(touches).toBe(2);
    expect(ok.metadata.labels).toMatchObject({ unrelated: "1", [ORDER_LABEL]: ORDER });

    // Another order claims it in between: the stale patch fails and the re-read refuses.
    const b = await agent(ns, "agent-2");
    await expect(bind(kube, inputs(ns, b, { slot: "slot-b" }), {
      beforePatch: async (seen) => {
        await kube.patchAgent(ns, "agent-2", { metadata: { labels: { [ORDER_LABEL]: "thief" } } }, seen.metadata.resourceVersion!);
      },
    })).rejects.toThrow(/another ClusterOrder \(osac.openshift.io\/cluster-order=thief\)/);
    expect((await kube.getAgent(ns, "agent-2"))?.spec?.approved).toBe(false);
  });

  it("tolerates CAPI's agent provider re-pointing a bound Agent at the hosted cluster's ClusterDeployment", async () => {
    const ns = await createTestNamespace(kc, "repoint");
    const a = await agent(ns, "agent-1");
    const { id, outs } = await bound(inputs(ns, a));
    const now = (await kube.getAgent(ns, "agent-1"))!;
    await kube.patchAgent(ns, "agent-1", { spec: { clusterDeploymentName: { name: "hc1", namespace: `${ns}-hc1` } } }, now.metadata.resourceVersion!);
    const r = await provider.update!(id, outs, inputs(ns, a, { labels: { [NODE_SET_LABEL]: "compute", extra: "x" } }));
    expect((r.outs as AgentBindingOutputs).bound).toBe(true);
    const after = (await kube.getAgent(ns, "agent-1"))!;
    expect(after.spec?.clusterDeploymentName).toEqual({ name: "hc1", namespace: `${ns}-hc1` });
    expect(after.metadata.labels?.extra).toBe("x");
  });

  it("does not re-bind an Agent that CAPI released for scale-down", async () => {
    const ns = await createTestNamespace(kc, "released");
    const a = await agent(ns, "agent-1");
    const { id, outs } = await bound(inputs(ns, a));
    const now = (await kube.getAgent(ns, "agent-1"))!;
    await kube.patchAgent(ns, "agent-1", { spec: { clusterDeploymentName: null } }, now.metadata.resourceVersion!);
    await kube.patchAgentStatus(ns, "agent-1", { debugInfo: { state: UNBINDING_STATE } });
    const r = await provider.update!(id, outs, inputs(ns, a, { kubeconfigPath: process.env.KUBECONFIG! }));
    expect(r.outs).toMatchObject({ bound: false, state: UNBINDING_STATE });
    expect((await kube.getAgent(ns, "agent-1"))?.spec?.clusterDeploymentName).toBeUndefined();
  });
});

describe("read", () => {
  it("reports the Agent's state, and gone when it was deleted or re-created", async () => {
    const ns = await createTestNamespace(kc, "read");
    const a = await agent(ns, "agent-1");
    const { id, outs } = await bound(inputs(ns, a));
    await kube.patchAgentStatus(ns, "agent-1", { debugInfo: { state: "installing" } });
    expect((await provider.read!(id, outs)).props).toMatchObject({ state: "installing", bound: true });
    const now = (await kube.getAgent(ns, "agent-1"))!;
    await kube.deleteAgent(ns, "agent-1", { uid: now.metadata.uid! });
    expect(await provider.read!(id, outs)).toEqual({ id: "" });
    await agent(ns, "agent-1"); // same name, new uid: a different host
    expect(await provider.read!(id, outs)).toEqual({ id: "" });
  });
});

describe("delete", () => {
  async function boundAgent(ns: string, name: string, state: string) {
    const a = await agent(ns, name);
    const b = await bound(inputs(ns, a, { slot: name }));
    await kube.patchAgentStatus(ns, name, { debugInfo: { state } });
    return b;
  }

  it("leaves a still-bound Agent alone and succeeds", async () => {
    const ns = await createTestNamespace(kc, "keep");
    const b = await boundAgent(ns, "agent-1", "added-to-existing-cluster");
    await provider.delete!(b.id, b.outs);
    expect((await kube.getAgent(ns, "agent-1"))?.spec?.approved).toBe(true);
  });

  it("deletes the Agent once it is unbinding or unbound", async () => {
    const ns = await createTestNamespace(kc, "unbind");
    for (const [name, state] of [["agent-1", UNBINDING_STATE], ["agent-2", "known-unbound"]]) {
      const b = await boundAgent(ns, name, state);
      await provider.delete!(b.id, b.outs);
      expect(await kube.getAgent(ns, name)).toBeUndefined();
    }
  });

  it("never deletes an Agent that is gone, re-created, or claimed by another order", async () => {
    const ns = await createTestNamespace(kc, "notours");
    const b = await boundAgent(ns, "agent-1", UNBINDING_STATE);
    const now = (await kube.getAgent(ns, "agent-1"))!;
    await kube.patchAgent(ns, "agent-1", { metadata: { labels: { [ORDER_LABEL]: "someone-else" } } }, now.metadata.resourceVersion!);
    await provider.delete!(b.id, b.outs);
    expect(await kube.getAgent(ns, "agent-1")).toBeDefined();
    const fresh = (await kube.getAgent(ns, "agent-1"))!;
    await kube.deleteAgent(ns, "agent-1", { uid: fresh.metadata.uid! });
    await provider.delete!(b.id, b.outs); // missing = done
    const recreated = await agent(ns, "agent-1", { state: UNBINDING_STATE });
    await provider.delete!(b.id, b.outs);
    expect((await kube.getAgent(ns, "agent-1"))?.metadata.uid).toBe(recreated.metadata.uid);
  });
});

describe("check and diff", () => {
  it("validates inputs and replaces only for a different Agent or BMI", async () => {
    const ns = "any";
    const a = { metadata: { name: "agent-1", uid: "u-1" } } as AgentObject;
    const i = inputs(ns, a);
    expect((await provider.check!({} as AgentBindingInputs, i)).failures).toEqual([]);
    const bad = { ...i, agentName: "", clusterDeploymentName: { name: "", namespace: "" } };
    expect(((await provider.check!({} as AgentBindingInputs, bad)).failures ?? []).map((f) => f.property).sort())
      .toEqual(["agentName", "clusterDeploymentName"]);
    const olds = { ...i, bound: true, approved: true, resourceVersion: "1" };
    expect(await provider.diff!("id", olds, { ...i, agentUid: "u-2" })).toMatchObject({ changes: true, replaces: ["agentUid"] });
    expect(await provider.diff!("id", olds, { ...i, labels: { x: "y" } })).toMatchObject({ changes: true, replaces: [] });
    expect(await provider.diff!("id", olds, i)).toMatchObject({ changes: false });
  });
});
