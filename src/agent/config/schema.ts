// The agent's configuration: one zod schema covering every section (core settings, one section per sink taken from
// the sink registry, metrics, one section per action taken from the action registry, readiness), parsed once at
// start-up. Unknown keys are errors. Defaults and units of the core settings live here; cross-field rules in rules.ts
// and in each sink's and action's own entry.
// Built with zod/mini (the functional, tree-shakable API): `sef run` loads no classic zod.
import * as z from "zod/mini";
import "../util/zod-locale.js";
import { sinkFactories } from "../sinks/registry.js";
import { metricsServerConfigSchema, readinessConfigSchema } from "../observability/http-server.js";
import { actionEntries, actionEntryList } from "../actions/registry.js";
import { imdsDefaults } from "../imds/client.js";
import { defaultRetryPolicy } from "@sef/retry/policy.js";
import { outboxDefaults } from "../delivery/outbox.js";
import { defaultHeartbeatIntervalMs } from "../observability/heartbeat.js";
import { imdsDiscoverySettingsSchema, defaultImdsDiscoverySettings } from "../imds/discovery/settings.js";
import { platformDataDir } from "./data-dir.js";
import { documented, msSetting, positiveMs } from "../util/setting-doc.js";

const coreShape = {
  imdsUrl: documented(z.optional(z.url({ protocol: /^https?$/ })), {
    description:
      "IMDS base URL; when set, it is used as is and nothing is discovered (nor remembered). Unset: the endpoint is discovered (169.254.169.254, then the DHCP option 245 sources; see src/agent/imds/README.md).",
    defaultText: "(discovered)",
  }),
  imdsDiscovery: documented(z._default(imdsDiscoverySettingsSchema, defaultImdsDiscoverySettings), {
    description: "How the IMDS endpoint is found when `imdsUrl` is unset.",
  }),
  apiVersion: documented(
    z._default(z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}$/, "must look like 2020-07-01")), imdsDefaults.apiVersion),
    {
      description: "Scheduled events api-version (older versions work: missing fields get defaults).",
    },
  ),
  pollIntervalMs: documented(z._default(z.number().check(z.int(), z.minimum(200), z.maximum(60_000)), 1000), {
    description: "Poll period (IMDS allows 5 requests a second, so at least 200).",
  }),
  dataDir: documented(
    z._default(z.string().check(z.minLength(1)), () => platformDataDir()),
    {
      description: "Durable state (`sef.db`), outbox and dead-letter files.",
      defaultText: "`/var/lib/sef` (Windows: `C:\\ProgramData\\sef\\data`)",
    },
  ),
  sinks: documented(
    z._default(z.array(z.string().check(z.minLength(1))).check(z.minLength(1, "at least one sink is needed")), [
      "stdout",
    ]),
    {
      description:
        "Where records go: `stdout`, `jsonl:PATH`, `eventhubs`, `loganalytics`, `webhook[:URL]` (`--sink` is repeatable; `SEF_SINKS` is comma-separated).",
    },
  ),
  logLevel: documented(z._default(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]), "info"), {
    description: "Level of the pino JSON logs on stderr.",
  }),
  shutdownFlushMs: documented(z._default(z.number().check(z.int(), z.minimum(0), z.maximum(60_000)), 5000), {
    description:
      "How long SIGTERM/SIGINT may spend flushing sinks; the process ends within this + 3 s whatever a sink does.",
  }),
  imdsFirstCallTimeoutMs: msSetting(
    imdsDefaults.firstCallTimeoutMs,
    "IMDS total deadline per request until the first answer (the service may take up to 2 minutes to enable).",
  ),
  imdsRequestTimeoutMs: msSetting(
    imdsDefaults.requestTimeoutMs,
    "IMDS total deadline per request after the first answer, from connect to the body's last byte.",
  ),
  imdsMaxBodyBytes: documented(z._default(z.number().check(z.int(), z.minimum(1024)), imdsDefaults.maxBodyBytes), {
    description: "Largest IMDS body accepted; a larger one is a failed poll.",
  }),
  computeRefreshMs: msSetting(
    60 * 60 * 1000,
    "How often the VM identity (`instance/compute`) is re-read (every 30 s while unknown).",
  ),
  gapThresholdMs: documented(z.optional(positiveMs), {
    description: "A longer pause between good polls marks the next records with `ObservationGap`.",
    defaultText: "5 × poll interval, at least 10000",
  }),
  emittedRetentionMs: documented(
    z._default(
      z.number().check(z.int(), z.minimum(7 * 24 * 3600 * 1000, "must be at least 7 days")),
      7 * 24 * 3600 * 1000,
    ),
    {
      description: "How long emitted (EventId, EventStatus) keys are kept after an event ended (at least 7 days).",
    },
  ),
  maxOutboxBytes: documented(
    z._default(z.number().check(z.int(), z.minimum(1024 * 1024)), outboxDefaults.maxOutboxBytes),
    {
      description:
        'Outbox size cap (bytes of JSON, 256 MiB by default); past it the oldest records are dead-lettered ("evicted") and removed: see src/agent/store/README.md.',
    },
  ),
  heartbeatIntervalMs: documented(z._default(z.number().check(z.int(), z.minimum(0)), defaultHeartbeatIntervalMs), {
    description: "`Heartbeat` record period; 0 turns heartbeats (and the goodbye) off.",
  }),
  retry: documented(
    z._default(
      z.strictObject({
        initialDelayMs: msSetting(
          defaultRetryPolicy.initialDelayMs,
          "First retry delay of the shared sink retry policy.",
        ),
        maxDelayMs: msSetting(defaultRetryPolicy.maxDelayMs, "Longest retry delay."),
        multiplier: documented(
          z._default(z.number().check(z.minimum(1), z.maximum(10)), defaultRetryPolicy.multiplier),
          {
            description: "Growth of the delay per retry.",
          },
        ),
      }),
      defaultRetryPolicy,
    ),
    {
      description:
        "The shared sink retry policy: exponential backoff with jitter; a server's retry-after hint wins, clamped to [`initialDelayMs`, `maxDelayMs`] (`Retry-After: 0` waits `initialDelayMs`) and spread over up to half again (a 10 s hint waits 10–15 s, never less than the hint), so a fleet throttled in one second does not retry in one second.",
    },
  ),
  metricsPort: documented(z.optional(z.number().check(z.int(), z.minimum(0), z.maximum(65535))), {
    description: "Overrides `metrics.port`; 0 picks a free port.",
    defaultText: "(unset)",
  }),
  metricsHost: documented(z.optional(z.string().check(z.minLength(1))), {
    description:
      "Overrides `metrics.host` (the Helm chart sets `SEF_METRICS_HOST` to the node's IP from the downward API, `status.hostIP`).",
    defaultText: "(unset)",
  }),
  imdsExtraHeaders: documented(z._default(z.record(z.string(), z.string()), {}), {
    description: "Test-only: extra headers for IMDS requests (the simulator picks a VM by `X-Sef-Sim-Vm`).",
  }),
};

