// The assisted-service stand-in against the jest apiserver: discovery ignition per InfraEnv over
// HTTPS with the lab CA, an Agent with the host's MACs when a BMI boots that ignition, and nothing
// for a stale one.
import * as fs from "node:fs";
import type { FulfillmentClient } from "../../clients/fulfillment";
import { NotFoundError } from "../../clients/fulfillment";
import type { Lab } from "../../lab";
import type { Agent, InfraEnv } from "../../lab/controllers/types";
import { Kube, RESOURCES } from "../../lab/kube";
import { eventually } from "../support/eventually";
import { agentsIn, bootBmi, createInfraEnv, FAST, httpsGet, ignitionUrl, infraEnvWithSecret, startTestLab } from "./helpers";

let lab: Lab;
let kube: Kube;
let client: FulfillmentClient;
let ca: Buffer;
const ns = (s: string) => `lab-${s}-${process.pid}-${Date.now().toString(36)}`;

beforeAll(async () => {
  lab = await startTestLab("assisted");
  kube = new Kube(lab.kubeConfig());
  client = lab.fulfillmentClient();
  ca = fs.readFileSync(lab.assisted.caFile);
});

afterAll(async () => {
  client?.close();
  await lab?.stop();
  if (lab) fs.rmSync(lab.dir, { recursive: true, force: true });
});

test("an InfraEnv gets its discovery ignition URL only once its pull secret exists", async () => {
  const n = ns("secret");
  await lab.createNamespace(n);
  await createInfraEnv(kube, n, "o1-infraenv", "o1-pull-secret");
  const notReady = await eventually(async () => {
    const ie = await kube.get<InfraEnv>(RESOURCES.infraEnv, n, "o1-infraenv");
    return ie?.status?.conditions?.find((c) => c.type === "ImageCreated" && c.status === "False") ? ie : undefined;
  });
  expect(notReady.status?.bootArtifacts?.discoveryIgnitionURL).toBeUndefined();
  await kube.core.createNamespacedSecret({
    namespace: n,
    body: { metadata: { name: "o1-pull-secret" }, type: "kubernetes.io/dockerconfigjson",
      data: { ".dockerconfigjson": Buffer.from(lab.pullSecret.dockerconfigjson).toString("base64") } },
  });
  const { url, uid } = await ignitionUrl(kube, n, "o1-infraenv");
  expect(url).toContain(`/api/assisted-install/v2/infra-envs/${uid}/downloads/files?file_name=discovery.ign&api_key=`);
  const ie = await kube.get<InfraEnv>(RESOURCES.infraEnv, n, "o1-infraenv");
  expect(ie?.status?.agentLabelSelector?.matchLabels).toEqual({ "infraenvs.agent-install.openshift.io": "o1-infraenv" });
  expect(ie?.status?.conditions?.find((c) => c.type === "ImageCreated")?.status).toBe("True");
});

test("the ignition endpoint presents the lab CA and serves ~15 KB of ignition with the pull secret", async () => {
  const n = ns("https");
  await infraEnvWithSecret(lab, kube, n, "o2");
  const { url, uid } = await ignitionUrl(kube, n, "o2-infraenv");
  expect(url.startsWith("https://127.0.0.1:")).toBe(true);

  const res = await httpsGet(url, ca);
  expect(res.status).toBe(200);
  expect(res.issuer).toBe("baremetal-workers lab CA");
  const ign = JSON.parse(res.body) as { ignition: { version: string } };
  expect(ign.ignition.version).toMatch(/^3\./);
  expect(Buffer.byteLength(res.body)).toBeGreaterThan(12_000);
  expect(res.body).toContain(lab.pullSecret.token);
  expect(res.body).toContain(uid);

  // Without the lab CA the server is not trusted.
  await expect(httpsGet(url)).rejects.toMatchObject({ code: expect.stringMatching(/SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/) });
  // A URL whose api_key does not match the infra env is refused.
  expect((await httpsGet(url.replace(/api_key=[0-9a-f]+/, "api_key=00"), ca)).status).toBe(401);
});

