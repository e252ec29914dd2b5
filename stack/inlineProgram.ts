// A Pulumi program run inside this process for one `pulumi` CLI run: the CLI is given the address of a
// language runtime served here (`--client`) instead of starting a Node program process, which would load
// TypeScript, the SDKs and the clients again for every update. This is what the Automation API does for
// its inline programs; its own runner (Stack.up) also runs `stack output` and `stack history` after each
// update, so the StackManager serves the program itself. The SDK keeps each run's state (config, dry run,
// engine connection) in its own AsyncLocalStorage store, so runs of several stacks may overlap.
//
// A program that fails must never return: the SDK tells the engine the program finished when it returns,
// and the engine then deletes whatever the program did not declare, even though the run is reported
// failed. Nor may its error reach the SDK: the SDK reports it through process-wide handlers that every
// overlapping run holds, which fails those runs too, with this one's message. So a failed program is
// held, its CLI is interrupted (the engine stops without deleting anything), and the update fails with
// the program's error. Once its CLI is gone the program may end, but the SDK's last calls to the gone
// engine then fail, again through those handlers: so held programs end only when no other run is served,
// and a new run starts only after they have (docs/decisions.md F6).
import * as grpc from "@grpc/grpc-js";
import { LanguageRuntimeService } from "@pulumi/pulumi/proto/language_grpc_pb";
import { encodeHandoff, type HandoffSource, writeHandoff } from "../io/handoff";
import type { Observation, OrderRef } from "../io/observe";
import { within } from "../lib/deadline";

export type PulumiProgram = () => Promise<Record<string, unknown> | void>;

/** The SDK's language runtime server for inline programs (internal to @pulumi/pulumi, pinned in package.json). */
type RunCallback = (err: unknown, response?: unknown) => void;
type LanguageServerClass = new (program: PulumiProgram) => grpc.UntypedServiceImplementation & {
  run(call: unknown, callback: RunCallback): unknown;
};

/** A run's gRPC clients of the engine, in its store (internal to @pulumi/pulumi too). */
interface RunClients {
  monitor?: { close(): void };
  engine?: { close(): void };
}

function sdkInternals(): {
  LanguageServer: LanguageServerClass; channelOptions: grpc.ServerOptions; runClients: () => RunClients | undefined;
} {
  const server: { LanguageServer?: LanguageServerClass } = require("@pulumi/pulumi/automation/server");
  const settings: { grpcChannelOptions?: grpc.ServerOptions } = require("@pulumi/pulumi/runtime/settings");
  const state: { getStore?: () => { settings?: RunClients } | undefined } = require("@pulumi/pulumi/runtime/state");
  if (typeof server.LanguageServer !== "function" || !settings.grpcChannelOptions || typeof state.getStore !== "function") {
    throw new Error("this @pulumi/pulumi has no inline-program server (automation/server LanguageServer): set BMW_PROGRAM_MODE=process");
  }
  const getStore = state.getStore;
  return { LanguageServer: server.LanguageServer, channelOptions: settings.grpcChannelOptions, runClients: () => getStore()?.settings };
}

/**
 * Closes a finished run's clients of the engine. The SDK closes them only outside an inline run (in a
 * program process, the process's exit does), so each run would leave two gRPC channels behind.
 */
function closeClients(clients: RunClients | undefined): void {
  for (const client of [clients?.monitor, clients?.engine]) {
    try {
      client?.close();
    } catch {
      // already closed
    }
  }
}

export interface ServedProgram {
  /** The CLI arguments that make one run use this program: `--client <address>` and the execution kind. */
  args: string[];
  /** Settles with the program's error if it fails; the CLI must then be interrupted. */
  failure: Promise<unknown>;
  /** Stops serving; only once the CLI has exited (a failed program ends when no run is served). */
  close(): void;
}

/** Runs being served: their CLI has not exited. */
let serving = 0;
/** Failed programs whose CLI is gone, waiting to end until no run is served. */
const heldPrograms: Array<() => void> = [];
/** Settles when the runs of the programs ended last have finished; no run starts before. */
let ending: Promise<unknown> = Promise.resolve();
/** How long a new run waits for ending runs at most: a run that never finishes must not stop every update. */
const ENDING_WAIT_MS = 10_000;

