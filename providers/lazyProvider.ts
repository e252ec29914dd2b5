// A dynamic provider whose logic is loaded at run time. Pulumi serializes the provider object into the
// stack (__provider) with everything its methods capture, so the object built here captures only the
// operations module's path, the resource kind and the loader; the logic (with its gRPC, client-node and
// Node built-in imports) is loaded by providers/loader.ts inside the provider host.
import type * as pulumi from "@pulumi/pulumi";
import { loadProjectModule } from "./loader";

type Awaitable<T> = T | Promise<T>;

/** What an operations module exports: the provider methods, with delete named `remove`. */
export interface ProviderOps<Inputs, Outputs> {
  check(olds: Partial<Inputs>, news: Inputs): Awaitable<pulumi.dynamic.CheckResult<Inputs>>;
  diff(id: string, olds: Outputs, news: Inputs): Awaitable<pulumi.dynamic.DiffResult>;
  create(inputs: Inputs): Promise<pulumi.dynamic.CreateResult<Outputs>>;
  read(id: string, props: Outputs): Promise<pulumi.dynamic.ReadResult<Outputs>>;
  update(id: string, olds: Outputs, news: Inputs): Promise<pulumi.dynamic.UpdateResult<Outputs>>;
  remove(id: string, props: Outputs): Promise<void>;
}

/** A ResourceProvider with every method present; `check` takes the empty olds Pulumi passes for a new resource. */
export interface LazyProvider<Inputs, Outputs> extends pulumi.dynamic.ResourceProvider<Inputs, Outputs> {
  check(olds: Partial<Inputs>, news: Inputs): Promise<pulumi.dynamic.CheckResult<Inputs>>;
  diff(id: string, olds: Outputs, news: Inputs): Promise<pulumi.dynamic.DiffResult>;
  read(id: string, props?: Outputs): Promise<pulumi.dynamic.ReadResult<Outputs>>;
  update(id: string, olds: Outputs, news: Inputs): Promise<pulumi.dynamic.UpdateResult<Outputs>>;
  delete(id: string, props: Outputs): Promise<void>;
}

export interface LazyProviderSpec {
  /** The resource type's name, for messages. */
  kind: string;
  /** The operations module, relative to the project root (a .ts file). */
  opsPath: string;
  /** Appended to the refusal of `pulumi import`, e.g. how to adopt an existing object instead. */
  importHint?: string;
}

/**
 * The provider object of one resource type, delegating every method to the operations module at
 * `spec.opsPath`. `Ops` is that module's type (`typeof import(...)`), checked against ProviderOps.
 */
export function lazyProvider<Inputs, Outputs, Ops extends ProviderOps<Inputs, Outputs>>(spec: LazyProviderSpec):
  LazyProvider<Inputs, Outputs> {
  const { kind, opsPath, importHint } = spec;
  const ops = () => loadProjectModule(opsPath) as Ops;
  return {
    async check(olds, news) {
      return ops().check(olds, news);
    },
    async diff(id, olds, news) {
      return ops().diff(id, olds, news);
    },
    async create(inputs) {
      return ops().create(inputs);
    },
    async read(id, props) {
      if (!props) throw new Error(`${kind} ${id}: import is not supported${importHint ? `; ${importHint}` : ""}`);
      return ops().read(id, props);
    },
    async update(id, olds, news) {
      return ops().update(id, olds, news);
    },
    async delete(id, props) {
      return ops().remove(id, props);
    },
  };
}