test("a host booting the InfraEnv's ignition registers an Agent with its MACs; deleting the BMI keeps the Agent", async () => {
  const n = ns("boot");
  await infraEnvWithSecret(lab, kube, n, "o3");
  const { url } = await ignitionUrl(kube, n, "o3-infraenv");
  const ignition = (await httpsGet(url, ca)).body;
  const bmi = await bootBmi(client, ignition);
  const bmiMacs = (bmi.status?.hardware?.nics ?? []).map((nic) => nic.mac);
  expect(bmiMacs.length).toBe(3);

  // Like the real service, the Agent is created first and its status reported right after.
  const agent = await eventually(async () => (await agentsIn(kube, n)).find((a) => a.status?.inventory), 10_000);
  expect(agent.metadata.name).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  expect(agent.metadata.labels?.["infraenvs.agent-install.openshift.io"]).toBe("o3-infraenv");
  expect(agent.spec?.approved).toBe(false);
  expect(agent.spec?.clusterDeploymentName).toBeUndefined();
  expect(agent.status?.debugInfo?.state).toBe("known-unbound");
  const interfaces = agent.status?.inventory?.interfaces ?? [];
  expect(interfaces.map((i) => i.macAddress.toLowerCase()).sort()).toEqual([...bmiMacs].sort());
  // The host reports its MACs in its own case; the BMI status lower-cases them.
  expect(interfaces.some((i) => i.macAddress !== i.macAddress.toLowerCase())).toBe(true);
  for (const i of interfaces) {
    expect(i).toEqual(expect.objectContaining({ flags: expect.any(Array), ipV4Addresses: expect.any(Array), ipV6Addresses: expect.any(Array) }));
  }
  expect(interfaces.map((i) => i.name)).toEqual(["eno1", "ens1f0", "ens1f1"]);

  await client.bareMetalInstances.delete(bmi.id);
  await eventually(async () => client.bareMetalInstances.get(bmi.id).then(() => undefined, (e: unknown) => (e instanceof NotFoundError ? true : undefined)), 10_000);
  await new Promise((r) => setTimeout(r, FAST.bootMs * 2));
  const still = await kube.get<Agent>(RESOURCES.agent, n, agent.metadata.name);
  expect(still?.metadata.uid).toBe(agent.metadata.uid);
});

test("a BMI booted with the ignition of a recreated InfraEnv never registers; the fresh ignition does", async () => {
  const n = ns("stale");
  await infraEnvWithSecret(lab, kube, n, "o4");
  const old = await ignitionUrl(kube, n, "o4-infraenv");
  const staleIgnition = (await httpsGet(old.url, ca)).body;

  await kube.delete(RESOURCES.infraEnv, n, "o4-infraenv");
  await eventually(async () => ((await kube.get(RESOURCES.infraEnv, n, "o4-infraenv")) ? undefined : true));
  await createInfraEnv(kube, n, "o4-infraenv", "o4-pull-secret");
  const fresh = await ignitionUrl(kube, n, "o4-infraenv", old.uid);
  // The old URL names an infra env that no longer exists.
  expect((await httpsGet(old.url, ca)).status).toBe(404);

  const before = (await lab.stats()).assisted;
  const staleBmi = await bootBmi(client, staleIgnition);
  await eventually(async () => ((await lab.stats()).assisted.staleBoots > before.staleBoots ? true : undefined), 10_000);
  await new Promise((r) => setTimeout(r, FAST.bootMs * 3));
  expect(await agentsIn(kube, n)).toEqual([]);

  const freshBmi = await bootBmi(client, (await httpsGet(fresh.url, ca)).body);
  const agent = await eventually(async () => (await agentsIn(kube, n)).find((a) => a.status?.inventory), 10_000);
  const freshMacs = (freshBmi.status?.hardware?.nics ?? []).map((x) => x.mac).sort();
  expect((agent.status?.inventory?.interfaces ?? []).map((i) => i.macAddress.toLowerCase()).sort()).toEqual(freshMacs);
  expect(await agentsIn(kube, n)).toHaveLength(1);
  expect((staleBmi.status?.hardware?.nics ?? []).map((x) => x.mac)).not.toEqual(freshMacs);
  for (const id of [staleBmi.id, freshBmi.id]) await client.bareMetalInstances.delete(id);
});
