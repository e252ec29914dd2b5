// Opening an order's stack with as few pulumi processes as the backend's blobs allow: each one costs the
// CLI's start and its passphrase key derivation.
import { LocalWorkspace, type LocalWorkspaceOptions, Stack } from "@pulumi/pulumi/automation";

/**
 * The stack `name` of the project in `workDir`. `held`: whether the backend holds its checkpoint (undefined
 * when that cannot be read without the CLI). A stack the backend lacks is created at once (a failing
 * `stack select` first is a process more); one it holds is not selected, since that would only confirm it
 * and every command run on a stack here names it (`--stack`).
 */
export async function openStack(name: string, workDir: string, held: boolean | undefined,
  ws: () => Promise<LocalWorkspace>, wsOptions: () => Promise<LocalWorkspaceOptions>): Promise<Stack> {
  const args = { stackName: name, workDir };
  if (held === false) return LocalWorkspace.createStack(args, await wsOptions()).catch(async () => LocalWorkspace.createOrSelectStack(args, await wsOptions()));
  if (held === true) return Stack.select(name, withoutSelect(await ws()));
  return LocalWorkspace.createOrSelectStack(args, await wsOptions());
}

function withoutSelect(ws: LocalWorkspace): LocalWorkspace {
  return Object.assign(Object.create(ws) as LocalWorkspace, { selectStack: async () => undefined });
}
