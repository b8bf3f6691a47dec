// Which secrets never reach a log line, for every sef process that logs (agent, fleet service): the log-object paths
// blanked out, and the patterns removed from free text (error messages may quote a connection string or a token).

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

/** Removes secrets from free text. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const pattern of secretPatterns) out = out.replace(pattern, `$1${redactionCensor}`);
  return out;
}

/**
 * The redacting part of a pino logger's options (spread into them; plain values, so this package needs no pino): the
 * paths above blanked, an `err` field reduced to type, redacted message and code, string arguments redacted.
 */
export function redactingLoggerOptions() {
  return {
    redact: { paths: [...redactedPaths], censor: redactionCensor },
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
          args.map((a) => (typeof a === "string" ? redactSecrets(a) : a)),
        );
      },
    },
  };
}
