// The sample world the lab's fulfillment simulator starts with: one tenant with its subnet and
// security group names, the BareMetalInstanceTypes `compute` and `gpu` (network_ports with a
// `fabric` port, host_label_selector), a labelled host inventory with MACs, the system pass-through
// catalog item, an RHCOS DiskImage and ClusterVersions, one of which references it (proposal field
// ClusterVersion.spec.disk_image = 7, also named in the annotation today's service keeps).
import * as crypto from "node:crypto";
import type { SeedHost, SimulatorSeed } from "./fulfillment/seed";
import type { LabTimings } from "./timings";

export const LAB_TENANT = "acme";
export const LAB_SUBNET = "acme-workers-subnet";
export const LAB_SECURITY_GROUPS = ["acme-workers-sg"];
export const SYSTEM_CATALOG_ITEM = "system-bmi-passthrough";
export const HOST_CLASS_LABEL = "osac.openshift.io/host-class";
export const DISK_IMAGE_ID = "di-rhcos-417";
/** References DISK_IMAGE_ID. */
export const CLUSTER_VERSION_ID = "cv-4-17-3";
/** A ClusterVersion without any DiskImage, for RHCOSImageNotFound. */
export const CLUSTER_VERSION_WITHOUT_IMAGE_ID = "cv-4-18-0";
export const RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-release:4.17.3-x86_64";

export interface InstanceTypePorts {
  /** Interface names in the order the host's MACs are listed. */
  ports: string[];
}

/** Port layout per instance type; host MACs are listed in this order. */
export const INSTANCE_TYPE_PORTS: Record<string, string[]> = {
  compute: ["eno1", "ens1f0", "ens1f1"],
  gpu: ["eno1", "ens2f0"],
};

function mac(prefix: string, hostIndex: number, port: number, upper: boolean): string {
  const s = `${prefix}:${hostIndex.toString(16).padStart(2, "0")}:${(port + 1).toString(16).padStart(2, "0")}`;
  return upper ? s.toUpperCase() : s;
}

/**
 * `count` hosts, three quarters compute and a quarter gpu (16 → 12 + 4). Compute NICs are written in
 * upper case, as some BMCs and inventories report them; the simulator lower-cases them in BMI status.
 */
export function labHosts(count = 16): SeedHost[] {
  const gpus = Math.max(1, Math.floor(count / 4));
  const hosts: SeedHost[] = [];
  for (let i = 0; i < count; i++) {
    const gpu = i >= count - gpus;
    const idx = gpu ? i - (count - gpus) : i;
    const cls = gpu ? "gpu" : "compute";
    hosts.push({
      name: `${cls}-${String(idx).padStart(2, "0")}`,
      macs: INSTANCE_TYPE_PORTS[cls].map((_, p) => mac(gpu ? "b8:3f:d2:7e" : "0c:c4:7a:e1", idx, p, !gpu)),
      labels: { [HOST_CLASS_LABEL]: cls, "topology.kubernetes.io/zone": `rack-${(idx % 2) + 1}` },
    });
  }
  return hosts;
}

export interface WorldOptions {
  adminToken: string;
  tenantToken: string;
  hosts?: number;
  timings: Pick<LabTimings, "provisionMs" | "deleteMs">;
}

export function labSeed(opts: WorldOptions): SimulatorSeed {
  return {
    tokens: [{ token: opts.adminToken, admin: true }, { token: opts.tenantToken, tenants: [LAB_TENANT] }],
    tenants: [LAB_TENANT],
    hosts: labHosts(opts.hosts ?? 16),
    instanceTypes: [
      {
        metadata: { name: "compute" },
        spec: {
          hardware: {
            cpu: { cores: 32, architecture: "x86_64", model: "Intel Xeon Gold 6338", threads_per_core: 2 },
            memory: { total_gb: 256, type: "DDR4" },
            network_ports: [
              { name: "eno1", role: "lifecycle", type: "ethernet", speed: "1G" },
              { name: "ens1f0", role: "fabric", type: "ethernet", speed: "25G" },
              { name: "ens1f1", role: "fabric", type: "ethernet", speed: "25G" },
            ],
          },
          host_label_selector: { match_labels: { [HOST_CLASS_LABEL]: "compute" } },
          description: "General purpose bare-metal worker",
        },
      },
      {
        metadata: { name: "gpu" },
        spec: {
          hardware: {
            cpu: { cores: 64, architecture: "x86_64", model: "AMD EPYC 9354", threads_per_core: 2 },
            memory: { total_gb: 512, type: "DDR5" },
            accelerators: [{ type: "gpu", vendor: "nvidia", model: "H100", memory_gb: 80 }],
            network_ports: [
              { name: "eno1", role: "lifecycle", type: "ethernet", speed: "1G" },
              { name: "ens2f0", role: "fabric", type: "ethernet", speed: "100G" },
            ],
          },
          host_label_selector: { match_labels: { [HOST_CLASS_LABEL]: "gpu" } },
          description: "GPU bare-metal worker",
        },
      },
    ],
    catalogItems: [{
      metadata: { name: SYSTEM_CATALOG_ITEM, tenant: "system" },
      title: "CaaS bare-metal worker pass-through", description: "All provisioning parameters unlocked",
      published: true, tenant: "system",
    }],
    diskImages: [{
      id: DISK_IMAGE_ID,
      metadata: { name: "rhcos-4-17" },
      spec: {
        source_type: "SOURCE_TYPE_REGISTRY", source_ref: "quay.io/openshift-release-dev/rhcos:4.17-x86_64",
        architecture: ["ARCHITECTURE_AMD64"], lifecycle: "DISK_IMAGE_LIFECYCLE_AVAILABLE",
      },
    }],
    clusterVersions: [
      {
        id: CLUSTER_VERSION_ID,
        metadata: { name: "4-17-3", annotations: { "osac.openshift.io/disk-image": DISK_IMAGE_ID } },
        spec: { image: RELEASE_IMAGE, version: "4.17.3", enabled: true, is_default: true, disk_image: { id: DISK_IMAGE_ID } },
      },
      {
        id: CLUSTER_VERSION_WITHOUT_IMAGE_ID,
        metadata: { name: "4-18-0" },
        spec: { image: "quay.io/openshift-release-dev/ocp-release:4.18.0-x86_64", version: "4.18.0", enabled: true },
      },
    ],
    timings: { provisionMs: opts.timings.provisionMs, deleteMs: opts.timings.deleteMs },
  };
}

/** A syntactically valid OpenSSH ed25519 public key (random; nobody holds the private half). */
export function labSshPublicKey(): string {
  const type = Buffer.from("ssh-ed25519");
  const key = crypto.randomBytes(32);
  const len = (b: Buffer) => { const l = Buffer.alloc(4); l.writeUInt32BE(b.length); return l; };
  return `ssh-ed25519 ${Buffer.concat([len(type), type, len(key), key]).toString("base64")} lab@baremetal-workers`;
}

/**
 * The lab's pull secret: a dockerconfigjson whose auth token is random and alphanumeric, so that it
 * appears verbatim wherever the secret leaks (JSON, ignition data URLs) and tests can scan for it.
 */
export function labPullSecret(): { token: string; dockerconfigjson: string } {
  const token = `labps${crypto.randomBytes(24).toString("hex")}`;
  const dockerconfigjson = JSON.stringify({
    auths: {
      "quay.io": { auth: token, email: "lab@baremetal-workers.invalid" },
      "registry.redhat.io": { auth: token, email: "lab@baremetal-workers.invalid" },
    },
  });
  return { token, dockerconfigjson };
}
