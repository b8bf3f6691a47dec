// Settings of the Log Analytics sink (config section `loganalytics`): one zod schema, defaults and units, and its
// cross-field rules (the DCR's id and stream name).
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { documented } from "../../util/setting-doc.js";
import type { PluginRulesInput } from "../sink.js";
import { concurrencySetting, deliverySettings, timeoutSetting } from "../delivery-settings.js";
import { streamName as contractStreamName } from "@sef/contract/stream-schema.js";

/** Most bytes of JSON one Logs Ingestion request may carry before compression (the service limit is 1 MB). */
export const serviceMaxRequestBytes = 1_000_000;

export const logAnalyticsSettingsSchema = z.strictObject({
  endpoint: documented(
    z.string().check(
      z.url(),
      z.refine((value) => value.toLowerCase().startsWith("https://"), { message: "endpoint must be an https:// URL" }),
    ),
    { description: "Data collection endpoint, or the rule's logs-ingestion endpoint (`https://`)." },
  ),
  ruleId: documented(z.string().check(z.minLength(1)), {
    description: "The data collection rule's immutable id (`dcr-…`).",
  }),
  streamName: documented(z._default(z.string().check(z.minLength(1)), contractStreamName), {
    description: "Stream declared in the rule.",
  }),
  credential: documented(z._default(z.enum(["managedIdentity", "default"]), "managedIdentity"), {
    description: "`managedIdentity` (ManagedIdentityCredential) or `default` (DefaultAzureCredential).",
  }),
  managedIdentityClientId: documented(z.optional(z.string().check(z.minLength(1))), {
    description: "Client id of a user-assigned identity.",
    defaultText: "(system-assigned)",
  }),
  audience: documented(z._default(z.string().check(z.url()), "https://monitor.azure.com"), {
    description: "Token audience (`https://monitor.azure.us`, `https://monitor.azure.cn` for sovereign clouds).",
  }),
  caCertFile: documented(z.optional(z.string().check(z.minLength(1))), {
    description: "PEM of an extra CA trusted for this endpoint only (public CAs stay trusted).",
  }),
  maxRequestBytes: documented(
    z._default(z.number().check(z.int(), z.minimum(1024), z.maximum(serviceMaxRequestBytes)), serviceMaxRequestBytes),
    { description: "JSON bytes per request before gzip (the service limit; on the wire it stays ≤ 1 MiB)." },
  ),
  ...deliverySettings({
    maxBatchRecords: 10_000,
    lingerMs: 1000,
    batchDescription: "Records per send, split into as many requests as needed.",
  }),
  maxConcurrentRequests: concurrencySetting({
    default: 2,
    max: 16,
    unit: "requests",
    description: "Requests of one send in flight at once.",
  }),
  maxConcurrentSends: concurrencySetting({
    default: 2,
    max: 8,
    unit: "sends",
    description:
      "Sends in flight at once while a backlog fills whole batches of `maxBatchRecords` (the next batch is read from the outbox and sent while the previous one is answered; 1 = one at a time).",
  }),
  requestTimeoutMs: timeoutSetting({
    default: 30_000,
    min: 100,
    description: "Time limit per request, token included.",
  }),
  staleWarningHours: documented(z._default(z.number().check(z.positive()), 36), {
    description:
      "Warn (log and metric) when an undelivered record gets this old: Log Analytics replaces a `TimeGenerated` older than 2 days with the arrival time.",
  }),
});

export type LogAnalyticsSettings = z.infer<typeof logAnalyticsSettingsSchema>;

const ruleIdPattern = /^dcr-[0-9a-f]{32}$/i;

/** Cross-field rules of a present section: the DCR's immutable id, a custom stream. */
export function logAnalyticsSettingsRules({ settings: la }: PluginRulesInput<LogAnalyticsSettings>): string[] {
  if (la === undefined) return [];
  const problems: string[] = [];
  if (!ruleIdPattern.test(la.ruleId))
    problems.push(`loganalytics.ruleId: must be the DCR's immutable id: "dcr-" followed by 32 hex digits`);
  if (!la.streamName.startsWith("Custom-"))
    problems.push(`loganalytics.streamName: must start with "Custom-" (got "${la.streamName}")`);
  return problems;
}
