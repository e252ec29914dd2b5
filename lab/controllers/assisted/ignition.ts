// The discovery ignition the assisted-service stand-in serves per InfraEnv: Ignition spec v3 JSON
// (~15 KB, like the PoC measured) that carries what a real one carries — the agent's service URL and
// infra-env id, the pull secret (as the registry auth file and the agent's token), the service CA,
// the SSH key, the agent units — plus a lab marker naming the InfraEnv by namespace/name/uid.
import * as crypto from "node:crypto";

export interface InfraEnvIdentity {
  namespace: string;
  name: string;
  uid: string;
}

export interface IgnitionInput {
  infraEnv: InfraEnvIdentity;
  /** The InfraEnv's pull secret (.dockerconfigjson). */
  pullSecret: string;
  sshAuthorizedKey?: string;
  serviceUrl: string;
  caPem: string;
}

const ENV_FILE = "/etc/assisted/agent-installer.env";
const MARKER_FILE = "/etc/assisted/lab-infraenv.json";

const dataUrl = (s: string) => `data:,${encodeURIComponent(s)}`;

function file(path: string, contents: string, mode = 0o644) {
  return { path, mode, overwrite: true, contents: { source: dataUrl(contents) } };
}

/** The token the agent presents to the service: the first registry auth of the pull secret. */
function pullSecretToken(pullSecret: string): string {
  try {
    const auths = (JSON.parse(pullSecret) as { auths?: Record<string, { auth?: string }> }).auths ?? {};
    return auths["cloud.openshift.com"]?.auth ?? Object.values(auths).find((a) => a.auth)?.auth ?? "";
  } catch {
    return "";
  }
}

/** Image references the discovery image pulls, pinned by digest (deterministic per release). */
function agentImages(): string {
  const names = ["assisted-installer-agent", "assisted-installer", "assisted-installer-controller", "ose-baremetal-installer",
    "machine-config-operator", "ose-cli", "ose-must-gather", "coreos-installer", "ose-tools", "ose-kube-rbac-proxy",
    "ose-haproxy-router", "ose-keepalived-ipfailover", "ose-coredns", "ose-multus-cni", "ose-ovn-kubernetes",
    "ose-network-tools", "ose-cluster-network-operator", "ose-etcd", "ose-hyperkube", "ose-pod", "ose-installer",
    "ose-baremetal-runtimecfg", "ose-machine-os-images", "ose-ironic-agent", "ose-kube-proxy", "ose-sdn",
    "ose-cluster-node-tuning-operator", "ose-csi-external-provisioner", "ose-csi-livenessprobe", "ose-oauth-proxy",
    "ose-prometheus-node-exporter", "ose-cluster-bootstrap", "ose-cluster-config-operator", "ose-console",
    "ose-dns-operator", "ose-ingress-operator", "ose-machine-api-operator", "ose-operator-lifecycle-manager"];
  return names.map((n) => {
    const digest = crypto.createHash("sha256").update(`4.17.3/${n}`).digest("hex");
    const key = n.toUpperCase().replace(/-/g, "_");
    return `${key}_IMAGE=quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:${digest}`;
  }).join("\n") + "\n";
}

const AGENT_UNIT = `[Unit]
Description=agent
Wants=network-online.target
After=network-online.target selinux.service
ConditionPathExists=!/etc/assisted/disabled

[Service]
Type=simple
EnvironmentFile=${ENV_FILE}
EnvironmentFile=/usr/local/share/assisted/agent-images.env
ExecStartPre=/usr/local/bin/agent-fix-bz1964591 \${AGENT_IMAGE}
ExecStartPre=/usr/bin/podman pull --authfile /root/.docker/config.json \${ASSISTED_INSTALLER_AGENT_IMAGE}
ExecStart=/usr/bin/podman run --net host --pid=host --privileged --rm --name agent \\
  -v /dev:/dev:rw -v /opt:/opt:rw -v /run/systemd/journal/socket:/run/systemd/journal/socket \\
  -v /var/log:/var/log:rw -v /run/media:/run/media:rslave -v /etc/pki:/etc/pki \\
  --env PULL_SECRET_TOKEN --env CONTAINERS_CONF --env CONTAINERS_STORAGE_CONF --env HTTP_PROXY --env HTTPS_PROXY \\
  \${ASSISTED_INSTALLER_AGENT_IMAGE} next_step_runner --url \${SERVICE_URL} --infra-env-id \${INFRA_ENV_ID} \\
  --agent-version \${AGENT_VERSION} --insecure=false --cacert /etc/assisted-service/service-ca-cert.crt
Restart=always
RestartSec=3s
TimeoutStartSec=3600

[Install]
WantedBy=multi-user.target
`;

