// fetchIgnition against a local HTTPS server with a lab CA: the rules of OSAC-2135 §2 step 4 plus the
// project's hardening (HTTPS only, no redirects, bounded body, timeout, JSON object, no body in messages).
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fetchIgnition } from "../../clients/ignition";
import type { IgnitionFetch } from "../../planner/types";
import { makePki } from "../../lab/controlplane";

const SECRET = "assisted-token-7f3a9c";
const IGNITION = JSON.stringify({ ignition: { version: "3.4.0" }, passwd: { users: [{ name: "core" }] }, token: SECRET });

let dir: string;
let caFile: string;
let server: https.Server;
let base: string;
const sockets = new Set<import("node:stream").Duplex>();

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "bmw-ign-"));
  const pki = makePki(path.join(dir, "pki"));
  caFile = pki.caCrt;
  server = https.createServer({ cert: fs.readFileSync(pki.crt), key: fs.readFileSync(pki.key) }, (req, res) => {
    switch (req.url) {
      case "/ok.ign":
        res.writeHead(200, { "content-type": "application/json" }).end(IGNITION);
        break;
      case "/redirect":
        res.writeHead(302, { location: "/ok.ign" }).end();
        break;
      case "/slow":
        res.writeHead(200);
        res.write("{"); // and never finishes
        break;
      case "/big": {
        res.writeHead(200);
        // 1 MiB of valid JSON-ish content, streamed: the client must stop early.
        const chunk = Buffer.alloc(16 * 1024, "a");
        res.write(`{"token":"${SECRET}","pad":"`);
        for (let i = 0; i < 64; i++) res.write(chunk);
        res.end('"}');
        break;
      }
      case "/garbage":
        res.writeHead(200).end(`<html>${SECRET}</html>`);
        break;
      case "/array":
        res.writeHead(200).end(`["${SECRET}"]`);
        break;
      default:
        res.writeHead(404).end(`not here ${SECRET}`);
    }
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
  fs.rmSync(dir, { recursive: true, force: true });
});

function expectNoBody(r: IgnitionFetch): void {
  expect(r.ok ? "" : r.message).not.toContain(SECRET);
}

it("fetches a JSON ignition over HTTPS trusting the given CA", async () => {
  const r = await fetchIgnition(`${base}/ok.ign`, { caFile });
  expect(r).toEqual({ ok: true, content: IGNITION, bytes: Buffer.byteLength(IGNITION) });
});

it("accepts the CA as content too, and rejects a server it does not trust", async () => {
  expect((await fetchIgnition(`${base}/ok.ign`, { ca: fs.readFileSync(caFile) })).ok).toBe(true);
  const untrusted = await fetchIgnition(`${base}/ok.ign`, {});
  expect(untrusted).toMatchObject({ ok: false, reason: "Unreachable" });
});

it("refuses plain HTTP without connecting", async () => {
  let hits = 0;
  const plain = http.createServer((_req, res) => {
    hits++;
    res.end(IGNITION);
  });
  await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
  try {
    const r = await fetchIgnition(`http://127.0.0.1:${(plain.address() as AddressInfo).port}/ok.ign`, { caFile });
    expect(r).toMatchObject({ ok: false, reason: "NotHttps" });
    expect(hits).toBe(0);
  } finally {
    await new Promise<void>((r) => plain.close(() => r()));
  }
});

it("does not follow redirects", async () => {
  const r = await fetchIgnition(`${base}/redirect`, { caFile });
  expect(r).toMatchObject({ ok: false, reason: "Redirect" });
});

it("times out a server that never finishes the body", async () => {
  const started = Date.now();
  const r = await fetchIgnition(`${base}/slow`, { caFile, timeoutMs: 300 });
  expect(r).toMatchObject({ ok: false, reason: "Timeout" });
  expect(Date.now() - started).toBeLessThan(3_000);
});

it("stops reading past maxBytes and reports TooLarge without the content", async () => {
  const r = await fetchIgnition(`${base}/big`, { caFile, maxBytes: 65_536 });
  expect(r).toMatchObject({ ok: false, reason: "TooLarge" });
  if (!r.ok) {
    expect(r.message).toContain("65536");
    expectNoBody(r);
  }
  // The same body is accepted when the limit allows it (the planner decides about sizes above 64 KiB).
  const big = await fetchIgnition(`${base}/big`, { caFile, maxBytes: 2 * 1024 * 1024 });
  expect(big.ok && big.bytes).toBeGreaterThan(1024 * 1024);
});

it("rejects content that is not a JSON object, without echoing it", async () => {
  for (const p of ["/garbage", "/array"]) {
    const r = await fetchIgnition(`${base}${p}`, { caFile });
    expect(r).toMatchObject({ ok: false, reason: "NotJson" });
    expectNoBody(r);
  }
});

it("reports HTTP errors by status only", async () => {
  const r = await fetchIgnition(`${base}/missing?token=${SECRET}`, { caFile });
  expect(r).toMatchObject({ ok: false, reason: "HttpError" });
  if (!r.ok) expect(r.message).toContain("404");
  expectNoBody(r); // neither the body nor the query string
});

it("reports a refused connection as Unreachable", async () => {
  const probe = http.createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const r = await fetchIgnition(`https://127.0.0.1:${port}/ok.ign`, { caFile });
  expect(r).toMatchObject({ ok: false, reason: "Unreachable" });
  if (!r.ok) expect(r.message).toContain("ECONNREFUSED");
});
