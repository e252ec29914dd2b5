// The program of `up` run inside the reconciler's process (stack/inlineProgram.ts) on the real CLI and a
// file backend: it runs in this process and no Node program process starts; each stack's run sees its
// own config even when the runs of two stacks overlap; a program that throws fails its update with its
// message, deletes nothing it did not declare and fails no other update; a finished run's connections to
// the engine are closed; without an observation it gets no handoff.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as pulumi from "@pulumi/pulumi";
import { descendants } from "../../lib/procfs";
import type { HandoffSource } from "../../io/handoff";
import type { PulumiProgram } from "../../stack/inlineProgram";
import { stackSandbox } from "../controller/support";
import { PROJECT_ROOT } from "../../stack/toolchain";

const FIXTURES = path.join(PROJECT_ROOT, "tests", "fixtures");
const A = { namespace: "ns1", name: "inline-a" };
const B = { namespace: "ns1", name: "inline-b" };

/** The program each test sets; the sandbox's manager serves whatever it is at the time of the run. */
let program: (handoff: HandoffSource | undefined) => PulumiProgram = () => async () => ({});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Command lines of this process's descendants. */
function childCommandLines(): string[] {
  return descendants(process.pid).filter((pid) => pid !== process.pid).flatMap((pid) => {
    try {
      return [fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")];
    } catch {
      return [];
    }
  });
}

describe("StackManager with an inline program", () => {
  const sb = stackSandbox({ inlineProgram: (handoff) => program(handoff) });
  afterAll(() => sb.cleanup());

  it("runs the program in this process, with the stack's config, and starts no Node program process", async () => {
    program = () => async () => ({
      clusterOrder: new pulumi.Config().require("clusterOrder"), pid: process.pid, dryRun: pulumi.runtime.isDryRun(),
    });
    const seen = new Set<string>();
    const r = await sb.manager.up(A, { message: "inline", onOutput: () => childCommandLines().forEach((c) => seen.add(c)) });
    expect(r.outputs).toEqual({ clusterOrder: "ns1/inline-a", pid: process.pid, dryRun: false });
    const cli = [...seen].filter((c) => /\bpulumi up\b/.test(c));
    expect(cli.length).toBeGreaterThan(0); // the samples did see the update's CLI
    expect([...seen].filter((c) => c.includes("@pulumi/pulumi/cmd/run") || c.includes("pulumi-language-nodejs"))).toEqual([]);
  });

  it("gives overlapping runs of two stacks each its own config", async () => {
    program = () => async () => {
      const before = new pulumi.Config().require("clusterOrder");
      await sleep(1_500); // the other stack's run starts and reads its config meanwhile
      return { before, after: new pulumi.Config().require("clusterOrder") };
    };
    const [a, b] = await Promise.all([sb.manager.up(A, { message: "a" }), sb.manager.up(B, { message: "b" })]);
    expect(a.outputs).toEqual({ before: "ns1/inline-a", after: "ns1/inline-a" });
    expect(b.outputs).toEqual({ before: "ns1/inline-b", after: "ns1/inline-b" });
  });

  it("fails an update whose program throws with its message, deletes nothing it did not declare, fails no update beside it, and leaves no handler behind", () => {
    // In a Node process of its own (see the fixture's header for why not in jest's).
    const r = spawnSync(process.execPath, ["-r", "ts-node/register/transpile-only", path.join(FIXTURES, "inline-failure", "run.ts")],
      { cwd: PROJECT_ROOT, encoding: "utf8", timeout: 120_000 });
    expect(r.stderr).toBe("");
    const out: unknown = JSON.parse(r.stdout);
    expect(out).toEqual({
      failure: expect.stringMatching(/^error: nothing is changed until they can: the fixture's refusal$/),
      besideOutputs: { order: "ns/beside" }, // another stack's update, running when the program threw, succeeded
      opsAfterFailure: ["create beside", "create kept"], // and the record the failing program did not declare is still there
      againOutputs: { step: "again" },
      handlersLeft: 0,
    });
  });

  it("closes each run's connections to the engine once the run finished (the SDK leaves an inline run's open)", async () => {
    type Client = { getChannel(): { getConnectivityState(connect: boolean): grpc.connectivityState } };
    let clients: { monitor?: Client; engine?: Client } | undefined;
    program = () => async () => {
      const state: { getStore(): { settings: typeof clients } } = require("@pulumi/pulumi/runtime/state");
      clients = state.getStore().settings;
      pulumi.log.info("a message, so that the run has its engine client too");
      return {};
    };
    await sb.manager.up(A, { message: "clients" });
    expect(clients?.monitor?.getChannel().getConnectivityState(false)).toBe(grpc.connectivityState.SHUTDOWN);
    expect(clients?.engine?.getChannel().getConnectivityState(false)).toBe(grpc.connectivityState.SHUTDOWN);
  });

  it("runs the program without a handoff when the update carries no observation", async () => {
    const handed: (HandoffSource | undefined)[] = [];
    program = (handoff) => {
      handed.push(handoff);
      return async () => ({});
    };
    await sb.manager.up(B, { message: "no observation" });
    expect(handed).toEqual([undefined]);
  });
});

