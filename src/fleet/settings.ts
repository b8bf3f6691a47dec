// `sef fleet` configuration: one zod schema parsed once at start (Event Hubs source, Blob checkpoints, targets,
// rules). Secrets (webhook URLs, routing keys, connection strings) come from environment variables named here.
import * as z from "zod/mini";
import "./zod-locale.js";
import { eventHubsConnectionSchema } from "./eventhubs-source.js";
import { defaultPartitionBounds } from "./partition-bounds.js";

const positiveInt = z.number().check(z.int(), z.minimum(1));

const envName = z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name"));

const targetSchema = z
  .strictObject({
    name: z.string().check(z.minLength(1)),
    type: z.enum(["teams", "slack", "pagerduty", "webhook"]),
    /** Environment variable holding the target URL (a webhook URL is a secret). */
    urlEnv: z.optional(envName),
    /** The URL in the file (PagerDuty's public endpoint, or a test peer); prefer `urlEnv` for secret URLs. */
    url: z.optional(z.url({ protocol: /^https?$/ })),
    /** PagerDuty: environment variable holding the routing (integration) key. */
    routingKeyEnv: z.optional(envName),
    /** Generic webhook: environment variable holding the HMAC secret that signs bodies. */
    hmacSecretEnv: z.optional(envName),
    /** Requests in flight at once to this target, per instance (default: see `sendsInFlightFor`). */
    maxConcurrentSends: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(256))),
  })
  .check(
    z.refine((t) => t.url !== undefined || t.urlEnv !== undefined || t.type === "pagerduty", {
      message: "needs url or urlEnv",
    }),
    z.refine((t) => t.type !== "pagerduty" || t.routingKeyEnv !== undefined, {
      message: "pagerduty needs routingKeyEnv",
    }),
  );

const ruleSchema = z.strictObject({
  name: z.string().check(z.minLength(1)),
  targets: z.array(z.string().check(z.minLength(1))).check(z.minLength(1)),
  eventTypes: z.optional(z.array(z.string())),
  eventSources: z.optional(z.array(z.string())),
  vmNamePatterns: z.optional(z.array(z.string())),
  scaleSetPatterns: z.optional(z.array(z.string())),
  resourceGroups: z.optional(z.array(z.string())),
  /** Resource tags from the records, `{name: glob}`: one reporting VM must carry them all. */
  tags: z.optional(z.record(z.string().check(z.minLength(1)), z.string())),
  noticeWithinSeconds: z.optional(z.number().check(z.int(), z.minimum(0))),
  quietHours: z.optional(
    z.strictObject({
      start: z.string().check(z.regex(/^\d\d:\d\d$/)),
      end: z.string().check(z.regex(/^\d\d:\d\d$/)),
      timeZone: z._default(z.string(), "UTC"),
    }),
  ),
});

