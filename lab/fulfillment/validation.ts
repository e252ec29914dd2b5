// Input rules the real service enforces before touching the database (fulfillment-api.md §2.2, §3.5).
import type { MetadataOut } from "../../clients/fulfillment/types";
import { invalid } from "./status";

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const KEY_NAME = /^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/;

export const USER_DATA_MAX_BYTES = 64 * 1024;

const TEMPLATE_ID = /^[a-zA-Z_][a-zA-Z0-9._]*$/;

export function validateName(name: string): void {
  if (!name) throw invalid("metadata.name is mandatory", "object.metadata.name");
  if (!NAME.test(name)) {
    throw invalid(`metadata.name '${name}' must be a lowercase RFC 1123 label of at most 63 characters`, "object.metadata.name");
  }
}

function validKey(key: string): boolean {
  const parts = key.split("/");
  if (parts.length > 2) return false;
  const name = parts[parts.length - 1];
  if (parts.length === 2) {
    const prefix = parts[0];
    if (prefix.length < 1 || prefix.length > 253 || !prefix.split(".").every((l) => DNS_LABEL.test(l))) return false;
  }
  return KEY_NAME.test(name);
}

export function validateLabelsAndAnnotations(md: MetadataOut): void {
  for (const [k, v] of Object.entries(md.labels)) {
    if (!validKey(k)) throw invalid(`label key '${k}' is not valid`, `object.metadata.labels`);
    if (v !== "" && !KEY_NAME.test(v)) throw invalid(`value of label '${k}' is not valid: lowercase, at most 63 characters`, `object.metadata.labels`);
  }
  for (const k of Object.keys(md.annotations)) {
    if (!validKey(k)) throw invalid(`annotation key '${k}' is not valid`, `object.metadata.annotations`);
  }
}

/** A caller-supplied BareMetalInstanceTemplate id (private protovalidate, fulfillment-api.md §4.2). */
export function validateTemplateId(id: string): void {
  if (!TEMPLATE_ID.test(id)) throw invalid(`template id '${id}' must match ${TEMPLATE_ID.source}`, "object.id");
}

/** OpenSSH public key: "<type> <base64> [comment]". */
export function validateSshKey(key: string): void {
  const m = /^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-[a-z0-9@.-]+) ([A-Za-z0-9+/]+={0,2})( .*)?$/.exec(key.trim());
  if (!m) throw invalid("spec.ssh_public_key is not a valid OpenSSH public key", "object.spec.ssh_public_key");
}

export function validateUserData(userData: string): void {
  const size = Buffer.byteLength(userData, "utf8");
  if (size > USER_DATA_MAX_BYTES) {
    throw invalid(`spec.user_data: size ${size} exceeds the maximum of ${USER_DATA_MAX_BYTES} bytes`, "object.spec.user_data");
  }
}
