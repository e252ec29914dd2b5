// Pure parts of observation: which hub objects belong to an order.
import { nodePoolsOfCluster } from "../../io/observe";

const pool = (name: string, clusterName: string) => ({ metadata: { name, namespace: "ns" }, spec: { clusterName, replicas: 0 } });

describe("nodePoolsOfCluster", () => {
  it("keeps only the NodePools of the order's HostedCluster when a namespace holds several clusters", () => {
    const pools = [pool("a-compute", "a"), pool("b-compute", "b"), pool("a-gpu", "a")];
    expect(nodePoolsOfCluster(pools, "a").map((p) => p.metadata.name)).toEqual(["a-compute", "a-gpu"]);
    expect(nodePoolsOfCluster(pools, "c")).toEqual([]);
  });

  it("keeps every NodePool of the namespace while the cluster is not known yet", () => {
    const pools = [pool("a-compute", "a"), pool("b-compute", "b")];
    expect(nodePoolsOfCluster(pools, undefined)).toHaveLength(2);
  });
});

import * as fs from "node:fs";
import { toObservedNodePool } from "../../io/observe";
import { FulfillmentClient } from "../../clients/fulfillment";
import { ACME_TOKEN, clearFaults, setFault, SYSTEM_ITEM, testSeed, workerBmi } from "../fulfillment/helpers";
import { hubWith, type ObserveFixture, orderRecording, startObserveFixture } from "../fulfillment/observeFixture";
import { CLUSTER_ID_LABEL, observe } from "../../io/observe";
import { Filter } from "../../clients/fulfillment";
import { ObserveCache } from "../../io/observeCache";
import { defaultPlannerConfig } from "../../planner/config";
import { evaluateGates } from "../../planner/gates";
import type { ClusterOrder } from "../../planner/types";

