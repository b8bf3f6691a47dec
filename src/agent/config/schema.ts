// The agent's configuration: one zod schema covering every section (core settings, sinks, metrics, approval, hooks),
// parsed once at start-up. Unknown keys are errors. Defaults and units live here; cross-field rules in rules.ts.
// Built with zod/mini (the functional, tree-shakable API): `sef run` loads no classic zod.
import * as z from "zod/mini";
import "../util/zod-locale.js";
import { eventHubsSettingsSchema } from "../sinks/eventhubs/settings.js";
import { logAnalyticsSettingsSchema } from "../sinks/loganalytics/settings.js";
import { webhookSettingsSchema } from "../sinks/webhook/settings.js";
import { metricsServerConfigSchema, readinessConfigSchema } from "../observability/http-server.js";
import { approvalPolicySchema } from "../actions/approval-policy.js";
import { hooksConfigSchema } from "../actions/hooks.js";
import { kubernetesSettingsSchema } from "../actions/kubernetes/settings.js";
import { imdsDefaults } from "../imds/client.js";
import { defaultRetryPolicy } from "../util/retry-policy.js";
import { storeDefaults } from "../store/store.js";
import { defaultHeartbeatIntervalMs } from "../observability/heartbeat.js";
import { imdsDiscoverySettingsSchema, defaultImdsDiscoverySettings } from "../imds/discovery/settings.js";
import { platformDataDir } from "./data-dir.js";

const positiveMs = z.number().check(z.int(), z.positive());

export const agentConfigSchema = z.strictObject({
  /** Base URL of IMDS; when unset the endpoint is discovered (169.254.169.254, then DHCP option 245 sources). */
  imdsUrl: z.optional(z.url({ protocol: /^https?$/ })),
  /** How the IMDS endpoint is found when `imdsUrl` is unset. */
  imdsDiscovery: z._default(imdsDiscoverySettingsSchema, defaultImdsDiscoverySettings),
  /** Scheduled events api-version. */
  apiVersion: z._default(z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/, "must look like 2020-07-01")), imdsDefaults.apiVersion),
  /** Poll period in milliseconds (IMDS allows 5 requests a second, so at least 200). */
  pollIntervalMs: z._default(z.number().check(z.int(), z.minimum(200), z.maximum(60_000)), 1000),
  /** Durable state and outbox directory (default: see platformDataDir). */
  dataDir: z._default(z.string().check(z.minLength(1)), () => platformDataDir()),
  /** Sink specs: stdout, jsonl:PATH, eventhubs, loganalytics, webhook. */
  sinks: z._default(z.array(z.string().check(z.minLength(1))).check(z.minLength(1, "at least one sink is needed")), ["stdout"]),
  logLevel: z._default(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]), "info"),
  /** How long SIGTERM/SIGINT may spend flushing sinks before exiting, in milliseconds. */
  shutdownFlushMs: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(60_000)), 5000),
  /** IMDS request timeout until the first answer (the service may take up to 2 minutes to enable). */
  imdsFirstCallTimeoutMs: z._default(positiveMs, imdsDefaults.firstCallTimeoutMs),
  /** IMDS request timeout after the first answer. */
  imdsRequestTimeoutMs: z._default(positiveMs, imdsDefaults.requestTimeoutMs),
  /** Largest IMDS body accepted, in bytes. */
  imdsMaxBodyBytes: z._default(z.number().check(z.int(), z.minimum(1024)), imdsDefaults.maxBodyBytes),
  /** How often instance metadata (VM identity) is re-read, in milliseconds. */
  computeRefreshMs: z._default(positiveMs, 60 * 60 * 1000),
  /** Largest pause between successful polls before records carry ObservationGap, in milliseconds (default: 5 × poll interval, at least 10 s). */
  gapThresholdMs: z.optional(positiveMs),
  /** Emitted (EventId, status) keys are kept this long after the event ended (at least 7 days). */
  emittedRetentionMs: z._default(z.number().check(z.int(), z.minimum(7 * 24 * 3600 * 1000, "must be at least 7 days")), 7 * 24 * 3600 * 1000),
  /** Outbox size cap in bytes of JSON; past it the oldest records are dead-lettered as "store-overflow". */
  maxOutboxBytes: z._default(z.number().check(z.int(), z.minimum(1024 * 1024)), storeDefaults.maxOutboxBytes),
  /** Heartbeat record period in milliseconds; 0 turns heartbeats off. */
  heartbeatIntervalMs: z._default(z.number().check(z.int(), z.minimum(0)), defaultHeartbeatIntervalMs),
  retry: z._default(
    z.strictObject({
      initialDelayMs: z._default(positiveMs, defaultRetryPolicy.initialDelayMs),
      maxDelayMs: z._default(positiveMs, defaultRetryPolicy.maxDelayMs),
      multiplier: z._default(z.number().check(z.minimum(1), z.maximum(10)), defaultRetryPolicy.multiplier),
    }),
    defaultRetryPolicy,
  ),
  /** Overrides `metrics.port` (0 = any free port). */
  metricsPort: z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(65535))),
  /** Test-only: extra headers for IMDS requests (the simulator picks a VM by `X-Sef-Sim-Vm`). */
  imdsExtraHeaders: z._default(z.record(z.string(), z.string()), {}),
  /** Sink sections: validated whenever present; required fields are checked for the sinks in use (rules.ts). */
  eventhubs: z.optional(eventHubsSettingsSchema),
  loganalytics: z.optional(logAnalyticsSettingsSchema),
  webhook: z.optional(webhookSettingsSchema),
  /** The /metrics, /healthz, /readyz server. */
  metrics: z._default(metricsServerConfigSchema, metricsServerConfigSchema.parse({})),
  approval: z._default(approvalPolicySchema, approvalPolicySchema.parse({})),
  hooks: hooksConfigSchema,
  /** The kubernetes action (taint, cordon, drain this VM's node, then approve); absent = off, the client is never loaded. */
  kubernetes: z.optional(kubernetesSettingsSchema),
  /** When /readyz reports a sink that delivers nothing while records wait. */
  readiness: z._default(readinessConfigSchema, readinessConfigSchema.parse({})),
});

export type AgentConfig = z.infer<typeof agentConfigSchema>;
