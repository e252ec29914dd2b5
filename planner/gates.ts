// What must hold before any BMI may be created (OSAC-2135 §2 steps 2–6, §11.2–4) and the validation
// of the bare-metal node requests. Gates only ever block creates: existing workers are never deleted
// because an input is missing or wrong; a node set whose requested count is invalid, or whose NodePool
// may take another node set's Agents, is frozen.
import { describeConflict, poolConflicts } from "./agentSelectors";
import {
  COND_CATALOG_ITEM_NOT_FOUND, COND_CLUSTER_NOT_READY, COND_INFRAENV_READY, COND_INVALID_NODE_REQUEST,
  COND_RHCOS_IMAGE_NOT_FOUND, cond, type ConditionInput,
} from "./conditions";
import { IGNITION_OF_NEW_INFRAENV, infraEnvName, SYSTEM_CATALOG_ITEM } from "./names";
import { isBareMetalRequest } from "./status";
import type { InstanceTypeInfo, Snapshot } from "./types";

export interface NodeSetSpec {
  nodeSet: string;
  desired: number;
  instanceType: string;
  /** nodeRequest.fabricInterface, else the instance type's fabric port the HostType accepts; absent when blocked. */
  fabricInterface?: string;
  /** The requested count is unusable, or the NodePool mapping is ambiguous: no creates, no scale-down, NodePool untouched. */
  frozen: boolean;
  /**
   * A NodePool may select this node set's Agents for another set (or the reverse): CAPI may unbind its
   * workers by mistake, so even a retirement that follows an unbinding is held.
   */
  poolConflict?: boolean;
  /** Why this node set cannot create BMIs (scale-down still runs). */
  createBlocked?: string;
}

export interface CreateInputs {
  userData: string;
  ignitionBytes: number;
  diskImageId: string;
  subnet: string;
  securityGroups: string[];
}

export interface Gates {
  nodeSets: Map<string, NodeSetSpec>;
  /** Reasons no BMI may be created at all; empty when creates are possible. */
  createBlockers: string[];
  /** The URL exists but the ignition was not fetched for this snapshot. */
  ignitionNotFetched: boolean;
  /** Waiting on the ignition (URL or content): poll again after ignitionPollMs. */
  pollIgnition: boolean;
  /** Everything a create needs, when the global gates pass. */
  inputs?: CreateInputs;
  /** One message per NodePool whose agentLabelSelector may select another node set's Agents. */
  poolConflicts: string[];
  conditions: ConditionInput[];
}

function networkOf(snapshot: Snapshot): { subnetRef: string; securityGroupRefs?: string[] } | undefined {
  return snapshot.order.spec.networkAttachment ?? snapshot.order.spec.networkAttachments?.[0];
}

function nodeSetSpecs(snapshot: Snapshot, problems: string[]): Map<string, NodeSetSpec> {
  const { config } = snapshot;
  const requests = (snapshot.order.spec.nodeRequests ?? []).filter(isBareMetalRequest);
  const counts = new Map<string, number>();
  for (const r of requests) counts.set(r.nodeSet, (counts.get(r.nodeSet) ?? 0) + 1);
  const out = new Map<string, NodeSetSpec>();
  for (const r of requests) {
    const instanceType = r.bareMetal?.instanceType ?? "";
    const spec: NodeSetSpec = { nodeSet: r.nodeSet, desired: 0, instanceType, frozen: false };
    if ((counts.get(r.nodeSet) ?? 0) > 1) {
      if (!out.has(r.nodeSet)) problems.push(`node set ${r.nodeSet} is requested ${counts.get(r.nodeSet)} times; its workers are left as they are`);
      out.set(r.nodeSet, { ...spec, frozen: true });
      continue;
    }
    if (!Number.isInteger(r.numberOfNodes) || r.numberOfNodes < 0 || r.numberOfNodes > config.maxWorkersPerNodeSet) {
      problems.push(`node set ${r.nodeSet}: numberOfNodes ${r.numberOfNodes} is outside 0..${config.maxWorkersPerNodeSet}; its workers are left as they are`);
      out.set(r.nodeSet, { ...spec, frozen: true });
      continue;
    }
    spec.desired = r.numberOfNodes;
    const type = snapshot.instanceTypes[instanceType];
    if (!type) {
      spec.createBlocked = `node set ${r.nodeSet}: BareMetalInstanceType ${instanceType} does not exist`;
    } else {
      spec.fabricInterface = r.fabricInterface || type.fabricPort;
      spec.createBlocked = fabricInterfaceProblem(r.nodeSet, r.fabricInterface, type);
      if (spec.createBlocked) spec.fabricInterface = undefined;
    }
    if (spec.createBlocked) problems.push(spec.createBlocked);
    out.set(r.nodeSet, spec);
  }
  return out;
}

