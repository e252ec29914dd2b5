// Table tests of the two dynamic providers' check and diff: what the engine is told before any call
// reaches the fulfillment service or the hub. Called through the provider objects Pulumi serializes,
// so the run-time loader is exercised too; no service, cluster or CLI is needed.
import * as pulumi from "@pulumi/pulumi";
import { PROJECT_ROOT } from "../../stack/toolchain";
import { agentBindingProvider, type AgentBindingInputs, type AgentBindingOutputs } from "../../providers/agentBinding";
import { bareMetalInstanceProvider, type BareMetalInstanceInputs, type BareMetalInstanceOutputs } from "../../providers/bareMetalInstance";
import { ORDER_LABEL } from "../../planner/names";

beforeAll(() => {
  process.env.BMW_PROJECT_ROOT = PROJECT_ROOT;
});

/** Pulumi's placeholder for a value the engine does not know yet (preview). */
const UNKNOWN = pulumi.runtime.unknownValue;
const unknown = <T>(): T => UNKNOWN as unknown as T;

function bmi(patch: Partial<Record<keyof BareMetalInstanceInputs, unknown>> = {}): BareMetalInstanceInputs {
  return {
    name: "co1-b-s1", tenant: "system",
    labels: { [ORDER_LABEL]: "uid-co1" }, annotations: { "osac.openshift.io/owner-reference": "ClusterOrder/uid-co1" },
    catalogItem: "cat-system", instanceType: "bm.small", diskImage: "di-419", userData: "{\"ignition\":{}}",
    networkAttachment: { subnet: "subnet-1", securityGroups: ["sg-1"], interface: "eth1", primary: true },
    connection: { address: "fulfillment:8443", tokenFile: "/run/token" },
    guard: { kubeconfigPath: "/run/kubeconfig", namespace: "tenant-a", orderName: "co1", orderUid: "uid-co1", slot: "s1" },
    ...patch,
  } as BareMetalInstanceInputs;
}

async function bmiFailures(news: BareMetalInstanceInputs): Promise<string[]> {
  const r = await bareMetalInstanceProvider.check!({}, news);
  return (r.failures ?? []).map((f) => f.property).sort();
}

describe("BareMetalInstance check", () => {
  it.each<[string, Partial<Record<keyof BareMetalInstanceInputs, unknown>>, string[]]>([
    ["a well-formed BMI", {}, []],
    ["a preview: every input unknown", {
      name: unknown(), tenant: unknown(), userData: unknown(), catalogItem: unknown(), instanceType: unknown(), diskImage: unknown(),
      networkAttachment: unknown(), labels: unknown(), connection: unknown(), guard: unknown(),
    }, []],
    ["no guard (an older state)", { guard: undefined }, []],
    ["a name that is no DNS label", { name: "Co1_B" }, ["name"]],
    ["a name longer than 63 characters", { name: "b".repeat(64) }, ["name"]],
    ["another tenant", { tenant: "tenant-a" }, ["tenant"]],
    ["no ignition", { userData: "" }, ["userData"]],
    ["exactly 64 KiB of ignition", { userData: "x".repeat(65_536) }, []],
    ["one byte over 64 KiB", { userData: "x".repeat(65_537) }, ["userData"]],
    ["64 KiB counted in UTF-8 bytes, not characters", { userData: "é".repeat(32_769) }, ["userData"]],
    ["an empty catalog item, instance type and disk image", { catalogItem: "", instanceType: "", diskImage: "" }, ["catalogItem", "diskImage", "instanceType"]],
    ["no network attachment", { networkAttachment: undefined }, ["networkAttachment"]],
    ["a list of attachments", { networkAttachment: [{ subnet: "s", interface: "i", primary: true }] }, ["networkAttachment"]],
    ["a secondary attachment", { networkAttachment: { subnet: "s", securityGroups: [], interface: "i", primary: false } }, ["networkAttachment"]],
    ["an attachment without a fabric port", { networkAttachment: { subnet: "s", securityGroups: [], interface: "", primary: true } }, ["networkAttachment"]],
    ["labels without the order's uid", { labels: { other: "x" } }, ["labels"]],
    ["a connection without a token file", { connection: { address: "fulfillment:8443" } }, ["connection"]],
    ["a guard without its slot", { guard: { kubeconfigPath: "/k", namespace: "n", orderName: "o", orderUid: "u", slot: "" } }, ["guard"]],
    ["a guard whose slot is not known yet", { guard: { kubeconfigPath: "/k", namespace: "n", orderName: "o", orderUid: "u", slot: UNKNOWN } }, []],
  ])("%s", async (_case, patch, failing) => {
    expect(await bmiFailures(bmi(patch))).toEqual(failing);
  });

  it("reports the size of oversized ignition, never its content", async () => {
    const r = await bareMetalInstanceProvider.check!({}, bmi({ userData: `secret-${"x".repeat(65_536)}` }));
    expect(r.failures).toEqual([{ property: "userData", reason: expect.stringContaining("65543 bytes") }]);
    expect(JSON.stringify(r.failures)).not.toContain("secret-");
  });
});

