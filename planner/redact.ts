// The one text redactor: whatever the program writes where people read it (conditions, events, the
// marked lines of the BMI provider) passes through `redact`, so credentials and the ignition never
// leave in plaintext however an engine, a library or the fulfillment-service quotes them. Pure text.

const MASK = "[redacted]";
/**
 * A run of at least this many characters that also occurs in a given secret is cut. Shorter runs are
 * kept: they say next to nothing about the secret and would cut ordinary words shared with it.
 */
export const MIN_FRAGMENT = 12;
/** A given secret shorter than this is not looked for (an empty "{}" ignition is no secret). */
const MIN_SECRET = 8;

/**
 * `text` without credentials (bearer/basic credentials, JWTs, key=value secrets, a URL's password,
 * data: URLs, ignition-like JSON documents, long opaque strings) and without any run of
 * MIN_FRAGMENT or more characters of one of `secrets`, raw or JSON-escaped (once or twice).
 */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
  return redactPatterns(redactFragments(text, secrets));
}

/** Every form a secret takes when quoted: as is, and JSON-escaped once and twice. */
function quotedForms(secret: string): string[] {
  const once = JSON.stringify(secret).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  return [...new Set([secret, once, twice])];
}

/** Cuts every run of `text` that shares MIN_FRAGMENT or more characters with a secret's quoted forms. */
export function redactFragments(text: string, secrets: readonly (string | undefined)[]): string {
  const forms = secrets.filter((s): s is string => typeof s === "string" && s.length >= MIN_SECRET).flatMap(quotedForms);
  if (forms.length === 0 || text === "") return text;
  const cut = new Uint8Array(text.length);
  const grams = new Set<string>();
  for (const f of forms) {
    if (f.length < MIN_FRAGMENT) {
      // A short secret is only cut whole.
      for (let i = text.indexOf(f); i >= 0; i = text.indexOf(f, i + 1)) cut.fill(1, i, i + f.length);
    } else {
      for (let i = 0; i + MIN_FRAGMENT <= f.length; i++) grams.add(f.slice(i, i + MIN_FRAGMENT));
    }
  }
  if (grams.size > 0) {
    for (let i = 0; i + MIN_FRAGMENT <= text.length; i++) {
      if (grams.has(text.slice(i, i + MIN_FRAGMENT))) cut.fill(1, i, i + MIN_FRAGMENT);
    }
  }
  let out = "";
  for (let i = 0; i < text.length; i++) {
    if (!cut[i]) out += text[i];
    else if (i === 0 || !cut[i - 1]) out += MASK;
  }
  return out;
}

/** A long string that looks like key material rather than a name (names are lower case with hyphens). */
function opaque(s: string): boolean {
  return /[+/=]/.test(s) || (/[A-Z]/.test(s) && /[a-z]/.test(s) && /[0-9]/.test(s)) || /^[0-9a-fA-F]{32,}$/.test(s);
}

/** Credentials recognisable by their shape or by the key they are given under. */
export function redactPatterns(text: string): string {
  return text
    // A JSON document with an ignition's (or a pull secret's) keys, raw or escaped, goes whole.
    .replace(/\{[^{}]*?\\*"(ignition|passwd|storage|systemd|auths)\\*"[\s\S]*\}/g, "[document redacted]")
    .replace(/\b(bearer|basic)\s+(?!\[redacted\])[^\s"',;]+/gi, `$1 ${MASK}`)
    .replace(/\beyJ[A-Za-z0-9_-]{8,}(\.[A-Za-z0-9_-]+)*/g, MASK)
    // The scheme word stays when the value is a bearer/basic credential (already cut above).
    .replace(/\b(token|password|passphrase|secret|authorization|user_?data|ignition|pull_?secret)(\\?["']?\s*[:=]\s*)(?!(?:bearer|basic)\b|\[redacted\])(\\?"(?:[^"\\]|\\.)*?\\?"|'[^']*'|[^\s,;]+)/gi, `$1$2${MASK}`)
    .replace(/(\/\/)[^/\s:@]+:[^/\s@]+@/g, `$1${MASK}@`)
    .replace(/\bdata:[^\s"']+/g, `data:${MASK}`)
    .replace(/[A-Za-z0-9+/_=-]{32,}/g, (s) => (opaque(s) ? MASK : s));
}
