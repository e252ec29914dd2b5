// ClusterOrders on the test plane for the BMI provider's delete guard: create one, set its workers[]
// status, hold it in deletion with a test finalizer.
import * as k8s from "@kubernetes/client-node";
import { Kube, loadKubeConfig } from "../../clients/kube";
import type { ClusterOrder, WorkerPhase } from "../../planner/types";
import type { DeleteGuard } from "../../providers/bareMetalInstance";
import { createTestNamespace, kubeConfig } from "../support/kube";

const CO = { group: "osac.openshift.io", version: "v1alpha1", plural: "clusterorders" };
export const HOLD_FINALIZER = "tests.bmw/hold";

export interface TestOrder {
  namespace: string;
  name: string;
  uid: string;
  guard(slot: string): DeleteGuard;
}

function api(): k8s.CustomObjectsApi {
  return kubeConfig().makeApiClient(k8s.CustomObjectsApi);
}

export async function createOrder(name = "order-1", opts: { hold?: boolean } = {}): Promise<TestOrder> {
  const namespace = await createTestNamespace(kubeConfig(), "bmi-guard");
  const created = await api().createNamespacedCustomObject({
    ...CO, namespace, body: {
      apiVersion: `${CO.group}/${CO.version}`, kind: "ClusterOrder",
      metadata: { name, namespace, ...(opts.hold ? { finalizers: [HOLD_FINALIZER] } : {}) },
      spec: { templateID: "osac.templates.ocp_baremetal_workers" },
    },
  }) as ClusterOrder;
  const uid = created.metadata.uid;
  return {
    namespace, name, uid,
    guard: (slot) => ({ kubeconfigPath: process.env.KUBECONFIG!, namespace, orderName: name, orderUid: uid, slot }),
  };
}

/** Sets the order's status.workers to one entry per given worker. */
export async function setWorkers(order: TestOrder,
  workers: { slot: string; phase: WorkerPhase; bmi: { name: string; id?: string } }[]): Promise<void> {
  const kube = new Kube(loadKubeConfig(process.env.KUBECONFIG));
  await kube.applyClusterOrderStatus({ namespace: order.namespace, name: order.name }, {
    workers: workers.map((w) => ({ name: w.slot, nodeSet: "compute", kind: "BareMetalInstance", phase: w.phase, bareMetalInstance: w.bmi })),
  });
}

export async function deleteOrder(order: TestOrder): Promise<void> {
  await api().deleteNamespacedCustomObject({ ...CO, namespace: order.namespace, name: order.name });
}

/** Lets an order held by HOLD_FINALIZER go. */
export async function releaseOrder(order: TestOrder): Promise<void> {
  await api().patchNamespacedCustomObject({
    ...CO, namespace: order.namespace, name: order.name, body: { metadata: { finalizers: null } },
  }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
}
