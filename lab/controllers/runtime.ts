// The lab's controllers in one process: the assisted-service stand-in (ignition over HTTPS, InfraEnv
// status, Agent registration when a host boots a discovery ignition, host states) and the
// HyperShift/CAPI stand-in (NodePools of platform Agent install bound Agents up to spec.replicas,
// scale-down unbinds). Level-triggered: watches and timers only say "look again"; every pass lists
// the objects in scope and moves each one step.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { BootEvent } from "../fulfillment/labProtos";
import type { SeedHost } from "../fulfillment/seed";
import { httpStatus, Kube, RESOURCES, watchChanges, watchedCache, type WatchedCache, watchedSecrets, WatchHandle } from "../kube";
import { FulfillmentEndpoint, labControlClient } from "../labControl";
import type { LabTimings } from "../timings";
import { isBound, nextHostState, S, stateOf, statusFor } from "./assisted/agentStates";
import { discoveryIgnition, infraEnvOfIgnition } from "./assisted/ignition";
import { BootedHost, hostId, INFRAENV_LABEL, inventory, inventoryLabels } from "./assisted/inventory";
import { AssistedServer, startAssistedServer } from "./assisted/server";
import { CdRef, planNodePool } from "./hypershift/nodePools";
import type { Agent, AgentStatus, ClusterDeployment, HostedCluster, InfraEnv, InfraEnvStatus, NodePool } from "./types";

export interface ControllersConfig {
  labId: string;
  /** Where the controllers keep their state (URL signing key, boots already handled). */
  stateDir: string;
  kubeconfigPath: string;
  /** Only namespaces matching this label selector; undefined = every namespace. */
  namespaceSelector?: string;
  timings: LabTimings;
  assisted: { port: number; certFile: string; keyFile: string; caFile: string };
  fulfillment: FulfillmentEndpoint;
  /** The lab's host inventory (MACs as the hosts report them). */
  hosts: SeedHost[];
  /** Interface names per instance type, in MAC order. */
  instanceTypePorts: Record<string, string[]>;
  /** Upper bound between two passes when nothing happens. */
  resyncMs?: number;
}

export interface AssistedStats {
  bootsSeen: number;
  agentsRegistered: number;
  agentsReregistered: number;
  /** Boots whose ignition names an InfraEnv that no longer exists as such (deleted or recreated). */
  staleBoots: number;
  /** Boots whose user_data is not a discovery ignition. */
  foreignBoots: number;
  ignitionsServed: number;
  installsStarted: number;
  installsCompleted: number;
  unboundByScaleDown: number;
  passes: number;
  errors: number;
}

export interface RunningControllers {
  assistedUrl: string;
  assistedPort: number;
  stats(): AssistedStats;
  /** Ask for a pass now. */
  kick(): void;
  stop(): Promise<void>;
}

const sleepFor = (ms: number) => new Promise((r) => setTimeout(r, ms));

function signingKey(stateDir: string): string {
  const file = path.join(stateDir, "url-signing.key");
  if (!fs.existsSync(file)) fs.writeFileSync(file, crypto.randomBytes(32).toString("hex"), { mode: 0o600 });
  return fs.readFileSync(file, "utf8").trim();
}

function validPullSecret(secret: k8s.V1Secret | undefined): string | undefined {
  const b64 = secret?.data?.[".dockerconfigjson"];
  if (!b64) return undefined;
  const text = Buffer.from(b64, "base64").toString("utf8");
  try {
    const parsed = JSON.parse(text) as { auths?: unknown };
    return parsed.auths && typeof parsed.auths === "object" ? text : undefined;
  } catch {
    return undefined;
  }
}

