// Another address of the test plane's apiserver: a TCP relay on loopback (TLS passes through, so the
// server certificate still matches 127.0.0.1). It can be cut, as a network partition would cut one
// client off, and a kubeconfig can be rewritten to reach the apiserver through it.
import * as fs from "node:fs";
import * as net from "node:net";

export interface Relay {
  port: number;
  /** Drops every connection and refuses new ones. */
  cut(): void;
  close(): Promise<void>;
}

export async function relay(target: { host: string; port: number }): Promise<Relay> {
  const sockets = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((c) => {
    if (cut) {
      c.destroy();
      return;
    }
    const up = net.connect(target.port, target.host);
    for (const s of [c, up]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => s.destroy());
    }
    c.pipe(up).pipe(c);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

/** Writes `file`: the kubeconfig `source` with its loopback server reached through a new relay (mode 0600). */
export async function relayedKubeconfig(source: string, file: string): Promise<Relay> {
  const kubeconfig = fs.readFileSync(source, "utf8");
  const m = /https:\/\/(127\.0\.0\.1|localhost):(\d+)/.exec(kubeconfig);
  if (!m) throw new Error(`${source} names no loopback server`);
  const r = await relay({ host: m[1], port: Number(m[2]) });
  fs.writeFileSync(file, kubeconfig.split(m[0]).join(`https://${m[1]}:${r.port}`), { mode: 0o600 });
  return r;
}