describe("observe against the simulator", () => {
  let fx: ObserveFixture;
  beforeAll(async () => {
    fx = await startObserveFixture();
  });
  afterAll(() => fx.close());
  afterEach(() => clearFaults(fx.lab));

  describe("absence from a List is not proof of deletion (I3)", () => {
    it("reads a recorded BMI the List left out with a Get, and keeps it", async () => {
      const bmis = await fx.createBmis(3, "i3-kept");
      await setFault(fx.lab, { list: { omit_id: bmis[1].id } });
      const gets = fx.calls("BareMetalInstances/Get");
      const { snapshot } = await fx.observeOrder(orderRecording(bmis));
      expect(snapshot.bmis?.map((b) => b.id).sort()).toEqual(bmis.map((b) => b.id).sort());
      expect(snapshot.goneBmiIds).toEqual([]);
      expect(fx.calls("BareMetalInstances/Get") - gets).toBe(1);
    });

    it("reports a recorded BMI as gone only when the Get says NOT_FOUND", async () => {
      const bmis = await fx.createBmis(1, "i3-gone");
      const missing = { id: "4f1c2b9e-0000-4000-8000-000000000000", name: "i3-gone-x" };
      const { snapshot } = await fx.observeOrder(orderRecording([...bmis, missing]));
      expect(snapshot.goneBmiIds).toEqual([missing.id]);
      expect(snapshot.bmis?.map((b) => b.id)).toContain(bmis[0].id);
      expect(snapshot.bmis?.map((b) => b.id)).not.toContain(missing.id);
    });

    it("leaves the BMI list unknown when that Get fails for another reason", async () => {
      const bmis = await fx.createBmis(2, "i3-unknown");
      await setFault(fx.lab, { list: { omit_id: bmis[0].id } });
      await setFault(fx.lab, { method: { method: "BareMetalInstances/Get", code: "INTERNAL" } });
      const obs = await fx.observeOrder(orderRecording(bmis));
      expect(obs.snapshot.bmis).toBeUndefined();
      expect(obs.snapshot.goneBmiIds).toBeUndefined();
      expect(obs.fulfillmentError).toMatch(/INTERNAL/);
    });

    it("leaves the BMI list unknown when the pages do not add up", async () => {
      const bmis = await fx.createBmis(2, "i3-pages");
      await setFault(fx.lab, { list: { short_page: 0 } });
      const obs = await fx.observeOrder(orderRecording(bmis));
      expect(obs.snapshot.bmis).toBeUndefined();
      expect(obs.snapshot.fulfillmentErrorKind).toBe("Other");
      expect(obs.fulfillmentError).toMatch(/did not add up across pages/);
    });
  });

  describe("NOT_FOUND proves a deletion only to a caller shown to see tenant system (I3)", () => {
    it("a token that cannot see tenant system makes no recorded BMI look gone: the BMI list is unknown, with the reason", async () => {
      const vis = await startObserveFixture(testSeed({ tenantPrivateAccess: "visibility" }));
      const file = `${vis.tokenFile}.acme`;
      fs.writeFileSync(file, ACME_TOKEN, { mode: 0o600 });
      const acme = new FulfillmentClient({ address: vis.sim.address, transport: { kind: "plaintext" }, tokenFile: file, deadlineMs: 5_000 });
      try {
        const bmis = await vis.createBmis(2, "invisible");
        // The order's own recording, read through a token rotated to a subject without admin rights.
        const obs = await vis.observeOrder(orderRecording(bmis), acme, { createCatalogItem: true });
        expect(obs.snapshot.goneBmiIds).toBeUndefined();
        expect(obs.snapshot.bmis).toBeUndefined();
        expect(obs.snapshot.fulfillmentErrorKind).toBe("PermissionDenied");
        expect(obs.fulfillmentError).toMatch(/every recorded BareMetalInstance \(2\) answered NOT_FOUND.*cannot be shown to see tenant system/);
        // The same order through the admin token: both are there.
        const admin = await vis.observeOrder(orderRecording(bmis));
        expect(admin.snapshot.goneBmiIds).toEqual([]);
        expect(admin.snapshot.bmis?.map((b) => b.id).sort()).toEqual(bmis.map((b) => b.id).sort());
      } finally {
        acme.close();
        await vis.close();
      }
    });

    it("an admin whose every recorded BMI is gone proves it sees tenant system with one read, also with a warm cache", async () => {
      const cache = new ObserveCache();
      const gone = { id: "4f1c2b9e-0000-4000-8000-0000000000aa", name: "all-gone-x" };
      await fx.observeOrder(orderRecording([]), undefined, { cache });
      const lists = fx.calls("BareMetalInstanceCatalogItems/List");
      // An order of its own: no listed BMI proves visibility.
      const order = orderRecording([gone]);
      order.metadata.uid = "order-all-gone";
      const { snapshot } = await fx.observeOrder(order, undefined, { cache });
      expect(snapshot.goneBmiIds).toEqual([gone.id]);
      expect(fx.calls("BareMetalInstanceCatalogItems/List") - lists).toBe(1);
    });
  });

  describe("a failure names the cause an operator can act on", () => {
    const withToken = (token: string) => {
      const file = `${fx.tokenFile}.${token.slice(0, 4)}`;
      fs.writeFileSync(file, token, { mode: 0o600 });
      return new FulfillmentClient({ address: fx.sim.address, transport: { kind: "plaintext" }, tokenFile: file, deadlineMs: 5_000 });
    };

    it("a refused token is Unauthenticated, not an outage, and the message never holds the token", async () => {
      const token = "refused-token-0123456789";
      const client = withToken(token);
      try {
        const obs = await fx.observeOrder(orderRecording([]), client);
        expect(obs.snapshot.bmis).toBeUndefined();
        expect(obs.snapshot.fulfillmentErrorKind).toBe("Unauthenticated");
        expect(obs.fulfillmentError).toMatch(/refused our credentials \(UNAUTHENTICATED\).*BMW_FULFILLMENT_TOKEN_FILE/);
        expect(obs.fulfillmentError).not.toContain(token);
      } finally {
        client.close();
      }
    });

    it("a token without admin rights is PermissionDenied", async () => {
      const client = withToken(ACME_TOKEN);
      try {
        const obs = await fx.observeOrder(orderRecording([]), client);
        expect(obs.snapshot.fulfillmentErrorKind).toBe("PermissionDenied");
        expect(obs.fulfillmentError).toMatch(/PERMISSION_DENIED.*admin access to the private API/);
      } finally {
        client.close();
      }
    });

    it("an unreachable service is Unavailable", async () => {
      await setFault(fx.lab, { method: { method: "*", code: "UNAVAILABLE" } });
      const obs = await fx.observeOrder(orderRecording([]));
      expect(obs.snapshot.fulfillmentErrorKind).toBe("Unavailable");
      expect(obs.fulfillmentError).toMatch(/unreachable or did not answer in time/);
    });
  });
});