export async function startControllers(cfg: ControllersConfig, log: Logger): Promise<RunningControllers> {
  fs.mkdirSync(cfg.stateDir, { recursive: true });
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(cfg.kubeconfigPath);
  const kube = new Kube(kc, "baremetal-workers-lab");
  const t = cfg.timings;
  const stats: AssistedStats = {
    bootsSeen: 0, agentsRegistered: 0, agentsReregistered: 0, staleBoots: 0, foreignBoots: 0, ignitionsServed: 0,
    installsStarted: 0, installsCompleted: 0, unboundByScaleDown: 0, passes: 0, errors: 0,
  };
  const caPem = fs.readFileSync(cfg.assisted.caFile, "utf8");
  const key = signingKey(cfg.stateDir);
  let stopped = false;

  // ---- scope ----
  const scope = async (): Promise<Set<string> | undefined> => {
    if (!cfg.namespaceSelector) return undefined;
    const res = await kube.core.listNamespace({ labelSelector: cfg.namespaceSelector });
    return new Set(res.items.map((n) => n.metadata?.name ?? ""));
  };
  const inScope = (s: Set<string> | undefined, ns: string | undefined) => !s || (ns !== undefined && s.has(ns));

  // Pull secrets come from a watched cache (started with the others below): a GET per InfraEnv per pass
  // was most of the apiserver's work at a few hundred orders.
  const secrets = watchedSecrets(kube, () => kick(), (err) => log.debug({ err: String(err) }, "secret watch failed; listing again"));
  const readSecret = async (namespace: string, name: string): Promise<k8s.V1Secret | undefined> => secrets.get(namespace, name);

  // ---- ignition endpoint ----
  let server: AssistedServer | undefined;
  // Set once the watched caches exist (below); until their first listing, a request lists InfraEnvs itself.
  let infraEnvCache: WatchedCache<InfraEnv> | undefined;
  const render = async (uid: string): Promise<string | undefined> => {
    const s = await scope();
    const all = infraEnvCache?.synced() ? infraEnvCache.list() : await kube.list<InfraEnv>(RESOURCES.infraEnv);
    const ie = all.find((i) => i.metadata.uid === uid && inScope(s, i.metadata.namespace));
    if (!ie || ie.metadata.deletionTimestamp) return undefined;
    const ns = ie.metadata.namespace ?? "";
    const pullSecret = validPullSecret(await readSecret(ns, ie.spec?.pullSecretRef?.name ?? ""));
    if (!pullSecret || !server) return undefined;
    stats.ignitionsServed++;
    log.info({ infraEnv: `${ns}/${ie.metadata.name}` }, "served discovery ignition");
    return discoveryIgnition({
      infraEnv: { namespace: ns, name: ie.metadata.name, uid }, pullSecret, sshAuthorizedKey: ie.spec?.sshAuthorizedKey,
      serviceUrl: server.url, caPem,
    });
  };
  server = await startAssistedServer({
    port: cfg.assisted.port, certFile: cfg.assisted.certFile, keyFile: cfg.assisted.keyFile, signingKey: key, render,
    stats: () => ({ ...stats }),
    onError: (err) => {
      stats.errors++;
      log.error({ err: String(err) }, "ignition request failed");
    },
  });
  const assisted = server;

  // ---- per-state clocks (restarts begin the clock again) ----
  const since = new Map<string, { state: string; at: number }>();
  const clock = (a: Agent, now: number) => {
    const uid = a.metadata.uid ?? a.metadata.name;
    const rec = since.get(uid);
    if (rec && rec.state === stateOf(a)) return rec.at;
    since.set(uid, { state: stateOf(a), at: now });
    return now;
  };
  const entered = (a: Agent, state: string, now: number) => since.set(a.metadata.uid ?? a.metadata.name, { state, at: now });
  const durationOf = (state: string) => state === S.binding ? t.bindMs : state === S.installing ? t.installMs
    : state === S.unbinding ? t.unbindMs : undefined;

  // ---- InfraEnvs: discovery ignition URL and conditions ----
  async function reconcileInfraEnv(ie: InfraEnv, now: string): Promise<void> {
    const ns = ie.metadata.namespace ?? "";
    const uid = ie.metadata.uid ?? "";
    const secretName = ie.spec?.pullSecretRef?.name ?? "";
    const ok = validPullSecret(await readSecret(ns, secretName)) !== undefined;
    const prev = ie.status ?? {};
    const prevCond = prev.conditions?.find((c) => c.type === "ImageCreated");
    const url = ok ? assisted.ignitionUrl(uid) : undefined;
    const want: InfraEnvStatus = {
      agentLabelSelector: { matchLabels: { [INFRAENV_LABEL]: ie.metadata.name } },
      createdTime: prev.createdTime ?? now,
      debugInfo: { eventsURL: `${assisted.url}/api/assisted-install/v2/events?infra_env_id=${uid}` },
      conditions: [ok
        ? { type: "ImageCreated", status: "True", reason: "ImageCreated", message: "Image has been created", lastTransitionTime: prevCond?.status === "True" ? prevCond.lastTransitionTime : now }
        : { type: "ImageCreated", status: "False", reason: "ImageCreationError",
          message: `Failed to create image: the pull secret '${secretName}' is missing or is not a valid dockerconfigjson`,
          lastTransitionTime: prevCond?.status === "False" ? prevCond.lastTransitionTime : now }],
    };
    const same = prev.bootArtifacts?.discoveryIgnitionURL === url && prevCond?.status === want.conditions![0].status &&
      prev.agentLabelSelector?.matchLabels?.[INFRAENV_LABEL] === ie.metadata.name && prev.createdTime !== undefined;
    if (same) return;
    await kube.patchStatus(RESOURCES.infraEnv, ns, ie.metadata.name, { ...want, bootArtifacts: url ? { discoveryIgnitionURL: url } : null });
    log.info({ infraEnv: `${ns}/${ie.metadata.name}`, ready: ok }, ok ? "discovery ignition URL published" : "InfraEnv image not created");
  }

  // ---- Agents: the assisted-service host states ----
  /** Moves each Agent whose state has run its time on; returns the Agents as they are afterwards. */
  async function reconcileAgentStates(agents: Agent[], now: number): Promise<Agent[]> {
    const out: Agent[] = [];
    for (const a of agents) {
      const next = a.metadata.deletionTimestamp || !a.status?.debugInfo?.state ? undefined : nextHostState(a, now - clock(a, now), t);
      if (!next) {
        out.push(a);
        continue;
      }
      const moved = await patchCached(a, statusFor(next, new Date(now).toISOString(), a.status));
      out.push(moved ?? a);
      if (!moved) continue; // the cache was behind: decided again once the newer copy arrives
      entered(a, next, now);
      if (next === S.added) stats.installsCompleted++;
      log.info({ agent: `${a.metadata.namespace}/${a.metadata.name}`, from: stateOf(a), to: next }, "agent state");
    }
    return out;
  }

  /**
   * Status patch of an Agent decided on its cached copy: applied only to that version, so a decision on a
   * copy the watch has not caught up with yet is dropped (undefined) instead of undoing a newer state.
   */
  async function patchCached(a: Agent, status: AgentStatus): Promise<Agent | undefined> {
    try {
      return await kube.patchStatus<Agent>(RESOURCES.agent, a.metadata.namespace ?? "", a.metadata.name, status, a.metadata.resourceVersion);
    } catch (e) {
      if (httpStatus(e) === 409 || httpStatus(e) === 404) return undefined;
      throw e;
    }
  }

  // ---- NodePools: the CAPI Agent provider ----
  async function reconcileNodePools(nodePools: NodePool[], hcs: HostedCluster[], cds: ClusterDeployment[], agents: Agent[], now: number) {
    const held = new Set<string>();
    const iso = new Date(now).toISOString();
    const sorted = nodePools.filter((np) => np.spec?.platform.type === "Agent" && !np.metadata.deletionTimestamp)
      .sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
    for (const np of sorted) {
      const ns = np.metadata.namespace ?? "";
      const hc = hcs.find((h) => h.metadata.namespace === ns && h.metadata.name === np.spec?.clusterName);
      if (!hc || hc.spec?.platform?.type !== "Agent") continue;
      const agentNs = hc.spec.platform.agent?.agentNamespace ?? ns;
      // HyperShift's Agent platform names the ClusterDeployment in the hosted control plane namespace.
      const cdRefs: CdRef[] = cds.filter((cd) => cd.metadata.name === hc.metadata.name &&
        (cd.metadata.namespace === `${ns}-${hc.metadata.name}` || cd.metadata.namespace === ns))
        .map((cd) => ({ name: cd.metadata.name, namespace: cd.metadata.namespace ?? "" }));
      const pool = agents.filter((a) => a.metadata.namespace === agentNs && !held.has(a.metadata.uid ?? ""));
      const plan = planNodePool(np, pool, cdRefs);
      for (const a of plan.install) {
        if (!(await patchCached(a, statusFor(S.installing, iso, a.status)))) continue;
        entered(a, S.installing, now);
        stats.installsStarted++;
        log.info({ agent: `${agentNs}/${a.metadata.name}`, nodePool: `${ns}/${np.metadata.name}` }, "agent installing");
      }
      for (const a of plan.release) await release(a, `scale-down of NodePool ${ns}/${np.metadata.name}`, now);
      for (const a of plan.members) held.add(a.metadata.uid ?? "");
      if (np.status?.replicas !== plan.readyReplicas) {
        await kube.patchStatus(RESOURCES.nodePool, ns, np.metadata.name, { replicas: plan.readyReplicas });
        log.info({ nodePool: `${ns}/${np.metadata.name}`, replicas: plan.readyReplicas }, "NodePool status.replicas");
      }
    }
    // A Machine whose NodePool is gone is deleted too: its Agent is unbound the same way.
    for (const a of agents) {
      const st = stateOf(a);
      if ((st === S.installing || st === S.added) && isBound(a) && !held.has(a.metadata.uid ?? "")) {
        await release(a, "no NodePool holds this agent", now);
      }
    }
  }

  async function release(a: Agent, why: string, now: number): Promise<void> {
    const ns = a.metadata.namespace ?? "";
    try {
      await kube.patch(RESOURCES.agent, ns, a.metadata.name,
        { metadata: { resourceVersion: a.metadata.resourceVersion }, spec: { clusterDeploymentName: null } });
    } catch (e) {
      if (httpStatus(e) === 409) return; // changed meanwhile: decide again on the next pass
      throw e;
    }
    await kube.patchStatus(RESOURCES.agent, ns, a.metadata.name, statusFor(S.unbinding, new Date(now).toISOString(), a.status));
    entered(a, S.unbinding, now);
    stats.unboundByScaleDown++;
    log.info({ agent: `${ns}/${a.metadata.name}`, reason: why }, "agent unbound by the CAPI agent provider");
  }

  /** One pass; returns when the next timed transition is due (epoch ms), if any. */
  async function pass(): Promise<number | undefined> {
    // Never decide on a kind not listed yet: an empty NodePool cache would release every installed Agent.
    if (!Object.values(caches).every((c) => c.synced())) return Date.now() + 1_000;
    stats.passes++;
    const s = await scope();
    const now = Date.now();
    const mine = <T extends { metadata: { namespace?: string } }>(xs: T[]) => xs.filter((x) => inScope(s, x.metadata.namespace));
    const infraEnvs = mine(caches.infraEnv.list());
    for (const ie of infraEnvs) if (!ie.metadata.deletionTimestamp) await reconcileInfraEnv(ie, new Date(now).toISOString());
    const agents = await reconcileAgentStates(mine(caches.agent.list()), now);
    await reconcileNodePools(mine(caches.nodePool.list()), mine(caches.hostedCluster.list()), caches.clusterDeployment.list(), agents, now);
    let due: number | undefined;
    for (const a of agents) {
      const d = durationOf(stateOf(a));
      const rec = since.get(a.metadata.uid ?? a.metadata.name);
      if (d !== undefined && rec) due = Math.min(due ?? Infinity, rec.at + d);
    }
    return due;
  }

  // ---- the loop ----
  const onCacheError = (err: unknown) => log.debug({ err: String(err) }, "cache watch failed; listing again");
  const cacheOf = <T extends Agent | InfraEnv | NodePool | HostedCluster | ClusterDeployment>(r: (typeof RESOURCES)[keyof typeof RESOURCES]) =>
    watchedCache<T>(kube, r, () => kick(), onCacheError);
  const caches = {
    secrets,
    infraEnv: cacheOf<InfraEnv>(RESOURCES.infraEnv), agent: cacheOf<Agent>(RESOURCES.agent), nodePool: cacheOf<NodePool>(RESOURCES.nodePool),
    hostedCluster: cacheOf<HostedCluster>(RESOURCES.hostedCluster), clusterDeployment: cacheOf<ClusterDeployment>(RESOURCES.clusterDeployment),
  };
  infraEnvCache = caches.infraEnv;
  const resyncMs = cfg.resyncMs ?? 2_000;
  let running = false;
  let dirty = false;
  let debounce: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;
  let idle: Promise<void> = Promise.resolve();
  const schedule = (due: number | undefined) => {
    if (timer) clearTimeout(timer);
    const wait = due === undefined ? resyncMs : Math.min(resyncMs, Math.max(5, due - Date.now() + 5));
    timer = setTimeout(kick, wait);
  };
  const run = async () => {
    running = true;
    while (dirty && !stopped) {
      dirty = false;
      try {
        schedule(await pass());
      } catch (err) {
        stats.errors++;
        log.warn({ err: err instanceof Error ? err.message : String(err) }, "reconcile pass failed; retrying");
        schedule(Date.now() + 1_000);
      }
    }
    running = false;
  };
  function kick(): void {
    if (stopped) return;
    dirty = true;
    if (running || debounce) return;
    debounce = setTimeout(() => {
      debounce = undefined;
      if (!running) idle = run();
    }, 10);
  }

  const watches: WatchHandle[] = [];
  const onWatchError = (err: unknown) => log.debug({ err: String(err) }, "watch ended; re-establishing");
  if (cfg.namespaceSelector) watches.push(watchChanges(kc, "/api/v1/namespaces", kick, onWatchError));
  // Every pass is decided on these caches (listed once, then watched) and not on fresh lists of every
  // kind: at hundreds of orders those lists made the lab the busiest process on the machine.
  await Promise.all(Object.values(caches).map((c) => c.start()));

  // ---- boots: a host booted a BMI's user_data ----
  const processedFile = path.join(cfg.stateDir, "processed-boots.json");
  const processed = new Set<string>(fs.existsSync(processedFile) ? (JSON.parse(fs.readFileSync(processedFile, "utf8")) as string[]) : []);
  const pending = new Map<string, NodeJS.Timeout>();
  const done = (k: string) => {
    processed.add(k);
    fs.writeFileSync(processedFile, JSON.stringify([...processed]));
  };
  const hostOf = (e: BootEvent): BootedHost => {
    const seeded = cfg.hosts.find((h) => h.name === e.host_name);
    return { name: e.host_name, macs: seeded?.macs ?? e.macs, ports: cfg.instanceTypePorts[e.instance_type], instanceType: e.instance_type };
  };

  async function register(e: BootEvent): Promise<void> {
    const id = infraEnvOfIgnition(e.user_data);
    if (!id) {
      stats.foreignBoots++;
      log.info({ bmi: e.bmi_name, host: e.host_name }, "host booted without a discovery ignition: nothing registers");
      return;
    }
    const ie = await kube.get<InfraEnv>(RESOURCES.infraEnv, id.namespace, id.name);
    if (!ie || ie.metadata.uid !== id.uid || ie.metadata.deletionTimestamp) {
      stats.staleBoots++;
      log.warn({ bmi: e.bmi_name, host: e.host_name, infraEnv: `${id.namespace}/${id.name}`, infraEnvId: id.uid },
        "discovery ignition of an infra env that no longer exists: the agent cannot register");
      return;
    }
    const host = hostOf(e);
    const name = hostId(cfg.labId, host.name);
    const now = new Date().toISOString();
    const labels = { ...ie.spec?.agentLabels, ...inventoryLabels(host), [INFRAENV_LABEL]: id.name };
    const clusterRef = ie.spec?.clusterRef?.name ? { name: ie.spec.clusterRef.name, namespace: ie.spec.clusterRef.namespace ?? id.namespace } : undefined;
    const status: AgentStatus = {
      ...statusFor(S.knownUnbound, now),
      inventory: inventory(host, now), role: "auto-assign", bootstrap: false,
    };
    status.debugInfo = { ...status.debugInfo, eventsURL: `${assisted.url}/api/assisted-install/v2/events?host_id=${name}` };
    try {
      await kube.create<Agent>(RESOURCES.agent, {
        metadata: { name, namespace: id.namespace, labels },
        spec: { approved: ie.spec?.agentApproval?.autoApprove === true, role: "", ...(clusterRef ? { clusterDeploymentName: clusterRef } : {}) },
      });
      stats.agentsRegistered++;
      log.info({ agent: `${id.namespace}/${name}`, host: host.name, bmi: e.bmi_name }, "agent registered");
    } catch (err) {
      if (httpStatus(err) !== 409) throw err;
      // The same host (same hardware id) booted into discovery again: the service updates its host.
      await kube.patch(RESOURCES.agent, id.namespace, name, { metadata: { labels } });
      stats.agentsReregistered++;
      log.info({ agent: `${id.namespace}/${name}`, host: host.name, bmi: e.bmi_name }, "agent re-registered");
    }
    const current = await kube.get<Agent>(RESOURCES.agent, id.namespace, name);
    if (current && isBound(current) && !clusterRef) {
      // Still bound from an earlier life: keep the binding, report fresh inventory only.
      await kube.patchStatus(RESOURCES.agent, id.namespace, name, { inventory: status.inventory });
    } else {
      await kube.patchStatus(RESOURCES.agent, id.namespace, name, { ...status, progress: null });
    }
    kick();
  }

  const onBoot = (e: BootEvent) => {
    const k = `${e.bmi_id}@${e.boot_time}`;
    if (processed.has(k) || pending.has(k) || stopped) return;
    stats.bootsSeen++;
    log.info({ bmi: e.bmi_name, host: e.host_name }, "host booted");
    pending.set(k, setTimeout(() => {
      void (async () => {
        for (let attempt = 0; ; attempt++) {
          try {
            await register(e);
            done(k);
            return;
          } catch (err) {
            stats.errors++;
            log.warn({ bmi: e.bmi_name, err: err instanceof Error ? err.message : String(err) }, "registration failed; retrying");
            if (stopped || attempt > 20) return;
            await sleepFor(500);
          }
        }
      })().finally(() => pending.delete(k));
    }, t.bootMs));
  };

  const bootClient = labControlClient(cfg.fulfillment);
  let bootCall: ReturnType<typeof bootClient.WatchBoots> | undefined;
  let bootRetry: NodeJS.Timeout | undefined;
  const watchBoots = () => {
    if (stopped) return;
    const call = bootClient.WatchBoots({ replay: true });
    bootCall = call;
    let ended = false;
    const again = () => {
      if (ended || stopped) return;
      ended = true;
      bootRetry = setTimeout(watchBoots, 1_000);
    };
    call.on("data", onBoot);
    call.on("error", (err: Error) => {
      log.debug({ err: err.message }, "boot stream ended; reconnecting");
      again();
    });
    call.on("end", again);
  };
  watchBoots();
  kick();

  return {
    assistedUrl: assisted.url,
    assistedPort: assisted.port,
    stats: () => ({ ...stats }),
    kick,
    stop: async () => {
      stopped = true;
      for (const w of watches) w.stop();
      for (const c of Object.values(caches)) c.stop();
      for (const p of pending.values()) clearTimeout(p);
      if (timer) clearTimeout(timer);
      if (debounce) clearTimeout(debounce);
      if (bootRetry) clearTimeout(bootRetry);
      bootCall?.cancel();
      bootClient.close();
      await idle.catch(() => undefined);
      await assisted.close();
    },
  };
}
