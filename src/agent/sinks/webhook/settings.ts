// Webhook sink settings (config section `webhook`), their cross-field rules (a URL, the variables named), and
// resolution of header values and the signing secret from the environment.
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import type { PluginRulesInput } from "../sink.js";
import { documented } from "../../util/setting-doc.js";
import { SinkConfigError } from "../errors.js";
import { deliverySettings, timeoutSetting } from "../delivery-settings.js";

export const defaultWebhookTimeoutMs = 10_000;
export const defaultWebhookMaxBatchRecords = 500;
export const defaultWebhookMaxBatchBytes = 1024 * 1024;
export const defaultSignatureHeader = "X-Sef-Signature";
export const defaultTimestampHeader = "X-Sef-Timestamp";

/** A header value: a literal string, or `{ "fromEnv": "VAR" }` read from the environment at start-up. */
const headerValueSchema = z.union([z.string(), z.strictObject({ fromEnv: z.string().check(z.minLength(1)) })]);
export type HeaderValue = z.infer<typeof headerValueSchema>;

export const webhookSettingsSchema = z.strictObject({
  url: documented(z.optional(z.url({ protocol: /^https?$/ })), {
    description:
      "Http(s) endpoint receiving POSTs of JSON arrays of records (the `:URL` argument of `--sink webhook:URL` overrides it).",
  }),
  headers: documented(z._default(z.record(z.string().check(z.minLength(1)), headerValueSchema), {}), {
    description:
      '`{"Name": "literal"}` or `{"Name": {"fromEnv": "VAR"}}` (the agent does not start if `VAR` is unset).',
  }),
  signature: documented(
    z.optional(
      z.strictObject({
        secretEnv: documented(z.string().check(z.minLength(1)), {
          description: "Environment variable holding the HMAC secret.",
        }),
        header: documented(z._default(z.string().check(z.minLength(1)), defaultSignatureHeader), {
          description: "Header carrying the signature.",
        }),
        timestampHeader: documented(z._default(z.string().check(z.minLength(1)), defaultTimestampHeader), {
          description: "Header carrying the signed timestamp (Unix seconds).",
        }),
      }),
    ),
    {
      description:
        'Adds the time of sending (Unix seconds) and `sha256=<hex HMAC-SHA256 of "<timestamp>.<exact body>">`, e.g. `{"secretEnv": "SEF_WEBHOOK_SECRET"}`: see src/agent/sinks/webhook/README.md for checking it and refusing replays.',
      defaultText: "none",
    },
  ),
  allowPlainHttp: documented(z._default(z.boolean(), false), {
    description:
      "Sign or send credential headers over plain `http://` (anyone on the path can read and replay them); off: the agent refuses to start.",
  }),
  timeoutMs: timeoutSetting({ default: defaultWebhookTimeoutMs, min: 1, description: "Time limit per request." }),
  maxBatchBytes: documented(z._default(z.number().check(z.int(), z.minimum(1024)), defaultWebhookMaxBatchBytes), {
    description: "Bytes per request; a larger batch is split, a single larger record is dead-lettered.",
  }),
  ...deliverySettings({
    maxBatchRecords: defaultWebhookMaxBatchRecords,
    lingerMs: 0,
    batchDescription: "Records per request; a larger batch is split.",
  }),
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
      throw new SinkConfigError(`webhook header "${name}": environment variable ${value.fromEnv} is not set`);
    }
    out[name] = resolved;
  }
  return out;
}

/** Reads the signing secret; throws naming the variable when it is unset. */
export function resolveSecret(secretEnv: string, env: NodeJS.ProcessEnv): string {
  const secret = env[secretEnv];
  if (secret === undefined || secret === "")
    throw new SinkConfigError(`webhook signature: environment variable ${secretEnv} is not set`);
  return secret;
}

const credentialHeader = /authorization|api-?key|token|secret|signature|password/i;

/** Cross-field rules of a sink in use: a URL (from `webhook:URL` or `webhook.url`), the variables the section names set. */
export function webhookSettingsRules({
  settings: wh,
  inUse,
  argument,
  env,
}: PluginRulesInput<WebhookSettings>): string[] {
  if (!inUse) return [];
  const problems: string[] = [];
  if (argument !== undefined && !/^https?:\/\/[^/\s]+/i.test(argument))
    problems.push(`sinks: webhook:URL needs an http:// or https:// URL (got "${argument}")`);
  if (argument === undefined && wh?.url === undefined)
    problems.push("webhook.url: the webhook sink needs a URL: set webhook.url or use --sink webhook:URL");
  for (const [name, value] of Object.entries(wh?.headers ?? {})) {
    if (typeof value !== "string" && !env[value.fromEnv])
      problems.push(`webhook.headers.${name}: environment variable ${value.fromEnv} is not set`);
  }
  if (wh?.signature && !env[wh.signature.secretEnv])
    problems.push(`webhook.signature.secretEnv: environment variable ${wh.signature.secretEnv} is not set`);
  const plainHttp = /^http:\/\//i.test(argument ?? wh?.url ?? "");
  const exposed = wh ? credentialSettings(wh) : [];
  if (plainHttp && exposed.length > 0 && !wh?.allowPlainHttp)
    problems.push(
      `webhook.url: ${exposed.join(", ")} would travel over plain http:// (readable and replayable on the way): use https://, or set webhook.allowPlainHttp to true`,
    );
  return problems;
}

/** The settings that put a secret on the wire: the signature, `fromEnv` headers and credential-named literal ones. */
function credentialSettings(settings: WebhookSettings): string[] {
  const headers = Object.entries(settings.headers).flatMap(([name, value]) =>
    typeof value !== "string" || credentialHeader.test(name) ? [`webhook.headers.${name}`] : [],
  );
  return [...(settings.signature ? ["webhook.signature"] : []), ...headers];
}

/** The variables of `{ "fromEnv": … }` header values and of the signing secret. */
export function webhookReferencedVariables(section: unknown): string[] {
  const names: string[] = [];
  // Any JSON value: a field of a string, a number or an array reads as undefined.
  const { headers, signature } = (section ?? {}) as { headers?: unknown; signature?: unknown };
  if (typeof headers === "object" && headers !== null) {
    for (const value of Object.values(headers)) {
      const fromEnv = (value as { fromEnv?: unknown } | null)?.fromEnv;
      if (typeof fromEnv === "string") names.push(fromEnv);
    }
  }
  const secretEnv = (signature as { secretEnv?: unknown } | null | undefined)?.secretEnv;
  if (typeof secretEnv === "string") names.push(secretEnv);
  return names;
}

/** Literal header values whose names say they are credentials. */
export function webhookInlineSecrets(settings: WebhookSettings): string[] {
  return Object.entries(settings.headers).flatMap(([name, value]) =>
    typeof value === "string" && credentialHeader.test(name) ? [`webhook.headers.${name}`] : [],
  );
}
