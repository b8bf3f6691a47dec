// Third-party debug output (`DEBUG=rhea*`, `DEBUG=azure*`, AZURE_LOG_LEVEL) goes into the JSON log at level debug,
// with secrets redacted, instead of raw text on stderr. rhea's payload dumps (frames, raw bytes, messages) carry the
// SAS token as bytes no text redaction can find: those namespaces are always switched off.
import { createRequire } from "node:module";
import { format } from "node:util";
import type { Logger } from "pino";
import { redactSecrets } from "./logger.js";

/** rhea namespaces that print AMQP payloads (the CBS put-token message holds the SAS token). */
export const refusedDebugNamespaces = ["rhea:frames", "rhea:raw", "rhea:message"] as const;

interface DebugModule {
  enable(namespaces: string): void;
  log: (this: { namespace?: string }, ...args: unknown[]) => void;
  inspectOpts?: Record<string, unknown>;
}

/** The DEBUG value with the payload-printing rhea namespaces excluded (debug's `-name` syntax); undefined stays undefined. */
export function safeDebugNamespaces(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === "") return value;
  return [value, ...refusedDebugNamespaces.map((n) => `-${n}`)].join(",");
}

/** Routes the `debug` package (rhea, rhea-promise) and @azure/logger into `logger`. Call before the Azure SDKs load. */
export async function routeDebugOutput(logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const requested = env.DEBUG;
  if (requested && /rhea|\*/.test(requested)) {
    logger.warn(
      { refused: refusedDebugNamespaces },
      "DEBUG: rhea namespaces that print AMQP payloads (SAS tokens) stay off; the others go to the log at level debug",
    );
  }
  env.DEBUG = safeDebugNamespaces(requested);
  const write = (namespace: string | undefined, args: unknown[]): void => {
    logger.debug({ namespace }, redactSecrets(format(...args)));
  };
  try {
    const debug = createRequire(import.meta.url)("debug") as DebugModule;
    if (debug.inspectOpts) {
      debug.inspectOpts.colors = false;
      debug.inspectOpts.hideDate = true;
    }
    debug.log = function (this: { namespace?: string }, ...args: unknown[]) {
      write(this.namespace, args);
    };
    if (env.DEBUG) debug.enable(env.DEBUG);
  } catch (err) {
    logger.debug({ err }, "debug package not found: nothing to route");
  }
  const { AzureLogger } = await import("@azure/logger");
  AzureLogger.log = (...args: unknown[]) => write("azure", args);
}
