// A client of the simulator's lab-only bmwlab.v1.FulfillmentLab service (faults, stats, boots),
// served on the same address as the fulfillment API.
import * as fs from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { FulfillmentLabClient, LabStats, loadLabProtos } from "./fulfillment/labProtos";

export interface FulfillmentEndpoint {
  /** host:port of the simulator (fulfillment API and lab control service). */
  address: string;
  /** The lab CA, when the simulator serves TLS. */
  caFile?: string;
  plaintext: boolean;
}

/** A fault as the CLI and tests describe it; see fulfillment_lab.proto for the semantics. */
export type LabFault =
  | {
    /** "<Service>/<Method>" (e.g. "BareMetalInstances/Create") or "*". */
    method: string;
    /** gRPC status name, e.g. "UNAVAILABLE". */
    code?: string;
    /** Probability in [0, 1]; a code without a rate means always. */
    rate?: number;
    latencyMs?: number;
    commitThenDrop?: boolean;
    /** Only the next N calls. */
    times?: number;
  }
  | {
    /** BMIs whose name starts with this (empty = every BMI). */
    namePrefix?: string;
    stuckDeleting?: boolean;
    /** The host boots but BMI status never gets MACs. */
    withholdMacs?: boolean;
  };

export function labControlClient(ep: FulfillmentEndpoint): FulfillmentLabClient {
  const creds = ep.plaintext ? grpc.credentials.createInsecure()
    : grpc.credentials.createSsl(ep.caFile ? fs.readFileSync(ep.caFile) : null);
  // The lab certificate also names localhost; an IP as TLS server name makes Node warn.
  const options: grpc.ChannelOptions = ep.plaintext ? {} : { "grpc.ssl_target_name_override": "localhost" };
  return new (loadLabProtos().bmwlab.v1.FulfillmentLab)(ep.address, creds, options);
}

const DEADLINE_MS = 10_000;

function unary<Res>(call: (deadline: grpc.CallOptions, cb: grpc.requestCallback<Res>) => void): Promise<Res> {
  return new Promise((resolve, reject) => {
    call({ deadline: Date.now() + DEADLINE_MS }, (err, res) => (err ? reject(err) : res === undefined ? reject(new Error("empty response")) : resolve(res)));
  });
}

export async function setFault(ep: FulfillmentEndpoint, f: LabFault): Promise<void> {
  const client = labControlClient(ep);
  try {
    const request = "method" in f
      ? { method: { method: f.method, code: f.code ?? "", rate: f.rate ?? 0, latency_ms: f.latencyMs ?? 0, commit_then_drop: f.commitThenDrop ?? false, times: f.times ?? 0 } }
      : { lifecycle: { name_prefix: f.namePrefix ?? "", stuck_deleting: f.stuckDeleting ?? false, withhold_macs: f.withholdMacs ?? false } };
    await unary((o, cb) => client.SetFault(request, o, cb));
  } finally {
    client.close();
  }
}

export async function clearFaults(ep: FulfillmentEndpoint): Promise<void> {
  const client = labControlClient(ep);
  try {
    await unary((o, cb) => client.ClearFaults({}, o, cb));
  } finally {
    client.close();
  }
}

export async function simulatorStats(ep: FulfillmentEndpoint): Promise<LabStats> {
  const client = labControlClient(ep);
  try {
    return await unary<LabStats>((o, cb) => client.Stats({}, o, cb));
  } finally {
    client.close();
  }
}
