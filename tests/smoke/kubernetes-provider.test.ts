// @pulumi/kubernetes, through the provider plugin built from the Go module proxy, creates, updates and
// deletes an InfraEnv in the real test-plane apiserver.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { createTestNamespace, kubeConfig } from "../support/kube";
import { runTsJson } from "../support/run";
import { relayedKubeconfig } from "../support/relay";

const DRIVER = "tests/fixtures/k8s-stack.ts";
const ref = { group: "agent-install.openshift.io", version: "v1beta1", plural: "infraenvs" };

describe("@pulumi/kubernetes against the test plane", () => {
  const kc = kubeConfig();
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-k8s-"));
  fs.mkdirSync(path.join(tmp, "work"));
  fs.mkdirSync(path.join(tmp, "state"));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it("creates, updates and deletes an InfraEnv", async () => {
    const ns = await createTestNamespace(kc, "k8s-smoke");
    const run = <T>(op: string, key: string) => runTsJson<T>(DRIVER, [op, path.join(tmp, "work"), path.join(tmp, "state"), ns, key]);
    type Up = { summary: string; changes: Record<string, number>; uid: string };

    const created = await run<Up>("up", "ssh-ed25519 AAAA-first");
    expect(created.summary).toBe("succeeded");
    expect(created.changes.create).toBe(3); // stack, provider, InfraEnv
    const obj = (await api.getNamespacedCustomObject({ ...ref, namespace: ns, name: "smoke" })) as {
      metadata: { uid: string; managedFields: Array<{ manager: string }> };
      spec: { sshAuthorizedKey: string; pullSecretRef: { name: string } };
    };
    expect(obj.metadata.uid).toBe(created.uid);
    expect(obj.spec.sshAuthorizedKey).toBe("ssh-ed25519 AAAA-first");
    // server-side apply under the provider's own field manager
    expect(obj.metadata.managedFields.map((m) => m.manager)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^pulumi-kubernetes/)]));

    const updated = await run<Up>("up", "ssh-ed25519 AAAA-second");
    expect(updated.changes.update).toBe(1);
    const after = (await api.getNamespacedCustomObject({ ...ref, namespace: ns, name: "smoke" })) as typeof obj;
    expect(after.spec.sshAuthorizedKey).toBe("ssh-ed25519 AAAA-second");
    expect(after.metadata.uid).toBe(created.uid); // updated in place, not replaced

    const destroyed = await run<{ summary: string; changes: Record<string, number> }>("destroy", "ssh-ed25519 AAAA-second");
    expect(destroyed.changes.delete).toBe(3);
    await expect(api.getNamespacedCustomObject({ ...ref, namespace: ns, name: "smoke" })).rejects.toMatchObject({ code: 404 });

    // the kubeconfig (with its bearer token) never lands in state in plaintext
    const token = kc.getCurrentUser()!.token!;
    for (const f of fs.readdirSync(path.join(tmp, "state"), { recursive: true, withFileTypes: true })) {
      if (f.isFile()) expect(fs.readFileSync(path.join(f.parentPath, f.name), "utf8")).not.toContain(token);
    }
  });

  it("a kubeconfig that reaches the same cluster at another address replaces everything, unless the provider has a cluster identifier (added in place)", async () => {
    // Another address of the same apiserver: a TCP relay (an admin's endpoint, a load balancer).
    const other = path.join(tmp, "other-address.kubeconfig");
    const relay = await relayedKubeconfig(process.env.KUBECONFIG!, other);
    type Up = { summary: string; changes: Record<string, number>; uid: string };
    try {
      for (const [mode, expected] of [["path", { replace: 1 }], ["identified", {}]] as const) {
        const ns = await createTestNamespace(kc, `k8s-${mode}`);
        const dir = path.join(tmp, mode);
        for (const d of ["work", "state"]) fs.mkdirSync(path.join(dir, d), { recursive: true });
        const run = (kubeconfig: string) => runTsJson<Up>(DRIVER,
          ["up", path.join(dir, "work"), path.join(dir, "state"), ns, "ssh-ed25519 AAAA-same", mode], { ...process.env, KUBECONFIG: kubeconfig });
        const created = await run(process.env.KUBECONFIG!);
        expect(created.changes.create).toBe(3);
        const moved = await run(other);
        process.stdout.write(`[k8s provider] ${mode}: kubeconfig at another address: ${JSON.stringify(moved.changes)}\n`);
        if ("replace" in expected) {
          // Without an identifier the provider and the InfraEnv it manages are replaced.
          expect(moved.changes.replace).toBe(2);
        } else {
          // With one, the provider's new kubeconfig path is an update in place; the InfraEnv is the same object.
          expect(moved.changes).toEqual({ update: 1, same: 2 });
          expect(moved.uid).toBe(created.uid);
          await expect(api.getNamespacedCustomObject({ ...ref, namespace: ns, name: "smoke" })).resolves.toMatchObject({ metadata: { uid: created.uid } });
        }
      }
      // A stack of the release before the identifier: adding it is an update in place.
      const ns = await createTestNamespace(kc, "k8s-upgrade");
      const dir = path.join(tmp, "upgrade");
      for (const d of ["work", "state"]) fs.mkdirSync(path.join(dir, d), { recursive: true });
      const run = (mode: string) => runTsJson<Up>(DRIVER, ["up", path.join(dir, "work"), path.join(dir, "state"), ns, "ssh-ed25519 AAAA-same", mode]);
      const before = await run("path");
      const after = await run("identified");
      expect(after.changes).toEqual({ update: 1, same: 2 });
      expect(after.uid).toBe(before.uid);
    } finally {
      await relay.close();
    }
  });
});