const SELINUX_UNIT = `[Unit]
Description=Set SELinux to permissive during discovery
Before=agent.service

[Service]
Type=oneshot
ExecStart=/usr/sbin/setenforce 0
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
`;

const PRE_NM_UNIT = `[Unit]
Description=Prepare NetworkManager configuration from the static network files
DefaultDependencies=no
Before=NetworkManager.service
After=systemd-udev-settle.service
ConditionPathExists=/etc/assisted/network

[Service]
Type=oneshot
ExecStart=/usr/local/bin/pre-network-manager-config.sh
RemainAfterExit=yes

[Install]
WantedBy=network-online.target
`;

const FIX_BZ = `#!/bin/bash
# Works around a podman storage corruption after an unclean shutdown of the discovery image.
set -euo pipefail
IMAGE="$1"
for attempt in 1 2 3; do
  if podman image exists "$IMAGE" && ! podman run --rm --entrypoint true "$IMAGE" >/dev/null 2>&1; then
    echo "image $IMAGE is corrupt, removing it (attempt $attempt)"
    podman rmi -f "$IMAGE" || true
    podman system reset --force || true
  fi
  exit 0
done
`;

const PRE_NM = `#!/bin/bash
# Copies the NMState-derived keyfiles whose MAC addresses match this host's NICs into place.
set -euo pipefail
SRC=/etc/assisted/network
DST=/etc/NetworkManager/system-connections
mkdir -p "$DST"
for host_dir in "$SRC"/host*; do
  [ -d "$host_dir" ] || continue
  matched=1
  while read -r mac iface; do
    found=$(grep -il "$mac" /sys/class/net/*/address 2>/dev/null | head -1 || true)
    [ -n "$found" ] || { matched=0; break; }
  done < "$host_dir/mac_interface.ini"
  if [ "$matched" = 1 ]; then
    cp "$host_dir"/*.nmconnection "$DST"/ 2>/dev/null || true
    chmod 600 "$DST"/*.nmconnection 2>/dev/null || true
    echo "applied static network configuration from $host_dir"
    exit 0
  fi
done
echo "no static network configuration matches this host"
`;

const MULTIPATH = `defaults {
    user_friendly_names yes
    find_multipaths yes
    enable_foreign "^$"
}
blacklist_exceptions {
    property "(SCSI_IDENT_|ID_WWN)"
}
blacklist {
}
`;

const CHRONY = `# Discovery image time sources; the cluster's own NTP settings replace these at install time.
pool 2.rhel.pool.ntp.org iburst
driftfile /var/lib/chrony/drift
makestep 1.0 3
rtcsync
keyfile /etc/chrony.keys
leapsectz right/UTC
logdir /var/log/chrony
`;

const MOTD = `
** This is a discovery image of the assisted installer. **
The host runs the agent only: it reports its inventory and waits to be bound to a cluster.
Use 'journalctl -u agent.service' to read the agent's log.
`;

