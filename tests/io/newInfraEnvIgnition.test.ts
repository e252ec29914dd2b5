// The ignition a new order's first update waits for (decisions F18): fetched once its InfraEnv publishes
// it, bounded in time and size, and never a byte of it in a message.
import { IgnitionNotReadyError, newInfraEnvIgnition } from "../../io/newInfraEnvIgnition";
import type { ClusterOrder, IgnitionFetch } from "../../planner/types";

const order = { metadata: { name: "co", namespace: "ns", uid: "uid-co" }, spec: {} } as unknown as ClusterOrder;
const CONTENT = '{"ignition":{"version":"3.2.0"},"secret":"pull-secret-inside"}';
const options = { infraEnvName: "co-infraenv", timeoutMs: 10_000, pollMs: 250, maxBytes: 65_536 };

/** A hub whose InfraEnv appears at GET `appearsAt` and publishes its URL at `urlAt`; a clock that sleeps by moving. */
function world(o: { appearsAt?: number; urlAt?: number; owner?: string; fetches?: IgnitionFetch[] }) {
  let gets = 0;
  let clock = 0;
  const fetched: string[] = [];
  const kube = {
    getInfraEnv: async (namespace: string, name: string) => {
      expect([namespace, name]).toEqual(["ns", "co-infraenv"]);
      gets++;
      if (gets < (o.appearsAt ?? 1)) return undefined;
      return {
        metadata: { name: "co-infraenv", namespace: "ns", uid: "ie-1", ownerReferences: [{ uid: o.owner ?? "uid-co" }] },
        status: gets >= (o.urlAt ?? 1) ? { bootArtifacts: { discoveryIgnitionURL: "https://assisted.example/ign?api_key=k" } } : {},
      } as never;
    },
  };
  const results = [...(o.fetches ?? [])];
  const deps = {
    kube,
    loadIgnition: async (url: string): Promise<IgnitionFetch> => {
      fetched.push(url);
      return results.shift() ?? { ok: true, content: CONTENT, bytes: Buffer.byteLength(CONTENT) };
    },
    now: () => clock,
    sleep: async (ms: number) => {
      clock += ms;
    },
  };
  return { deps, fetched, gets: () => gets, clock: () => clock };
}

describe("newInfraEnvIgnition", () => {
  it("returns the ignition once the new InfraEnv exists and publishes its URL, fetched once", async () => {
    const w = world({ appearsAt: 3, urlAt: 5 });
    await expect(newInfraEnvIgnition(w.deps, order, options)).resolves.toBe(CONTENT);
    expect(w.gets()).toBe(5);
    expect(w.fetched).toEqual(["https://assisted.example/ign?api_key=k"]);
    expect(w.clock()).toBe(4 * options.pollMs);
  });

  it("gives up after the timeout when no URL is published, saying so and that no BMI was created", async () => {
    const w = world({ urlAt: Number.MAX_SAFE_INTEGER });
    const err = await newInfraEnvIgnition(w.deps, order, options).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IgnitionNotReadyError);
    expect((err as Error).message).toMatch(/^InfraEnv co-infraenv has no discovery ignition URL .* within 10s; no BareMetalInstance was created/);
    expect(w.clock()).toBeLessThanOrEqual(options.timeoutMs);
    expect(w.fetched).toEqual([]);
  });

  it("waits only for an InfraEnv the order owns", async () => {
    const w = world({ owner: "another-order" });
    await expect(newInfraEnvIgnition(w.deps, order, options)).rejects.toThrow(/^InfraEnv co-infraenv does not exist as the order's own within 10s/);
  });

  it("retries a failed fetch until the timeout and names the last failure, never the content", async () => {
    const failure: IgnitionFetch = { ok: false, reason: "HttpError", message: "HTTP 503 from assisted-service" };
    const retried = world({ fetches: [failure, failure] });
    await expect(newInfraEnvIgnition(retried.deps, order, options)).resolves.toBe(CONTENT);
    expect(retried.fetched).toHaveLength(3);
    const failing = world({ fetches: Array(100).fill(failure) });
    await expect(newInfraEnvIgnition(failing.deps, order, options)).rejects.toThrow(/failed \(HttpError\): HTTP 503 from assisted-service within 10s/);
  });

  it.each([
    ["TooLarge", "the discovery ignition at https://assisted.example/ign exceeds 65536 bytes (read 65537 before stopping)"],
    ["NotHttps", "refusing to fetch the discovery ignition over http: HTTPS only"],
    ["Redirect", "GET https://assisted.example/ign answered 302 (redirect); redirects are not followed"],
  ] as const)("gives up at once on a fetch refused as %s: another try at the same URL cannot mend it", async (reason, message) => {
    const w = world({ fetches: [{ ok: false, reason, message }] });
    await expect(newInfraEnvIgnition(w.deps, order, options)).rejects.toThrow(
      `fetching the discovery ignition of InfraEnv co-infraenv failed (${reason}): ${message}; no BareMetalInstance was created`);
    expect(w.fetched).toHaveLength(1);
    expect(w.clock()).toBe(0);
  });

  it("refuses an ignition over the user_data limit at once, without its content in the message", async () => {
    const big = "x".repeat(70_000);
    const w = world({ fetches: [{ ok: true, content: big, bytes: 70_000 }] });
    const err = await newInfraEnvIgnition(w.deps, order, options).then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).toBe("the discovery ignition of InfraEnv co-infraenv is 70000 bytes, more than the 65536-byte " +
      "BareMetalInstance user_data limit; no BareMetalInstance was created");
    expect(w.clock()).toBe(0);
  });
});
