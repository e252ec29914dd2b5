// Typed readers of single environment variables. A bad value is a configuration error that stops the
// process at start-up with the variable's name, never a silent fall-back to a default. An empty value
// counts as unset (manifests often template a variable to "").

export type Env = Readonly<Record<string, string | undefined>>;

/** A variable whose value is wrong; the message names it. */
export class SettingsError extends Error {
  override name = "SettingsError";
}

function raw(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v === "" ? undefined : v;
}

export function optionalString(env: Env, name: string): string | undefined {
  return raw(env, name);
}

export function requiredString(env: Env, name: string, what: string): string {
  const v = raw(env, name);
  if (v === undefined) throw new SettingsError(`${name} is not set: ${what}`);
  return v;
}

/** A whole number of at least `min` (0 or 1), written in decimal digits only. */
export function integer(env: Env, name: string, fallback: number, min: 0 | 1): number {
  const v = raw(env, name);
  if (v === undefined) return fallback;
  return parseInteger(name, v, min);
}

export function optionalInteger(env: Env, name: string, min: 0 | 1): number | undefined {
  const v = raw(env, name);
  return v === undefined ? undefined : parseInteger(name, v, min);
}

function parseInteger(name: string, value: string, min: 0 | 1): number {
  const text = value.trim();
  const kind = min === 0 ? "a non-negative integer" : "a positive integer";
  if (!/^\d+$/.test(text)) throw new SettingsError(`${name}=${JSON.stringify(value)} is not ${kind}`);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new SettingsError(`${name}=${JSON.stringify(value)} is too large`);
  if (n < min) throw new SettingsError(`${name}=${JSON.stringify(value)} must be ${kind}`);
  return n;
}

/** One of `allowed` (exactly as written), else `fallback` when unset. */
export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const v = raw(env, name);
  if (v === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(v)) throw new SettingsError(`${name}=${JSON.stringify(v)} is not one of ${allowed.join(", ")}`);
  return v as T;
}

/** true for 1/true/yes, false for 0/false/no or unset (any case); anything else is an error. */
export function flag(env: Env, name: string): boolean {
  const v = raw(env, name);
  if (v === undefined || /^(0|false|no)$/i.test(v)) return false;
  if (/^(1|true|yes)$/i.test(v)) return true;
  throw new SettingsError(`${name}=${JSON.stringify(v)} is not a boolean (true/false, yes/no, 1/0)`);
}