describe("BareMetalInstance diff", () => {
  const olds = (): BareMetalInstanceOutputs => ({ ...bmi(), bmiId: "id-1", state: "Running", deleting: false, macs: [] });
  const noChange = { changes: false, replaces: [], deleteBeforeReplace: false };
  const update = { changes: true, replaces: [], deleteBeforeReplace: false };

  it.each<[string, Partial<Record<keyof BareMetalInstanceInputs, unknown>>, object]>([
    ["the same inputs", {}, noChange],
    ["the same labels in another key order", { labels: { b: "2", [ORDER_LABEL]: "uid-co1" } }, update],
    ["new ignition (create-only: drift, never a replace)", { userData: "{\"ignition\":{\"v\":2}}" }, noChange],
    ["another disk image", { diskImage: "di-420" }, noChange],
    ["another instance type", { instanceType: "bm.gpu" }, noChange],
    ["another catalog item", { catalogItem: "cat-other" }, noChange],
    ["another fabric port", { networkAttachment: { subnet: "subnet-1", securityGroups: ["sg-1"], interface: "eth2", primary: true } }, noChange],
    ["an unknown attachment", { networkAttachment: unknown() }, noChange],
    ["an adopt id", { adoptId: "id-1" }, noChange],
    ["a new label", { labels: { [ORDER_LABEL]: "uid-co1", extra: "1" } }, update],
    ["a new annotation", { annotations: { note: "n" } }, update],
    // Paths and the endpoint are this machine's settings (another replica's or an admin's differ): never a change.
    ["another endpoint and token path", { connection: { address: "elsewhere:443", tokenFile: "/elsewhere/token" } }, noChange],
    ["the guard's kubeconfig at another path", { guard: { kubeconfigPath: "/elsewhere/kubeconfig", namespace: "tenant-a", orderName: "co1", orderUid: "uid-co1", slot: "s1" } }, noChange],
    ["another guard slot", { guard: { kubeconfigPath: "/run/kubeconfig", namespace: "tenant-a", orderName: "co1", orderUid: "uid-co1", slot: "s9" } }, update],
    ["unknown labels", { labels: unknown() }, update],
  ])("%s", async (_case, patch, expected) => {
    expect(await bareMetalInstanceProvider.diff!("id-1", olds(), bmi(patch))).toEqual(expected);
  });

  it("treats key order inside a value as no change", async () => {
    const reordered = bmi({ guard: { slot: "s1", orderUid: "uid-co1", orderName: "co1", namespace: "tenant-a", kubeconfigPath: "/run/kubeconfig" } });
    expect(await bareMetalInstanceProvider.diff!("id-1", olds(), reordered)).toEqual(noChange);
  });
});

function binding(patch: Partial<Record<keyof AgentBindingInputs, unknown>> = {}): AgentBindingInputs {
  return {
    agentName: "agent-1", agentNamespace: "tenant-a", agentUid: "auid-1",
    clusterDeploymentName: { name: "co1", namespace: "tenant-a" },
    labels: { "osac.openshift.io/worker-name": "s1" },
    slot: "s1", orderUid: "uid-co1", kubeconfigPath: "/run/kubeconfig", bmiId: "id-1",
    ...patch,
  } as AgentBindingInputs;
}

describe("AgentBinding check", () => {
  it.each<[string, Partial<Record<keyof AgentBindingInputs, unknown>>, string[]]>([
    ["a well-formed binding", {}, []],
    ["a preview: the Agent not known yet", { agentName: UNKNOWN, agentUid: UNKNOWN, clusterDeploymentName: UNKNOWN }, []],
    ["no Agent name", { agentName: "" }, ["agentName"]],
    ["no slot, order or kubeconfig", { slot: "", orderUid: undefined, kubeconfigPath: "" }, ["kubeconfigPath", "orderUid", "slot"]],
    ["a ClusterDeployment without a namespace", { clusterDeploymentName: { name: "co1" } }, ["clusterDeploymentName"]],
    ["no ClusterDeployment", { clusterDeploymentName: undefined }, ["clusterDeploymentName"]],
  ])("%s", async (_case, patch, failing) => {
    const r = await agentBindingProvider.check!({}, binding(patch));
    expect((r.failures ?? []).map((f) => f.property).sort()).toEqual(failing);
  });
});

describe("AgentBinding diff", () => {
  const olds = (): AgentBindingOutputs => ({ ...binding(), bound: true, approved: true, resourceVersion: "7" });

  it.each<[string, Partial<Record<keyof AgentBindingInputs, unknown>>, { changes: boolean; replaces: string[] }]>([
    ["the same inputs", {}, { changes: false, replaces: [] }],
    ["another Agent under the same name (a new uid)", { agentUid: "auid-2" }, { changes: true, replaces: ["agentUid"] }],
    ["another Agent", { agentName: "agent-2", agentUid: "auid-2" }, { changes: true, replaces: ["agentName", "agentUid"] }],
    ["a new BMI incarnation behind the slot", { bmiId: "id-2" }, { changes: true, replaces: ["bmiId"] }],
    ["an Agent not known yet", { agentUid: UNKNOWN }, { changes: true, replaces: ["agentUid"] }],
    ["new labels", { labels: { "osac.openshift.io/worker-name": "s1", extra: "1" } }, { changes: true, replaces: [] }],
    ["another ClusterDeployment", { clusterDeploymentName: { name: "co2", namespace: "tenant-a" } }, { changes: true, replaces: [] }],
    ["the kubeconfig at another path (this machine's setting)", { kubeconfigPath: "/run/other" }, { changes: false, replaces: [] }],
  ])("%s", async (_case, patch, expected) => {
    const d = await agentBindingProvider.diff!("tenant-a/agent-1", olds(), binding(patch));
    expect({ changes: d.changes, replaces: d.replaces }).toEqual(expected);
  });

  it("unbinds before binding another Agent (delete before replace)", async () => {
    expect((await agentBindingProvider.diff!("tenant-a/agent-1", olds(), binding({ agentUid: "auid-2" }))).deleteBeforeReplace).toBe(true);
  });
});
