// Run-time fault injection: per-method errors with a rate, added latency, "commit, then drop the
// response", lifecycle faults (stuck in DELETING, MACs never reported) for BMIs by name prefix, and
// BMI List answers that offset paging over an unordered result can produce (an item left out, a short
// page, a total too low, a different order on every call).
import * as grpc from "@grpc/grpc-js";
import type { LifecycleFault, ListFault, MethodFault } from "./labProtos";

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

/** One BMI List answer after a list fault: the matches it pages over, and how the page is cut. */
export interface ListAnswer<T> {
  matches: T[];
  /** At most this many items in the page. */
  pageCap?: number;
  /** Subtracted from the reported total. */
  shrinkTotal: number;
}

export class Faults {
  private methods = new Map<string, MethodFaultSpec>();
  private lifecycle: LifecycleFault[] = [];
  private list: (ListFault & { remaining?: number }) | undefined;

  constructor(private readonly random: () => number = Math.random) {}

  setMethod(spec: MethodFaultSpec): void {
    this.methods.set(spec.method, spec);
  }

  setLifecycle(f: LifecycleFault): void {
    this.lifecycle.push({ ...f });
  }

  setList(f: ListFault): void {
    this.list = { ...f, remaining: f.times ? f.times : undefined };
  }

  clear(): void {
    this.methods.clear();
    this.lifecycle = [];
    this.list = undefined;
  }

  /** The BMI List answer over `matches` (in store order); consumes one application of a counted fault. */
  takeList<T extends { id: string }>(matches: T[]): ListAnswer<T> {
    const f = this.list;
    if (!f) return { matches, shrinkTotal: 0 };
    if (f.remaining !== undefined && --f.remaining <= 0) this.list = undefined;
    let out = matches.filter((o) => !f.omit_id || o.id !== f.omit_id);
    if (f.omit_random && out.length > 0) {
      const drop = Math.floor(this.random() * out.length);
      out = out.filter((_, i) => i !== drop);
    }
    if (f.reorder) {
      out = [...out];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(this.random() * (i + 1));
        [out[i], out[j]] = [out[j], out[i]];
      }
    }
    return { matches: out, pageCap: f.short_page ?? undefined, shrinkTotal: f.shrink_total };
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
