// Pulumi's runtime mocks for the component tests: resources are "created" in memory, and a
// transformation on the root component records every resource's type, name, inputs and options as the
// SDK sends them (the mock monitor itself never sees options such as ignoreChanges or parent).
import * as pulumi from "@pulumi/pulumi";

export interface Registered {
  type: string;
  name: string;
  props: Record<string, unknown>;
  opts: pulumi.CustomResourceOptions & pulumi.ComponentResourceOptions;
  resource: pulumi.Resource;
}

/** What the mock engine was asked to create, by resource name (inputs after serialization). */
export const created = new Map<string, { type: string; inputs: Record<string, unknown> }>();

/** Installs the mocks; every created resource echoes its inputs as its state. */
export async function installMocks(): Promise<void> {
  await pulumi.runtime.setMocks({
    newResource(args) {
      created.set(args.name, { type: args.type, inputs: args.inputs });
      return { id: `${args.name}-id`, state: { ...args.inputs } };
    },
    call(args) {
      throw new Error(`unexpected invoke ${args.token}`);
    },
  }, "baremetal-workers", "unit");
}

/** A recorder to pass as the root's `transformations`; children inherit it from their parent. */
export function recorder(): { record: pulumi.ResourceTransformation; registered: Registered[] } {
  const registered: Registered[] = [];
  const record: pulumi.ResourceTransformation = (args) => {
    registered.push({ type: args.type, name: args.name, props: args.props as Record<string, unknown>, opts: args.opts, resource: args.resource });
    return undefined;
  };
  return { record, registered };
}

/** The value of an output once the mock engine resolved it. */
export function settled<T>(o: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => o.apply((v) => { resolve(v); return v; }));
}

/** Waits until every recorded resource is registered with the mock engine. */
export async function allRegistered(registered: Registered[]): Promise<string[]> {
  return Promise.all(registered.map((r) => settled(r.resource.urn)));
}