describe("the system catalog item (design §2.6)", () => {
  const withoutSystemItem = (extra: object[] = []) => testSeed({
    catalogItems: [...(testSeed().catalogItems ?? []).filter((c) => c.metadata?.name !== SYSTEM_ITEM), ...extra],
  });

  it("is created in tenant system when missing, and its id (never its name) is used", async () => {
    // A same-named item of another tenant is not the system item.
    const fx = await startObserveFixture(withoutSystemItem([{ metadata: { name: SYSTEM_ITEM, tenant: "acme" }, published: true, tenant: "acme" }]));
    try {
      const { snapshot, catalogItemError } = await fx.observeOrder(orderRecording([]), undefined, { createCatalogItem: true });
      expect(catalogItemError).toBeUndefined();
      const stored = await fx.client.catalogItems.get(snapshot.catalogItem);
      expect(stored.metadata).toMatchObject({ name: SYSTEM_ITEM, tenant: "system" });
      expect(stored).toMatchObject({ published: true, tenant: "system", field_definitions: [] });
      const again = await fx.observeOrder(orderRecording([]), undefined, { createCatalogItem: true });
      expect(again.snapshot.catalogItem).toBe(snapshot.catalogItem);
      expect(fx.calls("BareMetalInstanceCatalogItems/Create")).toBe(1);
    } finally {
      await fx.close();
    }
  });

  it("is left unresolved (\"\") when it can be neither found nor created; the BMI list stays known", async () => {
    const fx = await startObserveFixture(withoutSystemItem());
    try {
      await setFault(fx.lab, { method: { method: "BareMetalInstanceCatalogItems/Create", code: "PERMISSION_DENIED" } });
      const obs = await fx.observeOrder(orderRecording([]), undefined, { createCatalogItem: true });
      expect(obs.snapshot.catalogItem).toBe("");
      expect(obs.catalogItemError).toMatch(/could not be created.*PERMISSION_DENIED/);
      expect(obs.snapshot.bmis).toEqual([]);
    } finally {
      await fx.close();
    }
  });

  it("is only looked for by a preview or `status` (no createCatalogItem): missing is reported, nothing is created", async () => {
    const fx = await startObserveFixture(withoutSystemItem());
    try {
      const obs = await fx.observeOrder(orderRecording([]));
      expect(obs.snapshot.catalogItem).toBe("");
      expect(obs.catalogItemError).toMatch(/does not exist yet; the next update creates it/);
      expect(fx.calls("BareMetalInstanceCatalogItems/Create")).toBe(0);
      expect(await fx.client.catalogItems.listAll(Filter.nameEquals(SYSTEM_ITEM))).toEqual([]);
    } finally {
      await fx.close();
    }
  });

  it("an unresolved item is not kept in the cache: the next reconcile resolves it at once", async () => {
    const fx = await startObserveFixture(withoutSystemItem());
    try {
      const cache = new ObserveCache({ catalogTtlMs: 60_000 });
      const opts = { cache, createCatalogItem: true };
      await setFault(fx.lab, { method: { method: "BareMetalInstanceCatalogItems/Create", code: "UNAVAILABLE", times: 1 } });
      const first = await fx.observeOrder(orderRecording([]), undefined, opts);
      expect(first.snapshot.catalogItem).toBe("");
      const second = await fx.observeOrder(orderRecording([]), undefined, opts);
      expect(second.catalogItemError).toBeUndefined();
      expect(second.snapshot.catalogItem).not.toBe("");
      // A resolved item is kept for the TTL.
      const calls = fx.calls("BareMetalInstanceCatalogItems/List");
      await fx.observeOrder(orderRecording([]), undefined, opts);
      expect(fx.calls("BareMetalInstanceCatalogItems/List")).toBe(calls);
    } finally {
      await fx.close();
    }
  });
});

