// Webhook sink settings (config section `webhook`) and resolution of header values and the signing secret from the environment.
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { documented } from "../../util/setting-doc.js";

export const defaultWebhookTimeoutMs = 10_000;
export const defaultWebhookMaxBatchRecords = 500;
export const defaultWebhookMaxBatchBytes = 1024 * 1024;
export const defaultSignatureHeader = "X-Sef-Signature";

/** A header value: a literal string, or `{ "fromEnv": "VAR" }` read from the environment at start-up. */
const headerValueSchema = z.union([z.string(), z.strictObject({ fromEnv: z.string().check(z.minLength(1)) })]);
export type HeaderValue = z.infer<typeof headerValueSchema>;

export const webhookSettingsSchema = z.strictObject({
  url: documented(z.optional(z.url({ protocol: /^https?$/ })), { description: "Http(s) endpoint receiving POSTs of JSON arrays of records (the `:URL` argument of `--sink webhook:URL` overrides it)." }),
  headers: documented(z._default(z.record(z.string().check(z.minLength(1)), headerValueSchema), {}), { description: "`{\"Name\": \"literal\"}` or `{\"Name\": {\"fromEnv\": \"VAR\"}}` (the agent does not start if `VAR` is unset)." }),
  signature: documented(
    z.optional(
      z.strictObject({
        secretEnv: documented(z.string().check(z.minLength(1)), { description: "Environment variable holding the HMAC secret." }),
        header: documented(z._default(z.string().check(z.minLength(1)), defaultSignatureHeader), { description: "Header carrying the signature." }),
      }),
    ),
    { description: "Adds `sha256=<hex HMAC-SHA256 of the exact body>`, e.g. `{\"secretEnv\": \"SEF_WEBHOOK_SECRET\", \"header\": \"X-Sef-Signature\"}`.", defaultText: "none" },
  ),
  timeoutMs: documented(z._default(z.number().check(z.int(), z.positive()), defaultWebhookTimeoutMs), { description: "Time limit per request." }),
  maxBatchRecords: documented(z._default(z.number().check(z.int(), z.positive()), defaultWebhookMaxBatchRecords), { description: "Records per request; a larger batch is split.", unit: "records" }),
  maxBatchBytes: documented(z._default(z.number().check(z.int(), z.minimum(1024)), defaultWebhookMaxBatchBytes), { description: "Bytes per request; a larger batch is split, a single larger record is dead-lettered." }),
  lingerMs: documented(z._default(z.number().check(z.int(), z.nonnegative()), 0), { description: "Wait for more records before sending a non-urgent batch." }),
});
export type WebhookSettings = z.infer<typeof webhookSettingsSchema>;

/**
 * Resolves header values against `env`. Throws naming the header and the variable (never a value) when a variable is unset.
 */
export function resolveHeaders(headers: Record<string, HeaderValue>, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === "string") {
      out[name] = value;
      continue;
    }
    const resolved = env[value.fromEnv];
    if (resolved === undefined || resolved === "") {
      throw new Error(`webhook header "${name}": environment variable ${value.fromEnv} is not set`);
    }
    out[name] = resolved;
  }
  return out;
}

/** Reads the signing secret; throws naming the variable when it is unset. */
export function resolveSecret(secretEnv: string, env: NodeJS.ProcessEnv): string {
  const secret = env[secretEnv];
  if (secret === undefined || secret === "") throw new Error(`webhook signature: environment variable ${secretEnv} is not set`);
  return secret;
}
