// Settings of the Log Analytics sink (config section `loganalytics`): one zod schema, defaults and units here.
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { streamName as contractStreamName } from "@sef/contract/stream-schema.js";

/** Most bytes of JSON one Logs Ingestion request may carry before compression (the service limit is 1 MB). */
export const serviceMaxRequestBytes = 1_000_000;

export const logAnalyticsSettingsSchema = z.strictObject({
  /** Data collection endpoint, or the DCR's own logs-ingestion endpoint. Must be https://. */
  endpoint: z.string().check(
    z.url(),
    z.refine((value) => value.toLowerCase().startsWith("https://"), { message: "endpoint must be an https:// URL" }),
  ),
  /** Immutable id of the data collection rule (`dcr-…`). */
  ruleId: z.string().check(z.minLength(1)),
  /** Stream declared in the DCR. */
  streamName: z._default(z.string().check(z.minLength(1)), contractStreamName),
  /** `managedIdentity` (ManagedIdentityCredential) or `default` (DefaultAzureCredential). */
  credential: z._default(z.enum(["managedIdentity", "default"]), "managedIdentity"),
  /** Client id of a user-assigned managed identity; the system-assigned identity when absent. */
  managedIdentityClientId: z.optional(z.string().check(z.minLength(1))),
  /** Token audience; change for sovereign clouds (https://monitor.azure.us, https://monitor.azure.cn). */
  audience: z._default(z.string().check(z.url()), "https://monitor.azure.com"),
  /** PEM file of an extra CA trusted for this endpoint only (private CAs, the local peer); public CAs stay trusted. */
  caCertFile: z.optional(z.string().check(z.minLength(1))),
  /** Most bytes of JSON per request before compression (≤ 1,000,000; gzip keeps it under 1 MiB on the wire). */
  maxRequestBytes: z._default(z.number().check(z.int(), z.minimum(1024), z.maximum(serviceMaxRequestBytes)), serviceMaxRequestBytes),
  /** Most records handed to one send (split into as many requests as the size limit needs). */
  maxBatchRecords: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(100_000)), 10_000),
  /** How long the drain loop waits for a fuller batch of non-urgent records, in milliseconds. */
  lingerMs: z._default(z.number().check(z.int(), z.minimum(0)), 1000),
  /** Requests of one send in flight at once. */
  maxConcurrentRequests: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(16)), 2),
  /** Sends (full batches of a backlog) in flight at once; the next is read while earlier ones are answered. 1 = one at a time. */
  maxConcurrentSends: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(8)), 2),
  /** Time limit of one request (token acquisition included), in milliseconds. */
  requestTimeoutMs: z._default(z.number().check(z.int(), z.minimum(100)), 30_000),
  /** Warn when a batch holds a record whose TimeGenerated is older than this (Log Analytics replaces it after 48 h). */
  staleWarningHours: z._default(z.number().check(z.positive()), 36),
});

export type LogAnalyticsSettings = z.infer<typeof logAnalyticsSettingsSchema>;
