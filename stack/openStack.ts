// Opening an order's stack with as few pulumi processes as the backend's blobs allow: each one costs the
// CLI's start and its passphrase key derivation.
import { LocalWorkspace, type LocalWorkspaceOptions, Stack } from "@pulumi/pulumi/automation";
import { plainSettingsValue, settingsFileOf, writePlainSettingsValue } from "./settingsFile";

/**
 * The stack `name` of the project in `workDir`. `held`: whether the backend holds its checkpoint (undefined
 * when that cannot be read without the CLI). A stack the backend lacks is written by `create` where it can
 * (stack/stackInit.ts), else created by the CLI at once (a failing `stack select` first is a process more);
 * one it holds is not selected, since that would only confirm it and every command run on a stack here
 * names it (`--stack`).
 */
export async function openStack(name: string, workDir: string, held: boolean | undefined,
  ws: () => Promise<LocalWorkspace>, wsOptions: () => Promise<LocalWorkspaceOptions>, create: () => Promise<boolean>): Promise<Stack> {
  const args = { stackName: name, workDir };
  if (held === false && await create()) return Stack.select(name, withoutSelect(await ws()));
  if (held === false) return LocalWorkspace.createStack(args, await wsOptions()).catch(async () => LocalWorkspace.createOrSelectStack(args, await wsOptions()));
  if (held === true) return Stack.select(name, withoutSelect(await ws()));
  return LocalWorkspace.createOrSelectStack(args, await wsOptions());
}

function withoutSelect(ws: LocalWorkspace): LocalWorkspace {
  return Object.assign(Object.create(ws) as LocalWorkspace, { selectStack: async () => undefined });
}

/**
 * Records which ClusterOrder the stack manages (config `clusterOrder`), read and written in its settings file
 * where it can be (absent there is Pulumi.yaml's empty default): two pulumi processes less.
 */
export async function recordClusterOrder(stack: Stack, workDir: string, projectName: string, wanted: string): Promise<void> {
  const file = settingsFileOf(workDir, stack.name);
  const key = `${projectName}:clusterOrder`;
  const recorded = plainSettingsValue(file, key);
  const current = recorded.known ? recorded.value : await stack.getConfig("clusterOrder").then((v) => v.value, () => undefined);
  if (current !== wanted && !writePlainSettingsValue(file, key, wanted)) await stack.setConfig("clusterOrder", { value: wanted });
}
