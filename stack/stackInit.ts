// A new stack written as `pulumi stack init` writes it on a DIY backend with the passphrase secrets
// provider (the CLI's stack.CreateStack and diy CreateStack), without a pulumi process: a burst of new
// orders otherwise starts one per order, each paying the CLI's start and a key derivation. Two things
// make a stack: the settings file's `encryptionsalt` (a salt and the word "pulumi" encrypted under the key
// derived from it, which lets the CLI tell a wrong passphrase), and a checkpoint with no resources whose
// deployment records the same secrets provider. Anything this cannot mirror exactly (another secrets
// provider, a backend whose layout is not the project-scoped one, a settings file already there) is left
// to the CLI.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import { promisify } from "node:util";
import * as yaml from "js-yaml";
import type { StateStore } from "./stateStore";
import { settingsFileOf } from "./settingsFile";

const pbkdf2 = promisify(crypto.pbkdf2);

/** The CLI's key derivation for a passphrase (config.NewSymmetricCrypterFromPassphrase). */
const PBKDF2_ITERATIONS = 1_000_000;

/** The passphrase the CLI would use with this environment: PULUMI_CONFIG_PASSPHRASE first, else the file's content trimmed. */
export function passphraseOf(env: Record<string, string | undefined>): string | undefined {
  if (env.PULUMI_CONFIG_PASSPHRASE !== undefined) return env.PULUMI_CONFIG_PASSPHRASE;
  const file = env.PULUMI_CONFIG_PASSPHRASE_FILE;
  if (!file) return undefined;
  try {
    return fs.readFileSync(file, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** A fresh passphrase provider state, `v1:<salt>:v1:<nonce>:<AES-256-GCM of "pulumi">`, as the CLI mints one. */
export async function newEncryptionSalt(passphrase: string): Promise<string> {
  const salt = crypto.randomBytes(8);
  const key = await pbkdf2(passphrase, salt, PBKDF2_ITERATIONS, 32, "sha256");
  const nonce = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv("aes-256-gcm", key, nonce);
  const sealed = Buffer.concat([cipher.update("pulumi", "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `v1:${salt.toString("base64")}:v1:${nonce.toString("base64")}:${sealed.toString("base64")}`;
}

/** The checkpoint of a stack with no resources, as the CLI's CreateStack stores it with a passphrase provider. */
export function emptyCheckpoint(project: string, stack: string, encryptionSalt: string, cliVersion: string, now = new Date()): string {
  const version = cliVersion.startsWith("v") ? cliVersion : `v${cliVersion}`;
  const doc = {
    version: 3,
    checkpoint: {
      stack: `organization/${project}/${stack}`,
      latest: {
        manifest: { time: now.toISOString(), magic: crypto.createHash("sha256").update(version).digest("hex"), version },
        secrets_providers: { type: "passphrase", state: { salt: encryptionSalt } },
        metadata: {},
      },
    },
  };
  return JSON.stringify(doc);
}

export interface StackInitTarget {
  store: StateStore;
  workDir: string;
  project: string;
  stack: string;
  /** The environment of the stack's pulumi processes: the passphrase they would read. */
  env: Record<string, string | undefined>;
  /** The CLI's version, recorded in the checkpoint's manifest as the CLI records its own. */
  cliVersion: string;
}

/**
 * Creates stacks without the CLI. One salt serves every stack this process creates with one passphrase:
 * the key derivation then runs once per process, not per stack. The stacks of one backend share the
 * passphrase anyway, so a shared salt gives an attacker nothing a per-stack salt would deny (decisions F15).
 */
export class StackInitializer {
  private salt?: { passphrase: string; state: Promise<string> };
  private layoutKnown = false;

  /**
   * Writes the settings file and the checkpoint of a stack the backend does not hold; false when it wrote
   * nothing and the CLI must create the stack. The caller holds the stack's lock in this process and
   * knows the backend has no checkpoint of it.
   */
  async create(t: StackInitTarget): Promise<boolean> {
    const passphrase = passphraseOf(t.env);
    // A backend laid out per project stays so: read its meta.yaml until it says so, not for every stack.
    this.layoutKnown ||= await projectScopedLayout(t.store);
    if (passphrase === undefined || !this.layoutKnown) return false;
    const settings = settingsFileOf(t.workDir, t.stack);
    // A settings file left behind (a removed stack, an admin's edits) may hold a salt or another provider: the CLI decides.
    if (fs.existsSync(settings)) return false;
    if (this.salt?.passphrase !== passphrase) this.salt = { passphrase, state: newEncryptionSalt(passphrase) };
    const state = await this.salt.state;
    // The settings file first: a checkpoint is then never without it (a stack the CLI finds with no salt
    // gets a new one, harmless while it holds no secret, but not what `stack init` leaves).
    const tmp = `${settings}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, yaml.dump({ encryptionsalt: state }, { lineWidth: -1 }));
    fs.renameSync(tmp, settings);
    await t.store.write(`.pulumi/stacks/${t.project}/${t.stack}.json`, emptyCheckpoint(t.project, t.stack, state, t.cliVersion));
    return true;
  }
}

/** Whether the backend's meta.yaml says version 1 (stacks under `.pulumi/stacks/<project>/`); a backend without one is left to the CLI. */
async function projectScopedLayout(store: StateStore): Promise<boolean> {
  const blob = await store.read(".pulumi/meta.yaml");
  if (!blob) return false;
  let meta: unknown;
  try {
    meta = yaml.load(blob.toString("utf8"));
  } catch {
    return false;
  }
  return typeof meta === "object" && meta !== null && "version" in meta && meta.version === 1;
}
