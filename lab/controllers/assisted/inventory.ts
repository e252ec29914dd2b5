// What a discovery agent reports about its host when it registers: the Agent's labels and
// status.inventory (interfaces carry the required flags/ipV4Addresses/ipV6Addresses), derived
// deterministically from the lab's host inventory so repeated boots of one host look the same.
import * as crypto from "node:crypto";
import type { AgentInterface, AgentStatus } from "../types";

export const INFRAENV_LABEL = "infraenvs.agent-install.openshift.io";
const INV = "inventory.agent-install.openshift.io";

export interface BootedHost {
  name: string;
  /** As the host reports them (the lab inventory keeps the BMC's case). */
  macs: string[];
  /** Interface names in MAC order (the instance type's network_ports), if known. */
  ports?: string[];
  instanceType?: string;
  /** Fabric IP the BMI status reports, if any. */
  fabricIp?: string;
}

/** A host id as the agent derives it from the hardware: stable per host, uuid-shaped. */
export function hostId(labId: string, hostName: string): string {
  const h = crypto.createHash("sha256").update(`${labId}/${hostName}`).digest();
  h[6] = (h[6] & 0x0f) | 0x40;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

function hostNumber(name: string): number {
  return crypto.createHash("sha256").update(name).digest().readUInt16BE(0);
}

export function inventoryLabels(host: BootedHost): Record<string, string> {
  const gpu = host.instanceType === "gpu";
  return {
    [`${INV}/cpu-architecture`]: "x86_64",
    [`${INV}/cpu-virtenabled`]: "true",
    [`${INV}/host-isvirtual`]: "false",
    [`${INV}/host-manufacturer`]: gpu ? "DellInc" : "Supermicro",
    [`${INV}/host-productname`]: gpu ? "PowerEdgeXE9680" : "SYS-120U-TNR",
    [`${INV}/storage-hasnonrotationaldisk`]: "true",
  };
}

export function inventory(host: BootedHost, now: string): NonNullable<AgentStatus["inventory"]> {
  const n = hostNumber(host.name);
  const gpu = host.instanceType === "gpu";
  const fabricIndex = host.ports ? host.ports.findIndex((p, i) => i > 0 && p !== "eno1") : -1;
  const interfaces: AgentInterface[] = host.macs.map((mac, i) => {
    const name = host.ports?.[i] ?? `eno${i + 1}`;
    const ipV4Addresses = i === 0 ? [`172.22.${(n >> 8) & 0xff}.${(n & 0xff) % 250 + 2}/24`]
      : i === fabricIndex && host.fabricIp ? [`${host.fabricIp}/24`] : [];
    return {
      name, macAddress: mac, flags: ["up", "broadcast", "multicast"], ipV4Addresses, ipV6Addresses: [],
      hasCarrier: true, mtu: i === 0 ? 1500 : 9000, speedMbps: i === 0 ? 1000 : gpu ? 100000 : 25000,
      vendor: i === 0 ? "0x8086" : "0x15b3", product: i === 0 ? "0x1521" : "0x1017", biosDevName: name,
    };
  });
  return {
    hostname: host.name,
    interfaces,
    cpu: gpu
      ? { architecture: "x86_64", count: 128, modelName: "AMD EPYC 9354 32-Core Processor", clockMegahertz: 3250, flags: ["svm", "avx2", "avx512f"] }
      : { architecture: "x86_64", count: 64, modelName: "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", clockMegahertz: 2000, flags: ["vmx", "avx2", "avx512f"] },
    memory: gpu ? { physicalBytes: 549755813888, usableBytes: 540000000000 } : { physicalBytes: 274877906944, usableBytes: 270000000000 },
    disks: [{
      id: `/dev/disk/by-id/nvme-eui.${n.toString(16).padStart(4, "0")}0000000000000001`, name: "nvme0n1", path: "/dev/nvme0n1",
      driveType: "SSD", sizeBytes: 1920383410176, bootable: false,
      installationEligibility: { eligible: true, notEligibleReasons: [] },
    }],
    systemVendor: gpu
      ? { manufacturer: "Dell Inc.", productName: "PowerEdge XE9680", serialNumber: `DL${n.toString(16).toUpperCase()}`, virtual: false }
      : { manufacturer: "Supermicro", productName: "SYS-120U-TNR", serialNumber: `SM${n.toString(16).toUpperCase()}`, virtual: false },
    bmcAddress: `10.99.${(n >> 8) & 0xff}.${(n & 0xff) % 250 + 2}`,
    boot: { currentBootMode: "uefi" },
    reportTime: now,
  };
}
