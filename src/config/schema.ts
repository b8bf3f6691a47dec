// The agent's configuration: one zod schema covering every section (core settings, sinks, metrics, approval, hooks),
// parsed once at start-up. Unknown keys are errors. Defaults and units live here; cross-field rules in rules.ts.
import { z } from "zod";
import { eventHubsSettingsSchema } from "../sinks/eventhubs/settings.js";
import { logAnalyticsSettingsSchema } from "../sinks/loganalytics/settings.js";
import { webhookSettingsSchema } from "../sinks/webhook/settings.js";
import { metricsServerConfigSchema, readinessConfigSchema } from "../observability/http-server.js";
import { approvalPolicySchema } from "../actions/approval-policy.js";
import { hooksConfigSchema } from "../actions/hooks.js";
import { imdsDefaults } from "../imds/client.js";
import { defaultRetryPolicy } from "../util/retry-policy.js";
import { storeDefaults } from "../store/store.js";
import { defaultHeartbeatIntervalMs } from "../observability/heartbeat.js";
import { imdsDiscoverySettingsSchema, defaultImdsDiscoverySettings } from "../imds/discovery/settings.js";

const positiveMs = z.number().int().positive();

export const agentConfigSchema = z
  .object({
    /** Base URL of IMDS; when unset the endpoint is discovered (169.254.169.254, then DHCP option 245 sources). */
    imdsUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** How the IMDS endpoint is found when `imdsUrl` is unset. */
    imdsDiscovery: imdsDiscoverySettingsSchema.default(defaultImdsDiscoverySettings),
    /** Scheduled events api-version. */
    apiVersion: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "must look like 2020-07-01").default(imdsDefaults.apiVersion),
    /** Poll period in milliseconds (IMDS allows 5 requests a second, so at least 200). */
    pollIntervalMs: z.number().int().min(200).max(60_000).default(1000),
    /** Durable state and outbox directory. */
    dataDir: z.string().min(1).default("/var/lib/sef"),
    /** Sink specs: stdout, jsonl:PATH, eventhubs, loganalytics, webhook. */
    sinks: z.array(z.string().min(1)).min(1, "at least one sink is needed").default(["stdout"]),
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    /** How long SIGTERM/SIGINT may spend flushing sinks before exiting, in milliseconds. */
    shutdownFlushMs: z.number().int().min(0).max(60_000).default(5000),
    /** IMDS request timeout until the first answer (the service may take up to 2 minutes to enable). */
    imdsFirstCallTimeoutMs: positiveMs.default(imdsDefaults.firstCallTimeoutMs),
    /** IMDS request timeout after the first answer. */
    imdsRequestTimeoutMs: positiveMs.default(imdsDefaults.requestTimeoutMs),
    /** Largest IMDS body accepted, in bytes. */
    imdsMaxBodyBytes: z.number().int().min(1024).default(imdsDefaults.maxBodyBytes),
    /** How often instance metadata (VM identity) is re-read, in milliseconds. */
    computeRefreshMs: positiveMs.default(60 * 60 * 1000),
    /** Largest pause between successful polls before records carry ObservationGap, in milliseconds (default: 5 × poll interval, at least 10 s). */
    gapThresholdMs: positiveMs.optional(),
    /** Emitted (EventId, status) keys are kept this long after the event ended (at least 7 days). */
    emittedRetentionMs: z.number().int().min(7 * 24 * 3600 * 1000, "must be at least 7 days").default(7 * 24 * 3600 * 1000),
    /** Outbox size cap in bytes of JSON; past it the oldest records are dead-lettered as "store-overflow". */
    maxOutboxBytes: z.number().int().min(1024 * 1024).default(storeDefaults.maxOutboxBytes),
    /** Heartbeat record period in milliseconds; 0 turns heartbeats off. */
    heartbeatIntervalMs: z.number().int().min(0).default(defaultHeartbeatIntervalMs),
    retry: z
      .object({
        initialDelayMs: positiveMs.default(defaultRetryPolicy.initialDelayMs),
        maxDelayMs: positiveMs.default(defaultRetryPolicy.maxDelayMs),
        multiplier: z.number().min(1).max(10).default(defaultRetryPolicy.multiplier),
      })
      .strict()
      .default(defaultRetryPolicy),
    /** Overrides `metrics.port` (0 = any free port). */
    metricsPort: z.number().int().min(0).max(65535).optional(),
    /** Test-only: extra headers for IMDS requests (the simulator picks a VM by `X-Sef-Sim-Vm`). */
    imdsExtraHeaders: z.record(z.string(), z.string()).default({}),
    /** Sink sections: validated whenever present; required fields are checked for the sinks in use (rules.ts). */
    eventhubs: eventHubsSettingsSchema.optional(),
    loganalytics: logAnalyticsSettingsSchema.optional(),
    webhook: webhookSettingsSchema.optional(),
    /** The /metrics, /healthz, /readyz server. */
    metrics: metricsServerConfigSchema.default(metricsServerConfigSchema.parse({})),
    approval: approvalPolicySchema.default(approvalPolicySchema.parse({})),
    hooks: hooksConfigSchema,
    /** When /readyz reports a sink that delivers nothing while records wait. */
    readiness: readinessConfigSchema.default(readinessConfigSchema.parse({})),
  })
  .strict();

export type AgentConfig = z.infer<typeof agentConfigSchema>;