export const fleetSettingsSchema = z
  .strictObject({
    eventHubs: z.strictObject({
      consumerGroup: z._default(z.string().check(z.minLength(1)), "$Default"),
      /** Where a partition with no checkpoint starts: the oldest retained record (nothing missed) or new ones only. */
      startPosition: z._default(z.enum(["earliest", "latest"]), "earliest"),
      /** How to reach the hub as a consumer: namespace + identity, or a connection string (eventhubs-source.ts). */
      connection: eventHubsConnectionSchema,
    }),
    checkpoints: z._default(
      z.strictObject({
        /** `https://ACCOUNT.blob.core.windows.net` (managed identity); or use `connectionStringEnv`. */
        blobServiceUrl: z.optional(z.string()),
        connectionStringEnv: z._default(envName, "SEF_FLEET_STORAGE_CONNECTION_STRING"),
        containerName: z._default(z.string().check(z.minLength(3)), "sef-fleet"),
      }),
      { connectionStringEnv: "SEF_FLEET_STORAGE_CONNECTION_STRING", containerName: "sef-fleet" },
    ),
    targets: z.array(targetSchema).check(z.minLength(1)),
    rules: z.array(ruleSchema).check(z.minLength(1)),
    /** The SDK's load balancing: how often instances re-balance, and when an instance's silent claim expires. */
    loadBalancing: z._default(
      z.strictObject({
        updateIntervalMs: z._default(z.number().check(z.int(), z.minimum(100)), 10_000),
        ownershipExpirationMs: z._default(z.number().check(z.int(), z.minimum(500)), 60_000),
      }),
      { updateIntervalMs: 10_000, ownershipExpirationMs: 60_000 },
    ),
    /** Shortest time between two updates of one fleet event to one target. */
    updateIntervalMs: z._default(z.number().check(z.int(), z.minimum(0)), 30_000),
    /** How often owned partitions re-plan (notice windows reached, quiet hours over). */
    tickMs: z._default(z.number().check(z.int(), z.minimum(100)), 5_000),
    /** Deadline of one notification request. */
    requestTimeoutMs: z._default(z.number().check(z.int(), z.minimum(100)), 10_000),
    /**
     * Requests in flight at once to one PagerDuty or webhook target, per instance (the rest queue; their claims wait in
     * the state). Chat targets default to one (see `sendsInFlightFor`); a target's own `maxConcurrentSends` overrides.
     */
    maxConcurrentSendsPerTarget: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(256)), 4),
    /** Backoff between notification attempts, bounded; a target's Retry-After is clamped into [min, max]. */
    retry: z._default(
      z.strictObject({
        minDelayMs: z._default(z.number().check(z.int(), z.minimum(1)), 500),
        maxDelayMs: z._default(z.number().check(z.int(), z.minimum(1)), 60_000),
        giveUpAfterMs: z._default(z.number().check(z.int(), z.minimum(1)), 15 * 60_000),
      }),
      { minDelayMs: 500, maxDelayMs: 60_000, giveUpAfterMs: 15 * 60_000 },
    ),
    /** An event that ended before any notification went out is still reported (trigger, then resolve) within this time. */
    lateNoticeMs: z._default(z.number().check(z.int(), z.minimum(0)), 3600_000),
    /** Ended fleet events are remembered this long (late records then neither re-page nor reopen them). */
    retainEndedMs: z._default(z.number().check(z.int(), z.minimum(60_000)), 7 * 24 * 3600_000),
    /** What one partition takes in from records (partition-bounds.ts); records past a bound are dropped and counted. */
    bounds: z._default(
      z.strictObject({
        maxVmsPerEvent: z._default(positiveInt, defaultPartitionBounds.maxVmsPerEvent),
        maxEventsPerPartition: z._default(positiveInt, defaultPartitionBounds.maxEventsPerPartition),
        newEventsPerReporterPerMinute: z._default(positiveInt, defaultPartitionBounds.newEventsPerReporterPerMinute),
        newEventsPerPartitionPerMinute: z._default(positiveInt, defaultPartitionBounds.newEventsPerPartitionPerMinute),
        reporterKnownAfterMs: z._default(
          z.number().check(z.int(), z.minimum(0)),
          defaultPartitionBounds.reporterKnownAfterMs,
        ),
        maxClockSkewMs: z._default(z.number().check(z.int(), z.minimum(0)), defaultPartitionBounds.maxClockSkewMs),
        retainOpenMs: z._default(z.number().check(z.int(), z.minimum(60_000)), defaultPartitionBounds.retainOpenMs),
      }),
      { ...defaultPartitionBounds },
    ),
    metrics: z._default(
      z.strictObject({
        host: z._default(z.string(), "0.0.0.0"),
        port: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(65535)), 9465),
      }),
      { host: "0.0.0.0", port: 9465 },
    ),
    logLevel: z._default(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]), "info"),
  })
  .check(
    z.superRefine((s, ctx) => {
      const names = new Set(s.targets.map((t) => t.name));
      s.rules.forEach((rule, i) =>
        rule.targets.forEach((t, j) => {
          if (!names.has(t))
            ctx.addIssue({ code: "custom", path: ["rules", i, "targets", j], message: `no target named "${t}"` });
        }),
      );
    }),
  );

export type FleetSettings = z.infer<typeof fleetSettingsSchema>;
export type TargetSettings = FleetSettings["targets"][number];

/**
 * How many requests one instance keeps in flight to a target. Slack and Teams webhooks take about a message a second
 * and carry no idempotency key, so a request in flight when an instance dies can only be sent again blind: one at a
 * time costs them nothing and leaves at most one notification per chat target in doubt. PagerDuty (`dedup_key`) and
 * the signed webhook (`Idempotency-Key`) merge a repeat, so they take `maxConcurrentSendsPerTarget`.
 */
export function sendsInFlightFor(
  target: TargetSettings,
  settings: Pick<FleetSettings, "maxConcurrentSendsPerTarget">,
): number {
  if (target.maxConcurrentSends !== undefined) return target.maxConcurrentSends;
  return target.type === "slack" || target.type === "teams" ? 1 : settings.maxConcurrentSendsPerTarget;
}
