// Fetches the InfraEnv's discovery ignition (OSAC-2135 §2 step 4). The content is a secret (it
// embeds the assisted-service pull token), so no outcome's message ever includes any of the body.
// Only HTTPS is accepted, redirects are not followed (the URL must be the one the InfraEnv reports),
// and the body is read at most to maxBytes + 1 so the planner can decide about oversize content.
import * as fs from "node:fs";
import * as https from "node:https";
import { USER_DATA_HARD_LIMIT_BYTES } from "../planner/config";
import type { IgnitionFetch } from "../planner/types";

export interface IgnitionFetchOptions {
  /** PEM CA bundle file for the image service; the system roots when neither caFile nor ca is given. */
  caFile?: string;
  /** PEM CA bundle content (instead of caFile). */
  ca?: string | Buffer;
  /** Whole-request bound: connect, headers and body. */
  timeoutMs?: number;
  /** Larger bodies fail with TooLarge; by default the service's user_data limit. */
  maxBytes?: number;
}

export const DEFAULT_IGNITION_TIMEOUT_MS = 10_000;

const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "EPIPE"]);

type Failure = Extract<IgnitionFetch, { ok: false }>;
const fail = (reason: Failure["reason"], message: string): Failure => ({ ok: false, reason, message });

/** Scheme, host and path of the URL: the query may carry a token and is never echoed. */
function describe(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

export async function fetchIgnition(rawUrl: string, opts: IgnitionFetchOptions = {}): Promise<IgnitionFetch> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return fail("NotHttps", "the discovery ignition URL is not a valid URL");
  }
  if (url.protocol !== "https:") return fail("NotHttps", `refusing to fetch the discovery ignition over ${url.protocol.replace(":", "")}: HTTPS only`);
  let ca: string | Buffer | undefined = opts.ca;
  if (!ca && opts.caFile) {
    try {
      ca = fs.readFileSync(opts.caFile);
    } catch (err) {
      return fail("Unreachable", `cannot read the ignition CA file ${opts.caFile}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
    }
  }
  return get(url, ca, opts.timeoutMs ?? DEFAULT_IGNITION_TIMEOUT_MS, opts.maxBytes ?? USER_DATA_HARD_LIMIT_BYTES);
}

function get(url: URL, ca: string | Buffer | undefined, timeoutMs: number, maxBytes: number): Promise<IgnitionFetch> {
  const where = describe(url);
  return new Promise<IgnitionFetch>((resolve) => {
    let settled = false;
    const settle = (r: IgnitionFetch) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(r);
    };
    const req = https.get(url, { ca, headers: { accept: "application/json" } }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.resume();
        return settle(fail("Redirect", `GET ${where} answered ${status} (redirect); redirects are not followed`));
      }
      if (status < 200 || status >= 300) {
        res.resume();
        return settle(fail("HttpError", `GET ${where} answered HTTP ${status}`));
      }
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxBytes) {
          return settle(fail("TooLarge", `the discovery ignition at ${where} exceeds ${maxBytes} bytes (read ${bytes} before stopping)`));
        }
        chunks.push(chunk);
      });
      res.on("end", () => {
        const content = Buffer.concat(chunks).toString("utf8");
        let parsed: unknown;
        try {
          parsed = JSON.parse(content);
        } catch {
          return settle(fail("NotJson", `the discovery ignition at ${where} is not JSON (${bytes} bytes)`));
        }
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
          return settle(fail("NotJson", `the discovery ignition at ${where} is not a JSON object (${bytes} bytes)`));
        }
        settle({ ok: true, content, bytes });
      });
      res.on("error", (err: NodeJS.ErrnoException) => settle(fail("Unreachable", `reading ${where} failed: ${err.code ?? err.message}`)));
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      const code = err.code ?? "";
      const reason = UNREACHABLE_CODES.has(code) ? `${code}` : `${code || "error"}: ${err.message}`;
      settle(fail("Unreachable", `GET ${where} failed: ${reason}`));
    });
    const timer = setTimeout(() => settle(fail("Timeout", `GET ${where} did not complete within ${timeoutMs} ms`)), timeoutMs);
  });
}
