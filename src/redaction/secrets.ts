// Which secrets never reach a log line, for every sef process that logs (agent, fleet service): the log-object paths
// blanked out, the patterns removed from free text, and the exact secret values the process was configured with.

/** Paths a logger blanks out wherever they appear in a log object. */
export const redactedPaths: readonly string[] = [
  "connectionString",
  "*.connectionString",
  "*.*.connectionString",
  "token",
  "*.token",
  "accessToken",
  "*.accessToken",
  "authorization",
  "*.authorization",
  "*.headers.authorization",
  "*.headers.Authorization",
  "secret",
  "*.secret",
  "hmacSecret",
  "*.hmacSecret",
  "password",
  "*.password",
];

/** What replaces a secret. */
export const redactionCensor = "[REDACTED]";

const secretPatterns: readonly RegExp[] = [
  /(SharedAccessKey=)[^;"\s]+/gi,
  /(Bearer\s+)[A-Za-z0-9\-._~+/]+=*/gi,
  /("?access_token"?\s*[:=]\s*"?)[^",\s}]+/gi,
  /(sig=)[^&"\s]+/gi,
  /(SharedAccessSignature\s+)[^"\s,}]+/gi,
];

/** Shorter values are not remembered: blanking every occurrence of a short word would garble all text. */
export const minimumSecretLength = 8;

/** The exact secret values of this process (its configuration's and environment's), longest first. */
let secretValues: string[] = [];

/**
 * Remembers exact secret values (a connection string, a client secret, a webhook key) so that `redactSecrets` removes
 * them wherever they appear; values shorter than `minimumSecretLength` characters are ignored. Returns how many are known.
 */
export function rememberSecretValues(values: Iterable<string | undefined>): number {
  const known = new Set(secretValues);
  for (const value of values) if (value !== undefined && value.length >= minimumSecretLength) known.add(value);
  secretValues = [...known].sort((a, b) => b.length - a.length);
  return secretValues.length;
}

/** Forgets the remembered values (tests). */
export function forgetSecretValues(): void {
  secretValues = [];
}

/** Removes secrets from free text: the remembered exact values, then the patterns. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const value of secretValues) out = out.split(value).join(redactionCensor);
  for (const pattern of secretPatterns) out = out.replace(pattern, `$1${redactionCensor}`);
  return out;
}

/**
 * `value` with every string inside it (plain objects and arrays, `maxDepth` levels deep) passed through
 * `redactSecrets`; other objects (an Error, a Date, a Buffer) are left as they are.
 */
export function redactDeep(value: unknown, maxDepth = 8): unknown {
  if (typeof value === "string") return redactSecrets(value);
  if (maxDepth <= 0 || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, maxDepth - 1));
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = redactDeep(item, maxDepth - 1);
  return out;
}

/**
 * The redacting part of a pino logger's options (spread into them; plain values, so this package needs no pino): the
 * paths above blanked, an `err` field reduced to type, redacted message and code, string arguments and the strings of
 * object arguments redacted (a remembered exact value, or a pattern, may sit in any field).
 */
export function redactingLoggerOptions() {
  return {
    redact: { paths: [...redactedPaths], censor: redactionCensor },
    // pino's own `err` serializer would run after the formatter below and turn its result into `{type: "Object"}`.
    serializers: { err: (value: unknown): unknown => value },
    formatters: {
      log: (object: Record<string, unknown>): Record<string, unknown> => {
        const err = object.err;
        if (!(err instanceof Error)) return object;
        return {
          ...object,
          err: { type: err.name, message: redactSecrets(err.message), code: (err as { code?: unknown }).code },
        };
      },
    },
    hooks: {
      logMethod(this: unknown, args: unknown[], method: { apply(thisArg: unknown, args: unknown[]): unknown }): void {
        method.apply(
          this,
          args.map((a) => redactDeep(a)),
        );
      },
    },
  };
}