/**
 * Why no BMI of this node set could be attached: the server checks the interface against the HostType
 * of the catalog item's template, so an explicit fabricInterface is checked against it too, and an
 * instance type none of whose fabric ports that HostType accepts gets no port guessed for it.
 */
function fabricInterfaceProblem(nodeSet: string, requested: string | undefined, type: InstanceTypeInfo): string | undefined {
  const hostType = type.hostType;
  if (requested) {
    if (!hostType) return undefined;
    const iface = hostType.interfaces.find((i) => i.name === requested);
    if (iface && iface.role !== "lifecycle") return undefined;
    if (type.interfaceProblem && hostType.interfaces.length === 0) return `node set ${nodeSet}: ${type.interfaceProblem}`;
    const usable = hostType.interfaces.filter((i) => i.role !== "lifecycle").map((i) => i.name);
    const why = iface ? `has role lifecycle on HostType ${hostType.name}, which the fulfillment-service refuses for tenant networking`
      : `is not an interface of HostType ${hostType.name}`;
    return `node set ${nodeSet}: fabricInterface ${requested} ${why}; usable interfaces: ${usable.join(", ") || "none"}`;
  }
  if (type.fabricPort) return undefined;
  if (type.interfaceProblem) return `node set ${nodeSet}: ${type.interfaceProblem}; set the node request's fabricInterface to a usable interface`;
  return `node set ${nodeSet}: BareMetalInstanceType ${type.name} has no network port with role fabric and the node request sets no fabricInterface`;
}

/**
 * A new order's first update creates its InfraEnv and, once that InfraEnv publishes its discovery ignition,
 * the BMIs (decisions F18): one update instead of two. Only for an order that never had an InfraEnv and has
 * no worker yet; a deleted InfraEnv is recreated on its own, for the stale-ignition rules.
 */
function ignitionAtUpdate(snapshot: Snapshot): boolean {
  return !snapshot.infraEnv && !snapshot.recordedInfraEnvUid && (snapshot.order.status?.workers ?? []).length === 0;
}

function infraEnvGate(snapshot: Snapshot, blockers: string[]): { condition: ConditionInput; poll: boolean; notFetched: boolean } {
  const name = infraEnvName(snapshot.order.metadata.name);
  const env = snapshot.infraEnv;
  const { ignitionMaxBytes, ignitionPollMs } = snapshot.config;
  const pollNote = `polling every ${Math.round(ignitionPollMs / 1000)}s`;
  if (!env && ignitionAtUpdate(snapshot)) {
    return { condition: cond(COND_INFRAENV_READY, "False", "InfraEnvNotFound", `InfraEnv ${name} does not exist yet; the next update ` +
      "creates it and, once it publishes its discovery ignition, the workers"), poll: true, notFetched: false };
  }
  if (!env) {
    blockers.push("the InfraEnv does not exist yet");
    return { condition: cond(COND_INFRAENV_READY, "False", "InfraEnvNotFound", `InfraEnv ${name} does not exist yet; it is being created`), poll: true, notFetched: false };
  }
  if (!env.ignitionUrl) {
    blockers.push("the discovery ignition URL is not set yet");
    return { condition: cond(COND_INFRAENV_READY, "False", "IgnitionNotReady", `InfraEnv ${name} has no discovery ignition URL yet (status.bootArtifacts.discoveryIgnitionURL); ${pollNote}`), poll: true, notFetched: false };
  }
  const ign = snapshot.ignition;
  if (!ign) {
    blockers.push("the discovery ignition was not fetched");
    return { condition: cond(COND_INFRAENV_READY, "True", "IgnitionURLAvailable", `InfraEnv ${name} publishes its discovery ignition URL`), poll: false, notFetched: true };
  }
  if (!ign.ok) {
    blockers.push("the discovery ignition could not be fetched");
    return { condition: cond(COND_INFRAENV_READY, "False", "IgnitionFetchFailed", `fetching the discovery ignition of InfraEnv ${name} failed (${ign.reason}): ${ign.message}; ${pollNote}`), poll: true, notFetched: false };
  }
  if (ign.bytes > ignitionMaxBytes) {
    blockers.push("the discovery ignition is too large");
    return { condition: cond(COND_INFRAENV_READY, "False", "IgnitionTooLarge", `the discovery ignition of InfraEnv ${name} is ${ign.bytes} bytes, more than the ${ignitionMaxBytes}-byte BareMetalInstance user_data limit; no workers are created`), poll: true, notFetched: false };
  }
  return { condition: cond(COND_INFRAENV_READY, "True", "IgnitionAvailable", `InfraEnv ${name} discovery ignition fetched (${ign.bytes} bytes)`), poll: false, notFetched: false };
}

