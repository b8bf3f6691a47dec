// `sef fleet` configuration: one zod schema parsed once at start (Event Hubs source, Blob checkpoints, targets,
// rules). Secrets (webhook URLs, routing keys, connection strings) come from environment variables named here.
import { z } from "zod";
import { eventHubsSettingsSchema } from "../sinks/eventhubs/index.js";

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name");

const targetSchema = z
  .object({
    name: z.string().min(1),
    type: z.enum(["teams", "slack", "pagerduty", "webhook"]),
    /** Environment variable holding the target URL (a webhook URL is a secret). */
    urlEnv: envName.optional(),
    /** The URL in the file (PagerDuty's public endpoint, or a test peer); prefer `urlEnv` for secret URLs. */
    url: z.url({ protocol: /^https?$/ }).optional(),
    /** PagerDuty: environment variable holding the routing (integration) key. */
    routingKeyEnv: envName.optional(),
    /** Generic webhook: environment variable holding the HMAC secret that signs bodies. */
    hmacSecretEnv: envName.optional(),
  })
  .strict()
  .refine((t) => t.url !== undefined || t.urlEnv !== undefined || t.type === "pagerduty", { message: "needs url or urlEnv" })
  .refine((t) => t.type !== "pagerduty" || t.routingKeyEnv !== undefined, { message: "pagerduty needs routingKeyEnv" });

const ruleSchema = z
  .object({
    name: z.string().min(1),
    targets: z.array(z.string().min(1)).min(1),
    eventTypes: z.array(z.string()).optional(),
    eventSources: z.array(z.string()).optional(),
    vmNamePatterns: z.array(z.string()).optional(),
    scaleSetPatterns: z.array(z.string()).optional(),
    resourceGroups: z.array(z.string()).optional(),
    /** Resource tags from the records, `{name: glob}`: one reporting VM must carry them all. */
    tags: z.record(z.string().min(1), z.string()).optional(),
    noticeWithinSeconds: z.number().int().min(0).optional(),
    quietHours: z
      .object({ start: z.string().regex(/^\d\d:\d\d$/), end: z.string().regex(/^\d\d:\d\d$/), timeZone: z.string().default("UTC") })
      .strict()
      .optional(),
  })
  .strict();

export const fleetSettingsSchema = z
  .object({
    eventHubs: z
      .object({
        consumerGroup: z.string().min(1).default("$Default"),
        /** Where a partition with no checkpoint starts: the oldest retained record (nothing missed) or new ones only. */
        startPosition: z.enum(["earliest", "latest"]).default("earliest"),
        /** How to reach the hub: the Event Hubs sink's own settings (namespace + identity, or a connection string). */
        connection: eventHubsSettingsSchema,
      })
      .strict(),
    checkpoints: z
      .object({
        /** `https://ACCOUNT.blob.core.windows.net` (managed identity); or use `connectionStringEnv`. */
        blobServiceUrl: z.string().optional(),
        connectionStringEnv: envName.default("SEF_FLEET_STORAGE_CONNECTION_STRING"),
        containerName: z.string().min(3).default("sef-fleet"),
      })
      .strict()
      .default({ connectionStringEnv: "SEF_FLEET_STORAGE_CONNECTION_STRING", containerName: "sef-fleet" }),
    targets: z.array(targetSchema).min(1),
    rules: z.array(ruleSchema).min(1),
    /** The SDK's load balancing: how often instances re-balance, and when an instance's silent claim expires. */
    loadBalancing: z
      .object({ updateIntervalMs: z.number().int().min(100).default(10_000), ownershipExpirationMs: z.number().int().min(500).default(60_000) })
      .strict()
      .default({ updateIntervalMs: 10_000, ownershipExpirationMs: 60_000 }),
    /** Shortest time between two updates of one fleet event to one target. */
    updateIntervalMs: z.number().int().min(0).default(30_000),
    /** How often owned partitions re-plan (notice windows reached, quiet hours over). */
    tickMs: z.number().int().min(100).default(5_000),
    /** Deadline of one notification request. */
    requestTimeoutMs: z.number().int().min(100).default(10_000),
    /** Requests in flight at once to one target, per instance (the rest queue; their claims wait in the state). */
    maxConcurrentSendsPerTarget: z.number().int().min(1).max(256).default(4),
    /** Backoff between notification attempts, bounded; a target's Retry-After is clamped into [min, max]. */
    retry: z
      .object({ minDelayMs: z.number().int().min(1).default(500), maxDelayMs: z.number().int().min(1).default(60_000), giveUpAfterMs: z.number().int().min(1).default(15 * 60_000) })
      .strict()
      .default({ minDelayMs: 500, maxDelayMs: 60_000, giveUpAfterMs: 15 * 60_000 }),
    /** An event that ended before any notification went out is still reported (trigger, then resolve) within this time. */
    lateNoticeMs: z.number().int().min(0).default(3600_000),
    /** Ended fleet events are remembered this long (late records then neither re-page nor reopen them). */
    retainEndedMs: z.number().int().min(60_000).default(7 * 24 * 3600_000),
    metrics: z
      .object({ host: z.string().default("0.0.0.0"), port: z.number().int().min(0).max(65535).default(9465) })
      .strict()
      .default({ host: "0.0.0.0", port: 9465 }),
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  })
  .strict()
  .superRefine((s, ctx) => {
    const names = new Set(s.targets.map((t) => t.name));
    s.rules.forEach((rule, i) =>
      rule.targets.forEach((t, j) => {
        if (!names.has(t)) ctx.addIssue({ code: "custom", path: ["rules", i, "targets", j], message: `no target named "${t}"` });
      }),
    );
  });

export type FleetSettings = z.infer<typeof fleetSettingsSchema>;
export type TargetSettings = FleetSettings["targets"][number];
