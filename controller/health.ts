// The reconciler's HTTP endpoints: /metrics (Prometheus), /healthz (the process is alive and its loop
// ticked recently) and /readyz (Kubernetes is reachable and this replica is either the leader or a
// standby ready to take over). Binds to loopback unless told otherwise: a pod sets the host to
// 0.0.0.0 so the kubelet's probes and Prometheus can reach it.
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as k8s from "@kubernetes/client-node";
import { within } from "../lib/deadline";

export interface Check {
  ok: boolean;
  detail: string;
}

export interface MetricsSource {
  render(): Promise<string>;
  readonly contentType: string;
}

export interface HealthServerOptions {
  /** 0 picks a free port (tests). */
  port: number;
  host?: string;
  metrics: MetricsSource;
  liveness: () => Check;
  readiness: () => Promise<Check>;
}

export interface HealthServer {
  port: number;
  host: string;
  close(): Promise<void>;
}

/** Records loop ticks; healthy while the last tick is younger than maxAgeMs. */
export class Heartbeat {
  private last: number;
  constructor(private readonly maxAgeMs: number, private readonly now: () => number = Date.now) {
    this.last = now();
  }

  beat(): void {
    this.last = this.now();
  }

  ageMs(): number {
    return this.now() - this.last;
  }

  check(): Check {
    const age = this.ageMs();
    return age <= this.maxAgeMs
      ? { ok: true, detail: `loop ticked ${age} ms ago` }
      : { ok: false, detail: `loop has not ticked for ${age} ms (limit ${this.maxAgeMs} ms)` };
  }
}

/** Readiness of the leader-election side: leading, or following with a recent successful observation. */
export interface ElectionState {
  isLeader(): boolean;
  /** True when the last attempt to read/acquire/renew the Lease reached the API server. */
  healthy(): boolean;
}

export function electionCheck(e: ElectionState): Check {
  if (!e.healthy()) return { ok: false, detail: "leader election cannot reach the Lease" };
  return { ok: true, detail: e.isLeader() ? "leader" : "standby" };
}

/** Probes the API server's /version (allowed to every authenticated user) with a deadline. */
export async function kubeReachable(kc: k8s.KubeConfig, timeoutMs = 3_000): Promise<Check> {
  const api = kc.makeApiClient(k8s.VersionApi);
  try {
    return await within(api.getCode().then((v): Check => ({ ok: true, detail: `kube-apiserver ${v.gitVersion}` })), timeoutMs,
      (): Check => ({ ok: false, detail: `kube-apiserver did not answer in ${timeoutMs} ms` }));
  } catch (e) {
    return { ok: false, detail: `kube-apiserver unreachable: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** Combines checks: ok when all are ok; the detail lists each. */
export function allOf(checks: Record<string, Check>): Check {
  const entries = Object.entries(checks);
  return {
    ok: entries.every(([, c]) => c.ok),
    detail: entries.map(([n, c]) => `${c.ok ? "ok" : "FAIL"} ${n}: ${c.detail}`).join("\n"),
  };
}

export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const host = opts.host ?? "127.0.0.1";
  const server = http.createServer((req, res) => {
    void handle(opts, req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    host,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function handle(opts: HealthServerOptions, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  try {
    if (req.method !== "GET" && req.method !== "HEAD") return send(res, 405, "text/plain", "method not allowed\n");
    switch (url.pathname) {
      case "/metrics":
        return send(res, 200, opts.metrics.contentType, await opts.metrics.render());
      case "/healthz":
      case "/livez": {
        const c = opts.liveness();
        return send(res, c.ok ? 200 : 503, "text/plain", `${c.ok ? "ok" : "unhealthy"}\n${c.detail}\n`);
      }
      case "/readyz": {
        const c = await opts.readiness();
        return send(res, c.ok ? 200 : 503, "text/plain", `${c.ok ? "ok" : "not ready"}\n${c.detail}\n`);
      }
      default:
        return send(res, 404, "text/plain", "not found\n");
    }
  } catch (e) {
    send(res, 500, "text/plain", `internal error: ${e instanceof Error ? e.message : String(e)}\n`);
  }
}

function send(res: http.ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { "content-type": contentType, "cache-control": "no-store" });
  res.end(body);
}
