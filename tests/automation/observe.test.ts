// Pure parts of observation: which hub objects belong to an order.
import { nodePoolsOfCluster } from "../../automation/observe";

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
