// The Pulumi program: one stack per ClusterOrder. The reconciler (automation/) runs it through the
// Automation API on this on-disk project, so the program it applies is the one admins preview.
import * as pulumi from "@pulumi/pulumi";

const config = new pulumi.Config();

/** namespace/name of the ClusterOrder this stack manages. */
export const clusterOrder = config.get("clusterOrder") ?? "";
