// What every provider's logic shares inside the dynamic provider host: Pulumi's placeholder for a
// value not known during preview, one Kubernetes client per kubeconfig path and one fulfillment client
// per connection for the life of the host process (a fresh client per call would re-read the files and
// open a new connection every time).
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import { FulfillmentClient, isTransient } from "../clients/fulfillment";
import { Kube, loadKubeConfig } from "../clients/kube";
import { type FulfillmentConnection, programSettings } from "../config/settings";
import { connectionOptions } from "./fulfillmentConnection";

/**
 * Pulumi's placeholder for a value not known during preview: the engine's wire constant, which the SDK
 * holds as pulumi.runtime.unknownValue (tests/providers/hostModules.test.ts checks they agree). Named here
 * because the provider host's bundle does not load the SDK (stack/providerBundle.ts).
 */
export const UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** Whether `v` is Pulumi's placeholder for a value not known during preview. */
export const isUnknown = (v: unknown): boolean => v === UNKNOWN_VALUE;

// File paths (the hub's kubeconfig, the fulfillment token and CA) belong to the machine that runs pulumi,
// not to the resource: another replica or an admin's machine keeps them elsewhere. So the provider acts
// with this machine's settings (the BMW_* variables the reconciler and the CLI give every pulumi process)
// and falls back to the paths the state recorded only where none are set; a path alone is never a change.

/** This machine's hub kubeconfig, else the recorded path. */
export function localKubeconfig(recorded: string): string {
  return process.env.BMW_KUBECONFIG || recorded;
}

/** This machine's fulfillment connection, else the recorded one. */
export function localConnection(recorded: FulfillmentConnection): FulfillmentConnection {
  if (!process.env.BMW_FULFILLMENT_ADDRESS) return recorded;
  try {
    return programSettings(process.env).fulfillment;
  } catch {
    return recorded; // incomplete settings here: the recorded connection is the better guess
  }
}

const kubes = new Map<string, Kube>();

/** The host's client for the kubeconfig at `path` (pass localKubeconfig(recorded)). */
export function kubeFor(path: string): Kube {
  let k = kubes.get(path);
  if (!k) {
    k = new Kube(loadKubeConfig(path));
    kubes.set(path, k);
  }
  return k;
}

interface HeldClient {
  client: FulfillmentClient;
  /** Operations using the client right now. */
  users: number;
  /** Replaced after a failure: closed once its last user is done. */
  retired: boolean;
}

/** The current client per connection key. */
const fulfillments = new Map<string, HeldClient>();
/** Every client not closed yet, current or retired. */
const open = new Set<HeldClient>();
let closeOnExit = false;

/**
 * The connection's identity: its options and the CA bundle's content, so a CA file rotated in place
 * gets a new client. The token is not part of it: the client reads the token file on every call.
 */
function connectionKey(conn: FulfillmentConnection): string {
  const options = connectionOptions(conn);
  const ca = options.transport.kind === "tls" && options.transport.caFile
    ? crypto.createHash("sha256").update(fs.readFileSync(options.transport.caFile)).digest("hex") : "";
  return JSON.stringify([options, ca]);
}

function acquire(conn: FulfillmentConnection): HeldClient {
  const key = connectionKey(conn);
  let held = fulfillments.get(key);
  if (!held) {
    if (!closeOnExit) process.once("exit", closeFulfillmentClients);
    closeOnExit = true;
    held = { client: new FulfillmentClient(connectionOptions(conn)), users: 0, retired: false };
    fulfillments.set(key, held);
    open.add(held);
  }
  held.users++;
  return held;
}

function release(held: HeldClient): void {
  held.users--;
  if (held.retired && held.users === 0 && open.delete(held)) held.client.close();
}

function retire(held: HeldClient): void {
  held.retired = true;
  for (const [key, current] of fulfillments) if (current === held) fulfillments.delete(key);
}

/**
 * Runs `fn` with the host's fulfillment client for `conn`. The channel reconnects by itself, but after
 * an outage gRPC backs off and fails calls at once for a while; so a client that saw the service
 * unavailable is replaced, and the next operation connects afresh (a Create is never retried in place).
 */
/** Runs `fn` with the host's client for this machine's connection (else the recorded one, see localConnection). */
export async function withFulfillment<T>(recorded: FulfillmentConnection, fn: (c: FulfillmentClient) => Promise<T>): Promise<T> {
  const held = acquire(localConnection(recorded));
  try {
    return await fn(held.client);
  } catch (err) {
    if (isTransient(err)) retire(held);
    throw err;
  } finally {
    release(held);
  }
}

/** Closes every fulfillment client of the host (on process exit; tests call it too). */
export function closeFulfillmentClients(): void {
  for (const held of open) held.client.close();
  open.clear();
  fulfillments.clear();
}
