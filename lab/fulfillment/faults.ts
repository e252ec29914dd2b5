// Run-time fault injection: per-method errors with a rate, added latency, "commit, then drop the
// response", and lifecycle faults (stuck in DELETING, MACs never reported) for BMIs by name prefix.
import * as grpc from "@grpc/grpc-js";
import type { LifecycleFault, MethodFault } from "./labProtos";

export interface MethodFaultSpec {
  method: string;
  code?: grpc.status;
  rate: number;
  latencyMs: number;
  commitThenDrop: boolean;
  /** Remaining applications; undefined = until cleared. */
  remaining?: number;
}

export interface CallFault {
  latencyMs: number;
  error?: grpc.status;
  commitThenDrop: boolean;
}

export function parseMethodFault(f: MethodFault): MethodFaultSpec {
  const code = f.code ? grpc.status[f.code as keyof typeof grpc.status] : undefined;
  if (f.code && typeof code !== "number") throw new Error(`unknown status code '${f.code}'`);
  return {
    method: f.method || "*", code: code as grpc.status | undefined,
    // A code without a rate means "always"; a rate of 0 cannot be asked for explicitly (proto3 default).
    rate: f.rate || (code !== undefined ? 1 : 0),
    latencyMs: f.latency_ms, commitThenDrop: f.commit_then_drop, remaining: f.times ? f.times : undefined,
  };
}

export class Faults {
  private methods = new Map<string, MethodFaultSpec>();
  private lifecycle: LifecycleFault[] = [];

  constructor(private readonly random: () => number = Math.random) {}

  setMethod(spec: MethodFaultSpec): void {
    this.methods.set(spec.method, spec);
  }

  setLifecycle(f: LifecycleFault): void {
    this.lifecycle.push({ ...f });
  }

  clear(): void {
    this.methods.clear();
    this.lifecycle = [];
  }

  /** What to do to this call of `method` ("Service/Method"); consumes one application of a counted fault. */
  take(method: string): CallFault {
    const spec = this.methods.get(method) ?? this.methods.get("*");
    if (!spec) return { latencyMs: 0, commitThenDrop: false };
    if (spec.remaining !== undefined && --spec.remaining <= 0) this.methods.delete(spec.method);
    const error = spec.code !== undefined && this.random() < spec.rate ? spec.code : undefined;
    return { latencyMs: spec.latencyMs, error, commitThenDrop: spec.commitThenDrop };
  }

  stuckDeleting(name: string): boolean {
    return this.lifecycle.some((f) => f.stuck_deleting && name.startsWith(f.name_prefix));
  }

  withholdMacs(name: string): boolean {
    return this.lifecycle.some((f) => f.withhold_macs && name.startsWith(f.name_prefix));
  }
}