describe("the HostType of the system catalog item's template (finding 9b)", () => {
  // The template's HostType accepts ens1f1 and ens3f0: not compute's first fabric port (ens1f0), none of gpu's (ens2f0).
  const hostedSeed = (hostType: string | undefined) => testSeed({
    catalogItems: [...(testSeed().catalogItems ?? []).filter((c) => c.metadata?.name !== SYSTEM_ITEM),
      { metadata: { name: SYSTEM_ITEM, tenant: "system" }, published: true, tenant: "system", template: { id: "tpl.system" } }],
    templates: [{ id: "tpl.system", metadata: { name: "system-tpl" }, ...(hostType ? { host_type: hostType } : {}) }],
    hostTypes: [{ id: "ht-sys", metadata: { name: "sys-host" }, interfaces: [
      { name: "eno1", role: "lifecycle" }, { name: "ens1f1", role: "fabric" }, { name: "ens3f0", role: "fabric" }] }],
  });
  const order = (requests: NonNullable<ClusterOrder["spec"]["nodeRequests"]>) =>
    ({ ...orderRecording([]), spec: { ...orderRecording([]).spec, nodeRequests: requests } });

  it("gives each instance type the fabric port the server accepts, and a reason when it accepts none", async () => {
    const fx = await startObserveFixture(hostedSeed("ht-sys"));
    try {
      const { snapshot } = await fx.observeOrder(orderRecording([]));
      const interfaces = [{ name: "eno1", role: "lifecycle" }, { name: "ens1f1", role: "fabric" }, { name: "ens3f0", role: "fabric" }];
      expect(snapshot.instanceTypes.compute).toEqual({ name: "compute", fabricPort: "ens1f1", hostType: { name: "sys-host", interfaces } });
      expect(snapshot.instanceTypes.gpu).toEqual({
        name: "gpu", hostType: { name: "sys-host", interfaces },
        interfaceProblem: "no fabric port of BareMetalInstanceType gpu (ens2f0) is a usable interface of HostType sys-host " +
          "(template tpl.system: ens1f1, ens3f0), which the fulfillment-service checks attachments against",
      });
      // The server takes the chosen port and refuses the instance type's first one.
      const attach = (name: string, iface: string) => {
        const b = workerBmi(name);
        return { ...b, spec: { ...b.spec, catalog_item: { id: snapshot.catalogItem },
          network_attachments: [{ subnet: { name: "a" }, interface: iface, primary: true }] } };
      };
      await expect(fx.client.bareMetalInstances.create(attach("hb-ok", snapshot.instanceTypes.compute.fabricPort!))).resolves.toBeDefined();
      await expect(fx.client.bareMetalInstances.create(attach("hb-first", "ens1f0"))).rejects.toThrow(/not found in host type 'ht-sys'/);
    } finally {
      await fx.close();
    }
  });

  it("the planner's gate names the reason for the node set whose instance type has no accepted port", async () => {
    const fx = await startObserveFixture(hostedSeed("ht-sys"));
    try {
      const { snapshot } = await fx.observeOrder(order([
        { nodeSet: "compute", numberOfNodes: 1, bareMetal: { instanceType: "compute" } },
        { nodeSet: "gpu", numberOfNodes: 1, bareMetal: { instanceType: "gpu" } }]));
      const gates = evaluateGates(snapshot);
      expect(gates.nodeSets.get("compute")).toMatchObject({ fabricInterface: "ens1f1" });
      expect(gates.nodeSets.get("compute")?.createBlocked).toBeUndefined();
      expect(gates.nodeSets.get("gpu")?.createBlocked).toMatch(/^node set gpu: no fabric port of BareMetalInstanceType gpu \(ens2f0\) is a usable interface of HostType sys-host/);
    } finally {
      await fx.close();
    }
  });

  it("a template without host_type keeps the instance type's first fabric port and no HostType", async () => {
    const fx = await startObserveFixture(hostedSeed(undefined));
    try {
      const { snapshot } = await fx.observeOrder(orderRecording([]));
      expect(snapshot.instanceTypes.compute).toEqual({ name: "compute", fabricPort: "ens1f0" });
      expect(snapshot.instanceTypes.gpu).toEqual({ name: "gpu", fabricPort: "ens2f0" });
    } finally {
      await fx.close();
    }
  });

  it("a HostType the template names but that does not exist leaves every port unresolved, with the reason", async () => {
    const fx = await startObserveFixture(hostedSeed("ht-gone"));
    try {
      const { snapshot } = await fx.observeOrder(orderRecording([]));
      expect(snapshot.instanceTypes.compute.fabricPort).toBeUndefined();
      expect(snapshot.instanceTypes.compute.interfaceProblem).toBe("the HostType 'ht-gone' of BareMetalInstanceTemplate 'tpl.system' does not exist; " +
        "the fulfillment-service would refuse every network attachment");
    } finally {
      await fx.close();
    }
  });

  it("the template and HostType are read with the catalog: a steady tick adds no calls", async () => {
    const fx = await startObserveFixture(hostedSeed("ht-sys"));
    try {
      const cache = new ObserveCache();
      const ref = { namespace: "ns", name: "demo" };
      const deps = { kube: hubWith(orderRecording([])), fulfillment: fx.client, config: defaultPlannerConfig(), cache };
      const first = await observe(deps, ref);
      const second = await observe(deps, ref);
      expect(second.snapshot.instanceTypes).toEqual(first.snapshot.instanceTypes);
      expect(fx.calls("BareMetalInstanceTemplates/Get")).toBe(1);
      expect(fx.calls("HostTypes/Get")).toBe(1);
    } finally {
      await fx.close();
    }
  });

  it("the ClusterVersion and DiskImage lookups are shared through the cache; the order's Cluster and what was not found are read again", async () => {
    const fx = await startObserveFixture();
    const lookups = () => ["ClusterVersions/List", "DiskImages/List"].map((m) => fx.calls(m));
    const withCluster = (id: string): ClusterOrder => {
      const order = orderRecording([]);
      return { ...order, metadata: { ...order.metadata, labels: { [CLUSTER_ID_LABEL]: id } } };
    };
    try {
      const cache = new ObserveCache();
      const ref = { namespace: "ns", name: "demo" };
      const deps = { kube: hubWith(withCluster("cluster-1")), fulfillment: fx.client, config: defaultPlannerConfig(), cache };
      const first = await observe(deps, ref);
      expect(first.snapshot.diskImage).toEqual({ ok: true, id: "di-rhcos-417", name: "rhcos-417" });
      const after = lookups();
      expect(after.every((n) => n >= 1)).toBe(true);
      const clustersBefore = fx.calls("Clusters/List");
      expect((await observe(deps, ref)).snapshot.diskImage).toEqual(first.snapshot.diskImage);
      expect(lookups()).toEqual(after);
      expect(fx.calls("Clusters/List") - clustersBefore).toBe(1);
      // Without the cache every observation looks them up again.
      await observe({ ...deps, cache: undefined }, ref);
      expect(lookups().map((n, i) => n - after[i])).toEqual(after);
      // A Cluster that does not exist is not remembered as missing.
      const gone = { ...deps, kube: hubWith(withCluster("cluster-gone")) };
      const clusters = fx.calls("Clusters/List");
      expect((await observe(gone, ref)).snapshot.diskImage).toMatchObject({ ok: false, reason: "ClusterVersionNotFound" });
      await observe(gone, ref);
      expect(fx.calls("Clusters/List") - clusters).toBe(2);
    } finally {
      await fx.close();
    }
  });

  it("an OBSOLETE DiskImage or a ClusterVersion without one is not shared: its repair is seen by the next observation", async () => {
    const fx = await startObserveFixture();
    const setLifecycle = async (lifecycle: string) => {
      const di = await fx.client.diskImages.get("di-rhcos-417");
      await fx.client.diskImages.update({ ...di, spec: { ...di.spec, lifecycle } } as never, { updateMask: ["spec.lifecycle"] });
    };
    try {
      const order = orderRecording([]);
      const deps = { kube: hubWith({ ...order, metadata: { ...order.metadata, labels: { [CLUSTER_ID_LABEL]: "cluster-1" } } }),
        fulfillment: fx.client, config: defaultPlannerConfig(), cache: new ObserveCache() };
      const ref = { namespace: "ns", name: "demo" };
      await setLifecycle("DISK_IMAGE_LIFECYCLE_OBSOLETE");
      expect((await observe(deps, ref)).snapshot.diskImage).toMatchObject({ ok: false, reason: "Obsolete" });
      await setLifecycle("DISK_IMAGE_LIFECYCLE_AVAILABLE");
      expect((await observe(deps, ref)).snapshot.diskImage).toEqual({ ok: true, id: "di-rhcos-417", name: "rhcos-417" });
      // Usable again, it is shared as before.
      const lists = fx.calls("DiskImages/List");
      await observe(deps, ref);
      expect(fx.calls("DiskImages/List")).toBe(lists);
      // The same for a ClusterVersion that links no image, once it links one again (a fresh cache: the
      // ClusterVersion that linked one is shared, and its unlinking is seen up to 30 s later, F19).
      const cv = await fx.client.clusterVersions.get("cv-4-17-3");
      const link = async (diskImage: { id: string } | undefined) => fx.client.clusterVersions.update(
        { ...cv, spec: { ...cv.spec, disk_image: diskImage } } as never, { updateMask: ["spec.disk_image"] });
      const fresh = { ...deps, cache: new ObserveCache() };
      await link(undefined);
      expect((await observe(fresh, ref)).snapshot.diskImage).toMatchObject({ ok: false, reason: "NotLinked" });
      await link({ id: "di-rhcos-417" });
      expect((await observe(fresh, ref)).snapshot.diskImage).toEqual({ ok: true, id: "di-rhcos-417", name: "rhcos-417" });
    } finally {
      await fx.close();
    }
  });
});

describe("toObservedNodePool", () => {
  it("carries the pool's agentLabelSelector", () => {
    const np = {
      metadata: { name: "demo-compute", namespace: "ns" },
      spec: { replicas: 2, platform: { agent: { agentLabelSelector: {
        matchLabels: { "osac.openshift.io/node-set": "compute" },
        matchExpressions: [{ key: "agentBareMetal", operator: "Exists" }],
      } } } },
    };
    expect(toObservedNodePool(np).agentSelector).toEqual({
      matchLabels: { "osac.openshift.io/node-set": "compute" },
      matchExpressions: [{ key: "agentBareMetal", operator: "Exists" }],
    });
    expect(toObservedNodePool({ metadata: { name: "p" }, spec: { replicas: 1 } }).agentSelector).toBeUndefined();
  });
});
