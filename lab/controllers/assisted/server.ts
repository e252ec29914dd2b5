// The assisted-service stand-in's HTTPS endpoint (served with a certificate of the lab CA): the
// discovery ignition of an InfraEnv at the path the real service uses, authorised by a signed
// api_key in the URL, plus lab-only /lab/v1/stats and /healthz. Ignition content is never logged.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as https from "node:https";

export interface AssistedServerOptions {
  port: number;
  certFile: string;
  keyFile: string;
  signingKey: string;
  /** The ignition of the InfraEnv with this id (uid), or undefined if there is none. */
  render: (infraEnvId: string) => Promise<string | undefined>;
  stats: () => object;
  onError: (err: unknown) => void;
}

export interface AssistedServer {
  url: string;
  port: number;
  ignitionUrl(infraEnvId: string): string;
  close(): Promise<void>;
}

const IGNITION_PATH = /^\/api\/assisted-install\/v2\/infra-envs\/([0-9a-f-]{36})\/downloads\/files$/;

export function signInfraEnvId(signingKey: string, infraEnvId: string): string {
  return crypto.createHmac("sha256", signingKey).update(infraEnvId).digest("hex");
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

export async function startAssistedServer(opts: AssistedServerOptions): Promise<AssistedServer> {
  const send = (res: import("node:http").ServerResponse, code: number, type: string, body: string) => {
    res.writeHead(code, { "content-type": type, "content-length": Buffer.byteLength(body) });
    res.end(body);
  };
  const server = https.createServer({ cert: fs.readFileSync(opts.certFile), key: fs.readFileSync(opts.keyFile) }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "https://127.0.0.1");
      if (req.method !== "GET") return send(res, 405, "text/plain", "method not allowed\n");
      if (url.pathname === "/healthz") return send(res, 200, "text/plain", "ok\n");
      if (url.pathname === "/lab/v1/stats") return send(res, 200, "application/json", JSON.stringify(opts.stats()));
      const m = IGNITION_PATH.exec(url.pathname);
      if (!m) return send(res, 404, "application/json", JSON.stringify({ code: "404", reason: "not found" }));
      if (url.searchParams.get("file_name") !== "discovery.ign") {
        return send(res, 400, "application/json", JSON.stringify({ code: "400", reason: "unsupported file_name" }));
      }
      const key = url.searchParams.get("api_key") ?? "";
      if (!safeEqual(key, signInfraEnvId(opts.signingKey, m[1]))) {
        return send(res, 401, "application/json", JSON.stringify({ code: "401", reason: "unauthorized" }));
      }
      const ignition = await opts.render(m[1]);
      if (ignition === undefined) {
        return send(res, 404, "application/json", JSON.stringify({ code: "404", reason: `infra env ${m[1]} not found` }));
      }
      send(res, 200, "application/vnd.coreos.ignition+json", ignition);
    })().catch((err: unknown) => {
      opts.onError(err);
      if (!res.headersSent) send(res, 500, "application/json", JSON.stringify({ code: "500", reason: "internal error" }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as import("node:net").AddressInfo).port;
  const base = `https://127.0.0.1:${port}`;
  return {
    url: base,
    port,
    ignitionUrl: (id) => `${base}/api/assisted-install/v2/infra-envs/${id}/downloads/files?file_name=discovery.ign&api_key=${signInfraEnvId(opts.signingKey, id)}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
