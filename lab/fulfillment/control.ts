// The lab-only bmwlab.v1.FulfillmentLab service: fault switches, counters, and the boot stream an
// assisted-service stand-in listens to. Loopback only and unauthenticated: it never exists in the
// real service.
import * as grpc from "@grpc/grpc-js";
import type { FulfillmentLabHandlers } from "./protos/gen/bmwlab/v1/FulfillmentLab";
import type { FulfillmentEngine } from "./engine";
import { parseMethodFault } from "./faults";

export function labControlHandlers(engine: FulfillmentEngine): FulfillmentLabHandlers {
  return {
    SetFault: (call, callback) => {
      const req = call.request;
      try {
        if (req.method) {
          const spec = parseMethodFault(req.method);
          engine.faults.setMethod(spec);
          // A fault that fails every call of the stream (or of every method) also breaks the streams already open,
          // as a lost connection would; a fault at a lower rate only refuses some new ones.
          const breaks = (spec.method === "Events/Watch" || spec.method === "*") && spec.code !== undefined && spec.rate >= 1;
          if (breaks) engine.events.breakAll(spec.code!);
        }
        else if (req.lifecycle) engine.faults.setLifecycle(req.lifecycle);
        else if (req.list) engine.faults.setList(req.list);
        else throw new Error("SetFault needs a method, a lifecycle or a list fault");
        callback(null, {});
      } catch (err) {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: (err as Error).message });
      }
    },
    ClearFaults: (_call, callback) => {
      engine.faults.clear();
      engine.tick(); // deletes held by a stuck-deleting fault may now complete
      callback(null, {});
    },
    Stats: (_call, callback) => {
      const byState: Record<string, number> = {};
      for (const r of engine.store.rows("BareMetalInstances")) {
        const s = r.obj.status?.state ?? "BARE_METAL_INSTANCE_STATE_UNSPECIFIED";
        byState[s] = (byState[s] ?? 0) + 1;
      }
      const hosts = Object.values(engine.store.hosts);
      callback(null, {
        calls: Object.fromEntries(engine.calls),
        creates_without_system_tenant: engine.store.createsWithoutSystemTenant,
        bmis_by_state: byState,
        hosts_free: hosts.filter((h) => h === null).length,
        hosts_allocated: hosts.filter((h) => h !== null).length,
      });
    },
    WatchBoots: (call) => {
      if (call.request.replay) for (const e of engine.store.boots) call.write(e);
      const off = engine.onBoot((e) => call.write(e));
      call.on("cancelled", off);
      call.on("close", off);
    },
  };
}
