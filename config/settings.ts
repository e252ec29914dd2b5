// Connection settings shared by the program (index.ts), the loop and the CLI. They come from the
// environment so that the same values reach `pulumi up` run by the loop and `pulumi preview` run by an
// admin; only file paths are ever passed around, never a token or a passphrase.
import * as fs from "node:fs";

/** Where and how to reach the fulfillment-service: file paths only, never a token. */
export interface FulfillmentConnection {
  /** host:port of the private API. */
  address: string;
  /** CA bundle of the service (TLS); system roots when absent. */
  caFile?: string;
  /** File holding the bearer token; read on every call. */
  tokenFile: string;
  /** Loopback labs only. */
  plaintext?: boolean;
}

export interface ProgramSettings {
  kubeconfigPath: string;
  fulfillment: FulfillmentConnection;
  ignitionCaFile?: string;
}



function required(env: NodeJS.ProcessEnv, key: string, hint: string): string {
  const v = env[key];
  if (!v) throw new Error(`${key} is not set: ${hint}`);
  return v;
}

export function programSettings(env: NodeJS.ProcessEnv = process.env): ProgramSettings {
  const kubeconfigPath = env.BMW_KUBECONFIG || env.KUBECONFIG;
  if (!kubeconfigPath) throw new Error("BMW_KUBECONFIG (or KUBECONFIG) must name the hub's kubeconfig file");
  const tokenFile = required(env, "BMW_FULFILLMENT_TOKEN_FILE", "the file holding the fulfillment-service token");
  if (!fs.existsSync(tokenFile)) throw new Error(`BMW_FULFILLMENT_TOKEN_FILE ${tokenFile} does not exist`);
  const plaintext = /^(1|true|yes)$/i.test(env.BMW_FULFILLMENT_PLAINTEXT ?? "");
  const caFile = env.BMW_FULFILLMENT_CA_FILE || undefined;
  if (!plaintext && !caFile) {
    throw new Error("BMW_FULFILLMENT_CA_FILE must name the CA bundle of the fulfillment-service " +
      "(or set BMW_FULFILLMENT_PLAINTEXT=true for a loopback lab)");
  }
  return {
    kubeconfigPath,
    fulfillment: {
      address: required(env, "BMW_FULFILLMENT_ADDRESS", "host:port of the fulfillment-service private API"),
      tokenFile,
      caFile,
      plaintext,
    },
    ignitionCaFile: env.BMW_IGNITION_CA_FILE || undefined,
  };
}
