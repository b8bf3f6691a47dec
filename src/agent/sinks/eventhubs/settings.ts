// Settings of the Event Hubs sink (config section `eventhubs`): one zod schema with every default, plus the
// resolution of where the credentials come from. Pure logic (reads only the environment object it is given).
import * as z from "zod/mini";
import "../../util/zod-locale.js";

export const defaultConnectionStringEnv = "SEF_EVENTHUBS_CONNECTION_STRING";
export const partitionKeyFields = ["EventId", "VmId", "RecordId", "none"] as const;
export type PartitionKeyField = (typeof partitionKeyFields)[number];
export const partitionRoutings = ["key", "hash"] as const;
export type PartitionRouting = (typeof partitionRoutings)[number];

export const eventHubsSettingsSchema = z
  .strictObject({
    /** A SAS connection string in the config file (prefer `connectionStringEnv`: keeps the secret out of files). */
    connectionString: z.optional(z.string().check(z.minLength(1))),
    /** Environment variable holding the connection string. */
    connectionStringEnv: z._default(z.string().check(z.minLength(1)), defaultConnectionStringEnv),
    /** `<namespace>.servicebus.windows.net`: selects Entra ID auth (managed identity or the default chain). */
    fullyQualifiedNamespace: z.optional(z.string().check(z.minLength(1))),
    /** The event hub; required with `fullyQualifiedNamespace`, optional when the connection string has EntityPath. */
    eventHubName: z.optional(z.string().check(z.minLength(1))),
    /** Entra ID credential for `fullyQualifiedNamespace`. */
    credential: z._default(z.enum(["managedIdentity", "default"]), "managedIdentity"),
    /** Client id of a user-assigned managed identity (system-assigned when absent). */
    managedIdentityClientId: z.optional(z.string().check(z.minLength(1))),
    /** Where to connect instead of the namespace host (`amqps://host:port`): private endpoints, local peers. */
    customEndpointAddress: z.optional(z.string().check(z.url())),
    /** Record field used as partition key, so one event's transitions stay in order on one partition. */
    partitionKeyField: z._default(z.enum(partitionKeyFields), "EventId"),
    /**
     * `key`: every batch carries the partition key and the service picks the partition (consumers see `partitionKey`).
     * `hash`: the sink maps the same key to the partition the service would choose and sends whole-partition batches:
     * identical placement and per-key order, far fewer round trips when a backlog holds many keys; events carry no
     * `partitionKey` annotation.
     */
    partitionRouting: z._default(z.enum(partitionRoutings), "key"),
    /** Most records handed to one send. */
    maxBatchRecords: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(100_000)), 2000),
    /** How long the drain loop waits for more records before a non-urgent send, in ms. */
    lingerMs: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(60_000)), 100),
    /** Event batches of one send that may be in flight at once (only batches with different partition keys). */
    maxConcurrentBatches: z._default(z.number().check(z.int(), z.minimum(1), z.maximum(256)), 128),
    /** Retries the SDK makes inside one send (exponential backoff), before the drain loop's own backoff. */
    maxRetries: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(20)), 3),
    /** First SDK retry delay, in ms. */
    retryDelayMs: z._default(z.number().check(z.int(), z.minimum(1)), 800),
    /** Cap of the SDK retry delay, in ms. */
    maxRetryDelayMs: z._default(z.number().check(z.int(), z.minimum(1)), 10_000),
    /**
     * Close the AMQP connection after this many ms without a send, and reopen it for the next record (heartbeats
     * included): a namespace allows 5,000 connections (Standard), so a fleet must not hold one per VM forever.
     * 0 keeps the connection open until shutdown.
     */
    idleCloseMs: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(3_600_000)), 30_000),
    /** Time limit of one SDK attempt (link setup + send + disposition), in ms. */
    tryTimeoutMs: z._default(z.number().check(z.int(), z.minimum(1000)), 30_000),
  })
  .check(
    z.refine((s) => !(s.connectionString && s.fullyQualifiedNamespace), {
      message: "set either connectionString or fullyQualifiedNamespace, not both",
    }),
    z.refine((s) => !s.fullyQualifiedNamespace || s.eventHubName, {
      message: "eventHubName is required with fullyQualifiedNamespace",
      path: ["eventHubName"],
    }),
  );

export type EventHubsSettings = z.infer<typeof eventHubsSettingsSchema>;

/** Where the sink's credentials come from, decided once at start-up. */
export type EventHubsAuth =
  | { readonly kind: "connectionString"; readonly connectionString: string; readonly eventHubName: string | undefined; readonly source: string }
  | {
      readonly kind: "tokenCredential";
      readonly fullyQualifiedNamespace: string;
      readonly eventHubName: string;
      readonly credential: "managedIdentity" | "default";
      readonly managedIdentityClientId: string | undefined;
    };

/**
 * `fullyQualifiedNamespace` → Entra ID; else the config's `connectionString`; else the environment variable named by
 * `connectionStringEnv`. Throws (without quoting any secret) when none is available.
 */
export function resolveEventHubsAuth(settings: EventHubsSettings, env: NodeJS.ProcessEnv): EventHubsAuth {
  if (settings.fullyQualifiedNamespace) {
    return {
      kind: "tokenCredential",
      fullyQualifiedNamespace: settings.fullyQualifiedNamespace,
      eventHubName: settings.eventHubName ?? "",
      credential: settings.credential,
      managedIdentityClientId: settings.managedIdentityClientId,
    };
  }
  if (settings.connectionString) {
    return { kind: "connectionString", connectionString: settings.connectionString, eventHubName: settings.eventHubName, source: "config connectionString" };
  }
  const fromEnv = env[settings.connectionStringEnv];
  if (fromEnv && fromEnv.trim() !== "") {
    return { kind: "connectionString", connectionString: fromEnv.trim(), eventHubName: settings.eventHubName, source: `environment variable ${settings.connectionStringEnv}` };
  }
  throw new Error(
    `eventhubs sink: no credentials: set the environment variable ${settings.connectionStringEnv} to a connection string, ` +
      `or eventhubs.fullyQualifiedNamespace and eventhubs.eventHubName for Entra ID (managed identity)`,
  );
}
