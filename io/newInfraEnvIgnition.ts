// The discovery ignition of the InfraEnv a new order's first update creates (decisions F18). The program
// waits for it inside that update, before the fence and any Create, so the BMIs come in the same update
// as their InfraEnv. It is fetched and bounded as the observation fetches it (clients/ignition.ts); when
// it is not there in time, the update fails before anything but the InfraEnv and the NodePool patches
// exists, and the next reconcile goes through the ignition gate as for any order.
import type { HubApi } from "../clients/kube";
import type { ClusterOrder, IgnitionFetch } from "../planner/types";
import { retry, systemClock } from "../clients/retry";
import { ownedInfraEnv } from "./observe";

export interface NewInfraEnvIgnitionDeps {
  kube: Pick<HubApi, "getInfraEnv">;
  loadIgnition: (url: string) => Promise<IgnitionFetch>;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface NewInfraEnvIgnitionOptions {
  infraEnvName: string;
  /** How long the InfraEnv has to publish a fetchable ignition. */
  timeoutMs: number;
  pollMs: number;
  maxBytes: number;
}

/** Thrown when the InfraEnv has no usable ignition in time; the message says why, never the content. */
export class IgnitionNotReadyError extends Error {
  override name = "IgnitionNotReadyError";
}

/** Fetch failures that another try at the same URL cannot mend. */
const DEFINITIVE: ReadonlySet<string> = new Set(["TooLarge", "NotHttps", "Redirect"]);

/** Not there yet: another poll may find it. */
class NotYet extends Error {}

/** The ignition content of the order's InfraEnv, once it publishes one that fetches and fits. */
export async function newInfraEnvIgnition(deps: NewInfraEnvIgnitionDeps, order: ClusterOrder, o: NewInfraEnvIgnitionOptions): Promise<string> {
  const clock = { ...systemClock, ...(deps.now ? { now: deps.now } : {}), ...(deps.sleep ? { sleep: deps.sleep } : {}), random: () => 0 };
  const within = `within ${Math.round(o.timeoutMs / 1000)}s; no BareMetalInstance was created, the next update creates them`;
  const attempt = async (): Promise<string> => {
    // The one InfraEnv this update declares, by its name (a GET, not a list of the namespace each poll).
    const named = await deps.kube.getInfraEnv(order.metadata.namespace, o.infraEnvName);
    const owned = named && ownedInfraEnv([named], order);
    if (!owned) throw new NotYet(`InfraEnv ${o.infraEnvName} does not exist${named ? " as the order's own" : ""}`);
    if (!owned.ignitionUrl) throw new NotYet(`InfraEnv ${o.infraEnvName} has no discovery ignition URL (status.bootArtifacts.discoveryIgnitionURL)`);
    const ign = await deps.loadIgnition(owned.ignitionUrl);
    if (ign.ok && ign.bytes <= o.maxBytes) return ign.content;
    // A size over the limit, or an URL the fetch refuses, will not change for this InfraEnv: no point in waiting.
    if (ign.ok) throw new IgnitionNotReadyError(`the discovery ignition of InfraEnv ${o.infraEnvName} is ${ign.bytes} bytes, more than ` +
      `the ${o.maxBytes}-byte BareMetalInstance user_data limit; no BareMetalInstance was created`);
    const failed = `fetching the discovery ignition of InfraEnv ${o.infraEnvName} failed (${ign.reason}): ${ign.message}`;
    if (DEFINITIVE.has(ign.reason)) throw new IgnitionNotReadyError(`${failed}; no BareMetalInstance was created`);
    throw new NotYet(failed);
  };
  try {
    // A fixed interval (no growth, no jitter) until the deadline: the InfraEnv publishes within seconds.
    return await retry(attempt, { clock, retryable: (err) => err instanceof NotYet, policy: {
      maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: o.pollMs, maxDelayMs: o.pollMs, multiplier: 1, jitter: 0, overallDeadlineMs: o.timeoutMs } });
  } catch (err) {
    throw err instanceof NotYet ? new IgnitionNotReadyError(`${err.message} ${within}`) : err;
  }
}
