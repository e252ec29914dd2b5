// The simulator as a grpc-js server on loopback: the eight osac.private.v1 resource services and the
// Events stream backed by the engine, every call through authentication and fault injection, plus the lab-only bmwlab.v1
// control service (faults, stats, boot stream). Start it in-process with startSimulator(), or as its
// own process through main.ts.
import * as fs from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { loadFulfillmentProtos } from "../../protos/fulfillment";
import type { BareMetalInstancesGetRequest__Output as IdRequest } from "../../protos/gen/osac/private/v1/BareMetalInstancesGetRequest";
import type { BareMetalInstancesListRequest__Output as ListRequest } from "../../protos/gen/osac/private/v1/BareMetalInstancesListRequest";
import type { FieldMask__Output } from "../../protos/gen/google/protobuf/FieldMask";
import type { EventsWatchRequest__Output as EventsWatchRequest } from "../../protos/gen/osac/private/v1/EventsWatchRequest";
import type { EventsWatchResponse } from "../../protos/gen/osac/private/v1/EventsWatchResponse";
import { authenticate, Subject } from "./auth";
import { labControlHandlers } from "./control";
import { FulfillmentEngine } from "./engine";
import type { CallFault } from "./faults";
import type { SimulatorSeed } from "./seed";
import { permissionDenied, SimError, toServiceError } from "./status";
import { Kind, KINDS, ObjectsByKind } from "./store";
import { loadLabProtos } from "./labProtos";

export interface SimulatorOptions {
  seed: SimulatorSeed;
  stateDir: string;
  /** 0 = any free port. Always bound to 127.0.0.1. */
  port?: number;
  /** Serve TLS with this certificate instead of plaintext. */
  tls?: { certFile: string; keyFile: string };
}

export interface RunningSimulator {
  port: number;
  address: string;
  engine: FulfillmentEngine;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ObjectRequest<K extends Kind> {
  object: ObjectsByKind[K] | null;
}
interface UpdateRequest<K extends Kind> extends ObjectRequest<K> {
  update_mask: FieldMask__Output | null;
  lock: boolean;
}

/**
 * What every private call goes through before its work: counted, its injected fault's latency and error,
 * authentication and the private API's admin rule. Returns the caller and the fault (commit-then-drop is
 * the caller's to apply).
 */
async function admit(engine: FulfillmentEngine, name: string, md: grpc.Metadata): Promise<{ subject: Subject; fault: CallFault }> {
  engine.calls.set(name, (engine.calls.get(name) ?? 0) + 1);
  const fault = engine.faults.take(name);
  if (fault.latencyMs) await sleep(fault.latencyMs);
  if (fault.error !== undefined) throw new SimError(fault.error, `injected fault on ${name}`);
  const path = `/osac.private.v1.${name}`;
  const subject = authenticate(path, md, engine.opts.seed.tokens);
  const denyTenants = (engine.opts.seed.tenantPrivateAccess ?? "deny") === "deny";
  if (!subject.admin && denyTenants) throw permissionDenied(`method '${path}' is not allowed`);
  return { subject, fault };
}

function crudHandlers<K extends Kind>(engine: FulfillmentEngine, kind: K): grpc.UntypedServiceImplementation {
  const wrap = <Req, Res>(method: string, impl: (req: Req, subject: Subject, md: grpc.Metadata) => Res): grpc.handleUnaryCall<Req, Res> =>
    (call, callback) => {
      const name = `${kind}/${method}`;
      void (async () => {
        const { subject, fault } = await admit(engine, name, call.metadata);
        const res = impl(call.request, subject, call.metadata);
        // The write above is committed; the caller never learns it.
        if (fault.commitThenDrop) throw new SimError(grpc.status.UNAVAILABLE, `injected: response of ${name} dropped after commit`);
        return res;
      })().then((res) => callback(null, res), (err: unknown) => callback(toServiceError(err)));
    };
  return {
    List: wrap("List", (req: ListRequest, s) => engine.list(kind, s, req)),
    Get: wrap("Get", (req: IdRequest, s) => ({ object: engine.visibleRow(kind, s, req.id).obj })),
    Create: wrap("Create", (req: ObjectRequest<K>, s, md) =>
      ({ object: engine.create(kind, s, req.object, md.get("x-dry-run")[0] === "true") })),
    Update: wrap("Update", (req: UpdateRequest<K>, s) =>
      ({ object: engine.update(kind, s, req.object, req.update_mask?.paths ?? [], req.lock) })),
    Delete: wrap("Delete", (req: IdRequest, s) => {
      engine.delete(kind, s, req.id);
      return {};
    }),
    Signal: wrap("Signal", (req: IdRequest, s) => {
      engine.signal(kind, s, req.id);
      return {};
    }),
  };
}

/**
 * Events.Watch: authenticated like every private method, then open until the caller cancels or a fault
 * breaks it. The response headers go out once the stream is subscribed, so a caller that waits for them
 * knows every later change reaches it.
 */
function eventsHandlers(engine: FulfillmentEngine): grpc.UntypedServiceImplementation {
  const watch: grpc.handleServerStreamingCall<EventsWatchRequest, EventsWatchResponse> = (call) => {
    const fail = (err: unknown) => call.emit("error", toServiceError(err));
    void (async () => {
      const { subject } = await admit(engine, "Events/Watch", call.metadata);
      const filter = engine.events.parse(call.request.filter);
      if (call.cancelled) return;
      const off = engine.events.subscribe({ subject, filter, send: (event) => call.write({ event }), end: fail });
      call.on("cancelled", off);
      call.on("close", off);
      call.sendMetadata(new grpc.Metadata());
    })().catch(fail);
  };
  return { Watch: watch };
}

export async function startSimulator(opts: SimulatorOptions): Promise<RunningSimulator> {
  const engine = new FulfillmentEngine({ seed: opts.seed, stateDir: opts.stateDir });
  const server = new grpc.Server();
  const v1 = loadFulfillmentProtos().grpc.osac.private.v1;
  for (const kind of KINDS) server.addService(v1[kind].service, crudHandlers(engine, kind));
  server.addService(v1.Events.service, eventsHandlers(engine));
  server.addService(loadLabProtos().bmwlab.v1.FulfillmentLab.service, labControlHandlers(engine));
  const creds = opts.tls
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: fs.readFileSync(opts.tls.certFile), private_key: fs.readFileSync(opts.tls.keyFile) }])
    : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${opts.port ?? 0}`, creds, (err, p) => (err ? reject(err) : resolve(p))));
  return {
    port,
    address: `127.0.0.1:${port}`,
    engine,
    stop: async () => {
      engine.stop();
      // Open WatchBoots streams would hold tryShutdown forever: give calls a moment, then cut them.
      const forced = setTimeout(() => server.forceShutdown(), 500);
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      clearTimeout(forced);
      engine.store.snapshot();
      engine.store.close();
    },
  };
}
