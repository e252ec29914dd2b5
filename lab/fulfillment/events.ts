// The private Events service (fulfillment-api.md §6): every committed change of an object becomes one
// event, sent to each open Watch stream whose caller may see the object and whose CEL filter (over the
// variable `event`) accepts it. Like the real service (PostgreSQL NOTIFY), nothing is kept: a stream
// opened later never sees earlier events, and a broken stream loses what happens until it is reopened.
import * as crypto from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import type * as protobuf from "protobufjs";
import type { Event__Output as Event } from "../../protos/gen/osac/private/v1/Event";
import type { EventType__Output as EventType } from "../../protos/gen/osac/private/v1/EventType";
import { canSee, type Subject } from "./auth";
import { checkFilter, evaluateFilter, FilterError, type Node, parseFilter } from "./cel";
import { invalid, SimError } from "./status";
import type { Kind, ObjectsByKind } from "./store";

/** The Event field that carries an object of each kind; kinds without one produce no event. */
const PAYLOAD: Partial<Record<Kind, Exclude<Event["payload"], undefined>>> = {
  BareMetalInstances: "bare_metal_instance",
  BareMetalInstanceCatalogItems: "bare_metal_instance_catalog_item",
  BareMetalInstanceTemplates: "bare_metal_instance_template",
  HostTypes: "host_type",
  DiskImages: "disk_image",
  ClusterVersions: "cluster_version",
  Clusters: "cluster",
};

interface Subscriber {
  subject: Subject;
  filter?: Node;
  send(e: Event): void;
  end(err: SimError): void;
}

export class EventHub {
  private readonly subscribers = new Set<Subscriber>();
  private pending: Event[] = [];

  constructor(private readonly eventType: protobuf.Type, private readonly now: () => number) {}

  /** The parsed and checked filter; INVALID_ARGUMENT when it is not one the service accepts. */
  parse(filter: string | undefined): Node | undefined {
    if (!filter) return undefined;
    try {
      const ast = parseFilter(filter);
      checkFilter(ast, this.eventType, "event");
      return ast;
    } catch (err) {
      if (err instanceof FilterError) throw invalid(`failed to compile filter: ${err.message}`, "filter");
      throw err;
    }
  }

  subscribe(s: Subscriber): () => void {
    this.subscribers.add(s);
    return () => this.subscribers.delete(s);
  }

  get open(): number {
    return this.subscribers.size;
  }

  /** Queues the event of a change; it is sent by flush(), once the change is committed. */
  changed<K extends Kind>(kind: K, type: EventType, obj: ObjectsByKind[K]): void {
    const payload = PAYLOAD[kind];
    if (!payload) return;
    // A copy: the row changes on, the event says what it was.
    this.pending.push({ id: crypto.randomUUID(), type, payload, [payload]: structuredClone(obj) } as Event);
  }

  flush(): void {
    const events = this.pending;
    this.pending = [];
    for (const e of events) for (const s of this.subscribers) this.deliver(s, e);
  }

  /** Ends every open stream with `code` (a fault: the connection to the service broke). */
  breakAll(code: grpc.status): void {
    for (const s of [...this.subscribers]) {
      this.subscribers.delete(s);
      s.end(new SimError(code, "injected: the event stream broke"));
    }
  }

  private deliver(s: Subscriber, e: Event): void {
    const obj = e[e.payload!] as { metadata?: { tenant?: string } } | null | undefined;
    if (!canSee(s.subject, obj?.metadata?.tenant ?? "")) return;
    if (s.filter) {
      try {
        if (!evaluateFilter(s.filter, { self: e, selfType: this.eventType, nowMs: this.now(), variable: "event" })) return;
      } catch {
        return; // an expression that cannot be evaluated for this event does not select it
      }
    }
    s.send(e);
  }
}