/** Ends the held programs if no run is served; runs started later wait until those have finished. */
function endHeldIfQuiet(): void {
  if (serving > 0 || heldPrograms.length === 0) return;
  for (const end of heldPrograms.splice(0)) end();
}

/** Serves `program` on a loopback port for one CLI run. */
export async function serveProgram(program: PulumiProgram): Promise<ServedProgram> {
  await within(ending, ENDING_WAIT_MS, () => undefined);
  const { LanguageServer, channelOptions, runClients } = sdkInternals();
  let clients: RunClients | undefined;
  let fail: (err: unknown) => void = () => undefined;
  const failure = new Promise<unknown>((resolve) => (fail = resolve));
  let runFinished: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (runFinished = resolve));
  const held: PulumiProgram = async () => {
    clients = runClients(); // the run's store, which holds the clients the SDK opens for it
    try {
      return await program();
    } catch (err) {
      fail(err);
      await new Promise<void>((end) => heldPrograms.push(() => {
        ending = Promise.all([ending, finished]);
        end();
      }));
      return undefined;
    }
  };
  const language = new LanguageServer(held);
  const run = language.run.bind(language);
  language.run = (call, callback) => run(call, (err, response) => {
    closeClients(clients);
    runFinished();
    callback(err, response);
  });
  const server = new grpc.Server(channelOptions);
  server.addService(LanguageRuntimeService, language);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  serving++;
  return {
    args: [`--client=127.0.0.1:${port}`, "--exec-kind", "auto.inline"],
    failure,
    // The SDK's leaked-promise check (onPulumiExit) is left out: its promise set is per process, and
    // another stack's run may be in flight.
    close: () => {
      server.forceShutdown();
      serving--;
      endHeldIfQuiet();
    },
  };
}

/** The failure of an update whose inline program failed: the program's error, which the CLI never saw. */
export class ProgramFailedError extends Error {
  override name = "ProgramFailedError";
  constructor(readonly programError: unknown, cliError: unknown) {
    super(`error: ${programError instanceof Error ? programError.message : String(programError)}`, { cause: cliError });
  }
}

/** What one CLI run is given for its program. */
export interface RunProgram {
  args: string[];
  env: Record<string, string>;
  /** Runs the CLI (given the signal to interrupt it with) and fails with the program's error if the program failed. */
  run<T>(cli: (signal: AbortSignal | undefined) => Promise<T>, signal?: AbortSignal): Promise<T>;
  close(): void;
}

/**
 * The program of one `pulumi up|preview|destroy`: served from this process when `inline` is set (not for a
 * destroy, which runs no program), else the on-disk program, to which an `up`'s observation goes as a
 * handoff file in the run's private directory. Either way the program gets the same validated document
 * (io/handoff.ts); a preview gets none and observes for itself, as an admin's `pulumi preview` does.
 */
export async function programOfRun(o: {
  command: "up" | "destroy" | "preview"; inline?: (handoff: HandoffSource | undefined) => PulumiProgram;
  observation?: Observation; ref?: OrderRef; privateDir: string;
}): Promise<RunProgram> {
  const handed = o.command !== "destroy" && o.observation && o.ref ? { ref: o.ref, observation: o.observation } : undefined;
  if (o.command !== "destroy" && o.inline) {
    const served = await serveProgram(o.inline(handed ? { encoded: encodeHandoff(handed.ref, handed.observation) } : undefined));
    return { args: served.args, env: {}, close: served.close, run: (cli, signal) => interruptedOnFailure(served, cli, signal) };
  }
  const env = handed ? writeHandoff(o.privateDir, handed.ref, handed.observation) : {};
  return { args: ["--exec-kind", "auto.local"], env, close: () => undefined, run: (cli, signal) => cli(signal) };
}

/** Runs the CLI; a failure of the served program interrupts it (SIGINT) and becomes the run's error. */
async function interruptedOnFailure<T>(served: ServedProgram, cli: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
  const interrupt = new AbortController();
  let programError: { err: unknown } | undefined;
  void served.failure.then((err) => {
    programError = { err };
    interrupt.abort();
  });
  const signals = signal ? AbortSignal.any([signal, interrupt.signal]) : interrupt.signal;
  try {
    const out = await cli(signals);
    if (programError) throw new ProgramFailedError(programError.err, undefined);
    return out;
  } catch (err) {
    if (programError) throw new ProgramFailedError(programError.err, err);
    throw err;
  }
}