/**
 * Sink sections, one per registered sink and named after its type: validated whenever present (`"stdout": {}` too);
 * required fields are checked for the sinks in use (rules.ts). Their values are read with `sinkSection`.
 */
const sinkShape: Record<string, z.ZodMiniType<unknown>> = Object.fromEntries(
  sinkFactories.map((factory) => [
    factory.section,
    documented(z.optional(factory.settingsSchema as z.ZodMiniType<unknown>), {
      description: factory.settingsDescription,
    }),
  ]),
);

/** Action sections, one per registered action and named after it, each with its own default (or absent = off). */
const actionShape = Object.fromEntries(
  actionEntryList.map((entry) => [
    entry.section,
    documented(entry.settingsSchema, { description: entry.settingsDescription }),
  ]),
) as { [Section in keyof typeof actionEntries]: (typeof actionEntries)[Section]["settingsSchema"] };

const servicesShape = {
  metrics: documented(z._default(metricsServerConfigSchema, metricsServerConfigSchema.parse({})), {
    description: "The `/metrics`, `/healthz`, `/readyz` server.",
  }),
  ...actionShape,
  readiness: documented(z._default(readinessConfigSchema, readinessConfigSchema.parse({})), {
    description: "When `/readyz` reports a sink that delivers nothing while records wait.",
  }),
};

export const agentConfigSchema = z.strictObject({ ...coreShape, ...sinkShape, ...servicesShape });

/** The parsed configuration; a sink's section is read with `sinkSection` (its type is its sink's own). */
export type AgentConfig = z.infer<typeof agentConfigSchema>;

/** The validated section of the action `section` (its default when the configuration has none). */
export function actionSection(config: AgentConfig, section: string): unknown {
  return (config as Record<string, unknown>)[section];
}

/** The validated section of the sink `type`, or undefined when the configuration has none. */
export function sinkSection<Settings = unknown>(config: AgentConfig, type: string): Settings | undefined {
  return (config as Record<string, unknown>)[type] as Settings | undefined;
}
