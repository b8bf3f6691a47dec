// Structured JSON logs (pino) with secrets redacted before they are written.
import { pino, type Logger, type DestinationStream } from "pino";

export type { Logger } from "pino";

/** Paths pino blanks out wherever they appear in a log object. */
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

const secretPatterns: readonly RegExp[] = [
  /(SharedAccessKey=)[^;"\s]+/gi,
  /(Bearer\s+)[A-Za-z0-9\-._~+/]+=*/gi,
  /("?access_token"?\s*[:=]\s*"?)[^",\s}]+/gi,
  /(sig=)[^&"\s]+/gi,
];

/** Removes secrets from free text (error messages may quote a connection string or a token). */
export function redactSecrets(text: string): string {
  let out = text;
  for (const pattern of secretPatterns) out = out.replace(pattern, "$1[REDACTED]");
  return out;
}

export interface LoggerOptions {
  level?: string;
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? "info",
      base: { app: "sef" },
      redact: { paths: [...redactedPaths], censor: "[REDACTED]" },
      formatters: {
        log: (object) => {
          const err = (object as { err?: unknown }).err;
          if (err instanceof Error) {
            return { ...object, err: { type: err.name, message: redactSecrets(err.message), code: (err as { code?: unknown }).code } };
          }
          return object;
        },
      },
      hooks: {
        logMethod(args, method) {
          const redacted = args.map((a) => (typeof a === "string" ? redactSecrets(a) : a)) as typeof args;
          method.apply(this, redacted);
        },
      },
    },
    options.destination ?? pino.destination({ dest: 2, sync: true }),
  );
}

/** A logger that discards everything (tests that do not inspect logs). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
