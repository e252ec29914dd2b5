// @pulumi/kubernetes, through the provider plugin built from the Go module proxy, creates, updates and
// deletes an InfraEnv in the real test-plane apiserver.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { createTestNamespace, kubeConfig } from "../support/kube";
import { runTsJson } from "../support/run";

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
});
