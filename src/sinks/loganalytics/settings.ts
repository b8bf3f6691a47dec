// Settings of the Log Analytics sink (config section `loganalytics`): one zod schema, defaults and units here.
import { z } from "zod";
import { streamName as contractStreamName } from "../../contract/stream-schema.js";

/** Most bytes of JSON one Logs Ingestion request may carry before compression (the service limit is 1 MB). */
export const serviceMaxRequestBytes = 1_000_000;

export const logAnalyticsSettingsSchema = z
  .object({
    /** Data collection endpoint, or the DCR's own logs-ingestion endpoint. Must be https://. */
    endpoint: z
      .string()
      .url()
      .refine((value) => value.toLowerCase().startsWith("https://"), { message: "endpoint must be an https:// URL" }),
    /** Immutable id of the data collection rule (`dcr-…`). */
    ruleId: z.string().min(1),
    /** Stream declared in the DCR. */
    streamName: z.string().min(1).default(contractStreamName),
    /** `managedIdentity` (ManagedIdentityCredential) or `default` (DefaultAzureCredential). */
    credential: z.enum(["managedIdentity", "default"]).default("managedIdentity"),
    /** Client id of a user-assigned managed identity; the system-assigned identity when absent. */
    managedIdentityClientId: z.string().min(1).optional(),
    /** Token audience; change for sovereign clouds (https://monitor.azure.us, https://monitor.azure.cn). */
    audience: z.string().url().default("https://monitor.azure.com"),
    /** PEM file of an extra CA trusted for this endpoint only (private CAs, the local peer); public CAs stay trusted. */
    caCertFile: z.string().min(1).optional(),
    /** Most bytes of JSON per request before compression (≤ 1,000,000; gzip keeps it under 1 MiB on the wire). */
    maxRequestBytes: z.number().int().min(1024).max(serviceMaxRequestBytes).default(serviceMaxRequestBytes),
    /** Most records handed to one send (split into as many requests as the size limit needs). */
    maxBatchRecords: z.number().int().min(1).max(100_000).default(10_000),
    /** How long the drain loop waits for a fuller batch of non-urgent records, in milliseconds. */
    lingerMs: z.number().int().min(0).default(1000),
    /** Requests of one send in flight at once. */
    maxConcurrentRequests: z.number().int().min(1).max(16).default(2),
    /** Sends (full batches of a backlog) in flight at once; the next is read while earlier ones are answered. 1 = one at a time. */
    maxConcurrentSends: z.number().int().min(1).max(8).default(2),
    /** Time limit of one request (token acquisition included), in milliseconds. */
    requestTimeoutMs: z.number().int().min(100).default(30_000),
    /** Warn when a batch holds a record whose TimeGenerated is older than this (Log Analytics replaces it after 48 h). */
    staleWarningHours: z.number().positive().default(36),
  })
  .strict();

export type LogAnalyticsSettings = z.infer<typeof logAnalyticsSettingsSchema>;
