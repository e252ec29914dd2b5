// Run code in the test plane as exactly the reconciler's identity: the ClusterRole (and the Lease
// Role) parsed from deploy/reconciler.yaml, bound to a ServiceAccount whose token comes from the
// TokenRequest API, or to a static-token user of the test plane. Nothing else is granted, so a
// missing permission in deploy/ fails the test that needs it.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { PROJECT_ROOT } from "../../stack/toolchain";

export const RECONCILER_MANIFEST = path.join(PROJECT_ROOT, "deploy", "reconciler.yaml");

export interface ReconcilerRbac {
  clusterRole: k8s.V1ClusterRole;
  /** The namespaced Role for leader-election Leases. */
  leaseRole: k8s.V1Role;
}

/** The ClusterRole and the Lease Role exactly as deploy/reconciler.yaml declares them. */
export function loadReconcilerRbac(file = RECONCILER_MANIFEST): ReconcilerRbac {
  const docs = k8s.loadAllYaml(fs.readFileSync(file, "utf8")) as { kind?: string }[];
  const clusterRoles = docs.filter((d) => d.kind === "ClusterRole") as k8s.V1ClusterRole[];
  const roles = docs.filter((d) => d.kind === "Role") as k8s.V1Role[];
  if (clusterRoles.length !== 1) throw new Error(`${file}: expected one ClusterRole, found ${clusterRoles.length}`);
  const leaseRole = roles.find((r) => r.rules?.some((rule) => rule.resources?.includes("leases")));
  if (!leaseRole) throw new Error(`${file}: no Role granting leases`);
  return { clusterRole: clusterRoles[0], leaseRole };
}

export type RbacSubject =
  | { kind: "User"; name: string }
  | { kind: "ServiceAccount"; name: string; namespace: string };

export interface BoundRole {
  subject: RbacSubject;
  /** Removes the bindings (and the ServiceAccount, when one was made); the roles stay. */
  cleanup(): Promise<void>;
}

async function upsert<T>(read: () => Promise<T>, create: () => Promise<unknown>, replace: (current: T) => Promise<unknown>): Promise<void> {
  let current: T | undefined;
  try {
    current = await read();
  } catch (e) {
    if ((e as { code?: number }).code !== 404) throw e;
  }
  if (current === undefined) await create();
  else await replace(current);
}

/**
 * Creates (or updates) the deploy/ ClusterRole, the Lease Role in `leaseNamespace`, and bindings of
 * both to `subject`. Binding names are unique per call, so parallel suites do not interfere.
 */
export async function bindReconcilerRole(admin: k8s.KubeConfig, subject: RbacSubject, leaseNamespace: string): Promise<BoundRole> {
  const rbac = admin.makeApiClient(k8s.RbacAuthorizationV1Api);
  const { clusterRole, leaseRole } = loadReconcilerRbac();
  const crName = clusterRole.metadata!.name!;
  await upsert(
    () => rbac.readClusterRole({ name: crName }),
    () => rbac.createClusterRole({ body: clusterRole }),
    (cur) => rbac.replaceClusterRole({ name: crName, body: { ...clusterRole, metadata: { ...clusterRole.metadata, resourceVersion: cur.metadata?.resourceVersion } } }),
  );
  const roleName = leaseRole.metadata!.name!;
  const role: k8s.V1Role = { ...leaseRole, metadata: { ...leaseRole.metadata, namespace: leaseNamespace } };
  await upsert(
    () => rbac.readNamespacedRole({ name: roleName, namespace: leaseNamespace }),
    () => rbac.createNamespacedRole({ namespace: leaseNamespace, body: role }),
    (cur) => rbac.replaceNamespacedRole({ name: roleName, namespace: leaseNamespace,
      body: { ...role, metadata: { ...role.metadata, resourceVersion: cur.metadata?.resourceVersion } } }),
  );
  const suffix = crypto.randomBytes(4).toString("hex");
  const subjects: k8s.RbacV1Subject[] = [subject.kind === "User"
    ? { kind: "User", name: subject.name, apiGroup: "rbac.authorization.k8s.io" }
    : { kind: "ServiceAccount", name: subject.name, namespace: subject.namespace }];
  const crbName = `${crName}-test-${suffix}`;
  await rbac.createClusterRoleBinding({ body: {
    metadata: { name: crbName, labels: { "bmw-test": "true" } },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: crName }, subjects,
  } });
  const rbName = `${roleName}-test-${suffix}`;
  await rbac.createNamespacedRoleBinding({ namespace: leaseNamespace, body: {
    metadata: { name: rbName, namespace: leaseNamespace },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: roleName }, subjects,
  } });
  return {
    subject,
    cleanup: async () => {
      await rbac.deleteClusterRoleBinding({ name: crbName }).catch(() => undefined);
      await rbac.deleteNamespacedRoleBinding({ name: rbName, namespace: leaseNamespace }).catch(() => undefined);
    },
  };
}

/** A kubeconfig for the admin's cluster that authenticates with `token`. */
export function tokenKubeConfig(admin: k8s.KubeConfig, token: string, user: string): k8s.KubeConfig {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("admin kubeconfig has no current cluster");
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: "test-plane" }],
    users: [{ name: user, token }],
    contexts: [{ name: "reconciler", cluster: "test-plane", user }],
    currentContext: "reconciler",
  });
  return kc;
}

/** The same kubeconfig as a file's text (for BMW_KUBECONFIG of a child process or the program). */
export function kubeConfigYaml(kc: k8s.KubeConfig): string {
  return kc.exportConfig();
}

export interface ReconcilerIdentity extends BoundRole {
  kc: k8s.KubeConfig;
  /** The username the API server sees, e.g. system:serviceaccount:ns:baremetal-workers-xxxx. */
  username: string;
  /** Writes the kubeconfig to `file` (mode 0600) and returns the path. */
  writeKubeconfig(file: string): string;
}

/**
 * A ServiceAccount in `namespace` bound to only the deploy/ roles, and a client authenticated with a
 * token for it from the TokenRequest API: the reconciler's real identity in a pod.
 */
export async function reconcilerServiceAccount(admin: k8s.KubeConfig, opts: { namespace: string; leaseNamespace?: string;
  expirationSeconds?: number }): Promise<ReconcilerIdentity> {
  const core = admin.makeApiClient(k8s.CoreV1Api);
  const name = `baremetal-workers-${crypto.randomBytes(3).toString("hex")}`;
  await core.createNamespacedServiceAccount({ namespace: opts.namespace, body: { metadata: { name, namespace: opts.namespace } } });
  const bound = await bindReconcilerRole(admin, { kind: "ServiceAccount", name, namespace: opts.namespace }, opts.leaseNamespace ?? opts.namespace);
  const tr = await core.createNamespacedServiceAccountToken({ name, namespace: opts.namespace, body: {
    spec: { audiences: [], expirationSeconds: opts.expirationSeconds ?? 3600 },
  } });
  const token = tr.status?.token;
  if (!token) throw new Error("TokenRequest returned no token");
  const username = `system:serviceaccount:${opts.namespace}:${name}`;
  const kc = tokenKubeConfig(admin, token, name);
  return {
    ...bound,
    kc,
    username,
    writeKubeconfig(file: string) {
      fs.writeFileSync(file, kubeConfigYaml(kc), { mode: 0o600 });
      return file;
    },
    cleanup: async () => {
      await bound.cleanup();
      await core.deleteNamespacedServiceAccount({ name, namespace: opts.namespace }).catch(() => undefined);
    },
  };
}
