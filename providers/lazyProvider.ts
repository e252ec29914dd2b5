// Our dynamic resources: Pulumi dynamic resources (the nodejs dynamic provider host runs them) whose
// provider object is providers/providerModule.js. Its methods hold no imports; each call loads the type's
// operations module, with its gRPC, client-node and Node built-in imports, inside the provider host.
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { providerOf } from "./providerModule";

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
 * `spec.opsPath` (`Ops`, that module's type, checked against ProviderOps at compile time; `opsType` is never
 * set). This process never calls it:
 * the provider host builds the same object from the resource's provider text.
 */
export function lazyProvider<Inputs, Outputs, Ops extends ProviderOps<Inputs, Outputs>>(spec: LazyProviderSpec):
  LazyProvider<Inputs, Outputs> & { readonly spec: LazyProviderSpec; readonly opsType?: Ops } {
  return Object.assign(providerOf(spec) as unknown as LazyProvider<Inputs, Outputs>, { spec });
}

let moduleText: string | undefined;

/**
 * The module the provider host evaluates for a resource of this type: providers/providerModule.js and a
 * handler that builds the provider object of `spec` (no secret, no path of this machine).
 */
export function providerText(spec: LazyProviderSpec): string {
  moduleText ??= fs.readFileSync(path.join(__dirname, "providerModule.js"), "utf8");
  const { kind, opsPath, importHint } = spec;
  return `${moduleText}\nmodule.exports.handler = () => providerOf(${JSON.stringify({ kind, opsPath, ...(importHint ? { importHint } : {}) })});\n`;
}

/**
 * A dynamic resource as `pulumi.dynamic.Resource` declares one (the same type token, `__provider` among
 * its inputs), with providerText as its provider.
 */
export abstract class LazyProviderResource extends pulumi.CustomResource {
  protected constructor(provider: { readonly spec: LazyProviderSpec }, module: string, type: string, name: string,
    props: pulumi.Inputs, opts?: pulumi.CustomResourceOptions) {
    super(`pulumi-nodejs:dynamic/${module}:${type}`, name, { ...props, __provider: providerText(provider.spec) }, opts);
  }
}
