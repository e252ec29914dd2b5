// Structured JSON logs for the reconciler. Secrets (tokens, pull secrets, ignition, user data,
// passphrases) must never reach a log line, so every logged object is walked and values under
// secret-looking keys are replaced, at any depth: pino's own `redact` needs exact paths and cannot
// express "any key named like a secret, wherever it is".
import pino from "pino";

export type Logger = pino.Logger;

export const REDACTED = "[REDACTED]";

/** Key names whose values are secrets. Matched case-insensitively, ignoring `-` and `_`. */
const SECRET_KEY = /(token|pullsecret|userdata|ignition|passphrase|password|secret|authorization|credential|privatekey)/;

/** Keys that look secret but are known safe summaries (e.g. a count or a byte size). */
const SAFE_KEY = /(bytes|count|name|file|path|present|ttl|expiry)$/;

export function isSecretKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[-_]/g, "");
  return SECRET_KEY.test(k) && !SAFE_KEY.test(k);
}

/** Returns a copy of `value` with every secret-looking key's value replaced. Cycles are cut. */
export function redactSecrets(value: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Date) return value;
  if (seen.has(value)) return "[Circular]";
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, seen));
  if (value instanceof Error) {
    // Errors are logged through pino's serializer; keep message and stack, redact own extra fields.
    const out: Record<string, unknown> = { type: value.name, message: value.message, stack: value.stack };
    for (const [k, v] of Object.entries(value)) out[k] = isSecretKey(k) ? REDACTED : redactSecrets(v, seen);
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = isSecretKey(k) && v !== undefined ? REDACTED : redactSecrets(v, seen);
  return out;
}

export interface LoggerOptions {
  /** pino level; default BMW_LOG_LEVEL or "info". */
  level?: string;
  /** Component name carried on every line. */
  name?: string;
  /** Where lines go; default stdout. Tests pass a stream to capture lines. */
  destination?: pino.DestinationStream;
  /** Fields added to every line. */
  base?: Record<string, unknown>;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const options: pino.LoggerOptions = {
    level: opts.level ?? process.env.BMW_LOG_LEVEL ?? "info",
    name: opts.name ?? "baremetal-workers",
    base: { ...(opts.base ?? {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: "msg",
    formatters: {
      level: (label) => ({ level: label }),
      // Runs on the merged object of every call (child bindings are handled below).
      log: (obj) => redactSecrets(obj) as Record<string, unknown>,
    },
    serializers: { err: (e: unknown) => redactSecrets(e) },
  };
  const root = opts.destination ? pino(options, opts.destination) : pino(options);
  // pino does not run formatters on child bindings; children inherit this wrapper (they are
  // prototype-chained to their parent), so bindings at every level are redacted too.
  const rawChild = root.child;
  root.child = function child(this: Logger, bindings: pino.Bindings, childOptions?: pino.ChildLoggerOptions) {
    return Reflect.apply(rawChild, this, [redactSecrets(bindings), childOptions]) as Logger;
  } as unknown as Logger["child"];
  return root;
}
