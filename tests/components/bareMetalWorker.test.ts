// One worker slot under Pulumi's runtime mocks: the resources a slot declares, their names, parents,
// options and secrets, for a slot the planner gives a BMI only and one it also gives a binding.
import * as pulumi from "@pulumi/pulumi";
import { BareMetalWorker, type BareMetalWorkerArgs } from "../../components/bareMetalWorker";
import type { DesiredWorker } from "../../planner/types";
import { agentFor, bmiFor, entry, IGNITION, NS, ORDER, planOf, UID } from "../planner/builders";
import { allRegistered, created, installMocks, recorder, type Registered } from "./mocks";

const BMI_TYPE = "pulumi-nodejs:dynamic/baremetal-workers:BareMetalInstance";
const BINDING_TYPE = "pulumi-nodejs:dynamic/baremetal-workers:AgentBinding";
const COMPONENT_TYPE = "baremetal-workers:index:BareMetalWorker";
const CREATE_ONLY = ["name", "catalogItem", "instanceType", "diskImage", "userData", "networkAttachment", "tenant"];
const FULFILLMENT = { address: "fulfillment.example:8443", tokenFile: "/run/secrets/fulfillment/token", caFile: "/run/ca.pem" };
const KUBECONFIG = "/run/secrets/hub/kubeconfig";

beforeAll(installMocks);

/** The planner's workers for one order: s1's Agent registered (a binding), s2 still provisioning. */
function plannedWorkers(): DesiredWorker[] {
  return planOf({
    workers: [entry("s1", { phase: "WaitingForAgent" }), entry("s2")],
    bmis: [bmiFor("s1"), bmiFor("s2", { state: "Provisioning", macs: [] })],
    agents: [agentFor("s1")],
  }).workers;
}

function workerFor(slot: string): DesiredWorker {
  const w = plannedWorkers().find((x) => x.slot === slot);
  if (!w) throw new Error(`the planner declared no slot ${slot}`);
  return w;
}

function args(worker: DesiredWorker): BareMetalWorkerArgs {
  return { worker, fulfillment: FULFILLMENT, kubeconfigPath: KUBECONFIG, namespace: NS, orderName: ORDER, orderUid: UID };
}

async function declare(worker: DesiredWorker): Promise<{ component: BareMetalWorker; registered: Registered[]; urns: string[] }> {
  const { record, registered } = recorder();
  const component = new BareMetalWorker(worker.slot, args(worker), { transformations: [record] });
  const urns = await allRegistered(registered);
  return { component, registered, urns };
}

function only(registered: Registered[], type: string): Registered {
  const found = registered.filter((r) => r.type === type);
  expect(found).toHaveLength(1);
  return found[0];
}

describe("a slot without a correlated Agent", () => {
  it("declares the slot component and its BMI, named after the slot and the incarnation's BMI", async () => {
    const { registered, component } = await declare(workerFor("s2"));
    expect(registered.map((r) => [r.type, r.name])).toEqual([
      [COMPONENT_TYPE, "s2"],
      [BMI_TYPE, `${ORDER}-b-s2`],
    ]);
    expect(component.binding).toBeUndefined();
    expect(only(registered, BMI_TYPE).opts.parent).toBe(component);
  });

  it("never replaces the BMI: every create-only input is in ignoreChanges", async () => {
    const bmi = only((await declare(workerFor("s2"))).registered, BMI_TYPE);
    expect([...(bmi.opts.ignoreChanges ?? [])].sort()).toEqual([...CREATE_ONLY].sort());
    expect(bmi.opts.deleteBeforeReplace).toBeFalsy();
    expect(bmi.opts.retainOnDelete).toBeFalsy();
  });

  it("keeps the ignition secret and sends the planner's BMI with the connection and the delete guard", async () => {
    const worker = workerFor("s2");
    const bmi = only((await declare(worker)).registered, BMI_TYPE);
    const userData = bmi.props.userData as pulumi.Output<string>;
    expect(pulumi.Output.isInstance(userData)).toBe(true);
    expect(await pulumi.isSecret(userData)).toBe(true);
    expect(bmi.opts.additionalSecretOutputs).toEqual(["userData"]);
    const sent = created.get(`${ORDER}-b-s2`)!.inputs;
    expect(sent).toMatchObject({
      name: `${ORDER}-b-s2`, tenant: "system", instanceType: "bm.small", diskImage: "di-419", catalogItem: "cat-system",
      adoptId: "id-s2", labels: worker.bmi.labels, networkAttachment: worker.bmi.networkAttachment,
      connection: FULFILLMENT,
      guard: { kubeconfigPath: KUBECONFIG, namespace: NS, orderName: ORDER, orderUid: UID, slot: "s2" },
    });
    // The engine receives it wrapped as a secret, so the state stores it encrypted.
    expect(sent.userData).toEqual({ [pulumi.runtime.specialSigKey]: pulumi.runtime.specialSecretSig, value: IGNITION });
  });

  it("puts the provider in the state as code that holds no credential", async () => {
    await declare(workerFor("s2"));
    const provider = created.get(`${ORDER}-b-s2`)!.inputs.__provider as string;
    expect(typeof provider).toBe("string");
    expect(provider).toContain("loadProjectModule");
    expect(provider).not.toContain(IGNITION);
    expect(provider).not.toContain(KUBECONFIG);
  });

  it("gives a new incarnation a new BMI resource under the same slot", async () => {
    const first = workerFor("s2");
    const retry: DesiredWorker = { ...first, bmi: { ...first.bmi, name: `${ORDER}-b-s2-r2`, adoptId: undefined } };
    const a = await declare(first);
    const b = await declare(retry);
    const bmiUrn = (d: typeof a) => d.urns[d.registered.findIndex((r) => r.type === BMI_TYPE)];
    expect(bmiUrn(a)).not.toEqual(bmiUrn(b));
    // The BMI's URN type chain runs through the slot component; its name is the new incarnation's.
    expect(bmiUrn(b).endsWith(`::${COMPONENT_TYPE}$${BMI_TYPE}::${ORDER}-b-s2-r2`)).toBe(true);
    expect(a.urns[0]).toEqual(b.urns[0]);
  });
});

describe("a slot whose Agent is correlated", () => {
  it("declares the binding after the BMI, under the slot, named <slot>-agent", async () => {
    const { registered, component } = await declare(workerFor("s1"));
    expect(registered.map((r) => [r.type, r.name])).toEqual([
      [COMPONENT_TYPE, "s1"],
      [BMI_TYPE, `${ORDER}-b-s1`],
      [BINDING_TYPE, "s1-agent"],
    ]);
    const binding = only(registered, BINDING_TYPE);
    expect(binding.opts.parent).toBe(component);
    expect(binding.opts.dependsOn).toEqual([component.bmi]);
    expect(component.binding).toBe(binding.resource);
  });

  it("binds the planner's Agent for the BMI's host, by kubeconfig path", async () => {
    const worker = workerFor("s1");
    await declare(worker);
    expect(created.get("s1-agent")!.inputs).toMatchObject({
      ...worker.binding, slot: "s1", orderUid: UID, kubeconfigPath: KUBECONFIG, bmiId: `${ORDER}-b-s1-id`,
    });
  });

  it("leaves replace-on-change to the provider's diff (no options that would bypass it)", async () => {
    const binding = only((await declare(workerFor("s1"))).registered, BINDING_TYPE);
    expect(binding.opts.ignoreChanges).toBeUndefined();
    expect(binding.opts.retainOnDelete).toBeFalsy();
    expect(binding.opts.protect).toBeFalsy();
  });
});