/** Freezes the node sets that an ambiguous NodePool selector puts at risk; returns the messages. */
function freezePoolConflicts(snapshot: Snapshot, nodeSets: Map<string, NodeSetSpec>): string[] {
  const conflicts = poolConflicts(snapshot.nodePools, snapshot.order, [...nodeSets.keys()]);
  for (const c of conflicts) {
    for (const set of [c.servedSet, ...c.otherSets]) {
      const spec = nodeSets.get(set);
      if (spec) nodeSets.set(set, { ...spec, frozen: true, poolConflict: true });
    }
  }
  if (conflicts.length === 0) return [];
  const frozen = [...new Set(conflicts.flatMap((c) => [c.servedSet, ...c.otherSets]))].sort();
  return [...conflicts.map(describeConflict),
    `node set${frozen.length > 1 ? "s" : ""} ${frozen.join(", ")} ${frozen.length > 1 ? "are" : "is"} frozen (no creates, no deletes, ` +
    `replicas unchanged) until each NodePool selects only the Agents of its own node set`];
}

function catalogItemGate(snapshot: Snapshot, blockers: string[]): ConditionInput {
  // "" is the observer's word for "neither found nor created": a Create with a wrong id would be refused.
  const id = (snapshot.catalogItem ?? "").trim();
  if (id) {
    return cond(COND_CATALOG_ITEM_NOT_FOUND, "False", "CatalogItemResolved", `the system BareMetalInstanceCatalogItem ${SYSTEM_CATALOG_ITEM} is ${id}`);
  }
  blockers.push("the system catalog item is not resolved");
  return cond(COND_CATALOG_ITEM_NOT_FOUND, "True", "SystemCatalogItemNotFound",
    `the system BareMetalInstanceCatalogItem ${SYSTEM_CATALOG_ITEM} (tenant system) could not be found or created on the ` +
    "fulfillment-service; no bare-metal workers are created until it resolves");
}

/** Evaluates every create gate and the node requests; pure. */
export function evaluateGates(snapshot: Snapshot): Gates {
  const blockers: string[] = [];
  const problems: string[] = [];
  const conditions: ConditionInput[] = [];
  const nodeSets = nodeSetSpecs(snapshot, problems);
  const conflicts = freezePoolConflicts(snapshot, nodeSets);

  const infra = infraEnvGate(snapshot, blockers);
  conditions.push(infra.condition);

  const disk = snapshot.diskImage;
  if (disk.ok) {
    conditions.push(cond(COND_RHCOS_IMAGE_NOT_FOUND, "False", "DiskImageResolved", `the current ClusterVersion links DiskImage ${disk.name} (${disk.id})`));
  } else {
    blockers.push("the RHCOS DiskImage is not resolved");
    conditions.push(cond(COND_RHCOS_IMAGE_NOT_FOUND, "True", disk.reason, `${disk.message}; no bare-metal workers are created until the cluster's ClusterVersion links a usable DiskImage`));
  }

  const cd = snapshot.clusterDeployment;
  if (cd) {
    conditions.push(cond(COND_CLUSTER_NOT_READY, "False", "ClusterDeploymentFound", `ClusterDeployment ${cd.namespace}/${cd.name} exists`));
  } else {
    blockers.push("the ClusterDeployment does not exist yet");
    conditions.push(cond(COND_CLUSTER_NOT_READY, "True", "ClusterDeploymentNotFound", `no ClusterDeployment exists for this cluster in namespace ${snapshot.order.metadata.namespace} yet; bare-metal workers are created only once it does`));
  }

  const network = networkOf(snapshot);
  if (nodeSets.size > 0 && (!network || !network.subnetRef)) {
    problems.push("spec.networkAttachment.subnetRef is not set: a BareMetalInstance needs the cluster's subnet");
    blockers.push("the network attachment is missing");
  }
  conditions.push(catalogItemGate(snapshot, blockers));
  conditions.push(problems.length > 0
    ? cond(COND_INVALID_NODE_REQUEST, "True", "InvalidNodeRequest", problems.join("; "))
    : cond(COND_INVALID_NODE_REQUEST, "False", "NodeRequestsValid", "every bare-metal node request is valid"));

  const ign = snapshot.ignition;
  const ignition = ign?.ok ? { userData: ign.content, ignitionBytes: ign.bytes }
    : ignitionAtUpdate(snapshot) ? { userData: IGNITION_OF_NEW_INFRAENV, ignitionBytes: 0 } : undefined;
  const inputs = blockers.length === 0 && ignition && disk.ok && network
    ? { ...ignition, diskImageId: disk.id, subnet: network.subnetRef, securityGroups: [...(network.securityGroupRefs ?? [])] }
    : undefined;
  return {
    nodeSets, createBlockers: blockers, ignitionNotFetched: infra.notFetched, pollIgnition: infra.poll, inputs, poolConflicts: conflicts, conditions,
  };
}