/** Renders the discovery ignition of one InfraEnv. */
export function discoveryIgnition(input: IgnitionInput): string {
  const { infraEnv } = input;
  const env = [
    `SERVICE_URL=${input.serviceUrl}`,
    `INFRA_ENV_ID=${infraEnv.uid}`,
    `PULL_SECRET_TOKEN=${pullSecretToken(input.pullSecret)}`,
    "AGENT_VERSION=v2.39.0",
    "AGENT_IMAGE=quay.io/edge-infrastructure/assisted-installer-agent:v2.39.0",
    "CONTAINERS_CONF=/etc/containers/containers.conf",
    "CONTAINERS_STORAGE_CONF=/etc/containers/storage.conf",
    "",
  ].join("\n");
  const ignition = {
    ignition: { version: "3.2.0" },
    passwd: { users: [{ name: "core", passwordHash: "!", sshAuthorizedKeys: input.sshAuthorizedKey ? [input.sshAuthorizedKey] : [] }] },
    systemd: {
      units: [
        { name: "agent.service", enabled: true, contents: AGENT_UNIT },
        { name: "selinux.service", enabled: true, contents: SELINUX_UNIT },
        { name: "pre-network-manager-config.service", enabled: true, contents: PRE_NM_UNIT },
        { name: "multipathd.service", enabled: true },
        { name: "zincati.service", enabled: false, mask: true },
      ],
    },
    storage: {
      files: [
        file(ENV_FILE, env, 0o600),
        file("/root/.docker/config.json", input.pullSecret, 0o600),
        file("/etc/assisted-service/service-ca-cert.crt", input.caPem),
        file("/etc/pki/ca-trust/source/anchors/assisted-service-ca.crt", input.caPem),
        file("/usr/local/share/assisted/agent-images.env", agentImages()),
        file("/usr/local/bin/agent-fix-bz1964591", FIX_BZ, 0o755),
        file("/usr/local/bin/pre-network-manager-config.sh", PRE_NM, 0o755),
        file("/etc/multipath.conf", MULTIPATH),
        file("/etc/motd", MOTD),
        file("/etc/chrony.conf", CHRONY),
        file("/etc/NetworkManager/conf.d/01-ipv6.conf", "[connection]\nipv6.dhcp-iaid=mac\nipv6.dhcp-duid=ll\n"),
        file("/etc/containers/registries.conf.d/99-assisted.conf", "unqualified-search-registries = [\"registry.access.redhat.com\", \"docker.io\"]\nshort-name-mode = \"permissive\"\n"),
        file(MARKER_FILE, `${JSON.stringify({ namespace: infraEnv.namespace, name: infraEnv.name, uid: infraEnv.uid })}\n`),
      ],
    },
  };
  return JSON.stringify(ignition);
}

interface IgnitionFile {
  path?: string;
  contents?: { source?: string };
}

function decodeDataUrl(src: string | undefined): string | undefined {
  if (!src?.startsWith("data:")) return undefined;
  const comma = src.indexOf(",");
  if (comma < 0) return undefined;
  const meta = src.slice(5, comma);
  const body = src.slice(comma + 1);
  return meta.endsWith(";base64") ? Buffer.from(body, "base64").toString("utf8") : decodeURIComponent(body);
}

/**
 * What a booted discovery image would tell the service: the infra-env id it registers with (and, from
 * the lab marker, that InfraEnv's namespace and name). undefined when user_data is not a discovery
 * ignition.
 */
export function infraEnvOfIgnition(userData: string): InfraEnvIdentity | undefined {
  let parsed: { ignition?: { version?: string }; storage?: { files?: IgnitionFile[] } };
  try {
    parsed = JSON.parse(userData) as typeof parsed;
  } catch {
    return undefined;
  }
  if (!parsed.ignition?.version?.startsWith("3.")) return undefined;
  const files = parsed.storage?.files ?? [];
  const env = decodeDataUrl(files.find((f) => f.path === ENV_FILE)?.contents?.source);
  const marker = decodeDataUrl(files.find((f) => f.path === MARKER_FILE)?.contents?.source);
  const uid = env ? /^INFRA_ENV_ID=(.+)$/m.exec(env)?.[1]?.trim() : undefined;
  if (!uid || !marker) return undefined;
  try {
    const m = JSON.parse(marker) as Partial<InfraEnvIdentity>;
    if (!m.namespace || !m.name || m.uid !== uid) return undefined;
    return { namespace: m.namespace, name: m.name, uid };
  } catch {
    return undefined;
  }
}
