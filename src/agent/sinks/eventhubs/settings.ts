// Settings of the Event Hubs sink (config section `eventhubs`): one zod schema with every default, its cross-field
// rules (namespace shape, connection string, credentials in use), and the resolution of where the credentials come
// from. Pure logic (reads only the environment object it is given).
import * as z from "zod/mini";
import "../../util/zod-locale.js";
import { documented } from "../../util/setting-doc.js";
import type { PluginRulesInput } from "../sink.js";
import { SinkConfigError } from "../errors.js";
import { concurrencySetting, deliverySettings, timeoutSetting } from "../delivery-settings.js";
import {
  defaultConnectionStringEnv,
  eventHubsConnectionRules,
  type EventHubsConnectionFields,
} from "@sef/contract/eventhubs-connection.js";

export { defaultConnectionStringEnv };
export const partitionKeyFields = ["EventId", "VmId", "RecordId", "none"] as const;
export type PartitionKeyField = (typeof partitionKeyFields)[number];
export const partitionRoutings = ["key", "hash"] as const;
export type PartitionRouting = (typeof partitionRoutings)[number];

export const eventHubsSettingsSchema = z
  .strictObject({
    connectionString: documented(z.optional(z.string().check(z.minLength(1))), {
      description: "A connection string in the file (prefer the variable: it keeps the secret out of files).",
    }),
    connectionStringEnv: documented(z._default(z.string().check(z.minLength(1)), defaultConnectionStringEnv), {
      description: "Environment variable holding a SAS connection string (`UseDevelopmentEmulator=true` supported).",
    }),
    fullyQualifiedNamespace: documented(z.optional(z.string().check(z.minLength(1))), {
      description: "`<ns>.servicebus.windows.net`: Entra ID auth (managed identity or the default chain).",
    }),
    eventHubName: documented(z.optional(z.string().check(z.minLength(1))), {
      description:
        "The hub (required with `fullyQualifiedNamespace`; optional when the connection string has `EntityPath`).",
    }),
    credential: documented(z._default(z.enum(["managedIdentity", "default"]), "managedIdentity"), {
      description: "`managedIdentity` (ManagedIdentityCredential) or `default` (DefaultAzureCredential).",
    }),
    managedIdentityClientId: documented(z.optional(z.string().check(z.minLength(1))), {
      description: "Client id of a user-assigned identity.",
      defaultText: "(system-assigned)",
    }),
    customEndpointAddress: documented(z.optional(z.string().check(z.url())), {
      description: "`amqps://host:port` to connect to instead of the namespace host (private endpoints, local peers).",
    }),
    partitionKeyField: documented(z._default(z.enum(partitionKeyFields), "EventId"), {
      description:
        "Record field used as the partition key, so one event's transitions stay in order on one partition: `EventId`, `VmId`, `RecordId` or `none`. sef-fleet reads only `EventId`-keyed records (a record on another partition than its EventId's is dropped as forged).",
    }),
    /**
     * `key`: every batch carries the partition key and the service picks the partition (consumers see `partitionKey`).
     * `hash`: the sink maps the same key to the partition the service would choose and sends whole-partition batches:
     * identical placement and per-key order, far fewer round trips when a backlog holds many keys; events carry no
     * `partitionKey` annotation.
     */
    partitionRouting: documented(z._default(z.enum(partitionRoutings), "key"), {
      description:
        "`key`: each batch carries the partition key and the service picks the partition; `hash`: the sink maps the same key to the partition Event Hubs itself would choose and sends whole-partition batches (see src/agent/sinks/eventhubs/README.md).",
    }),
    ...deliverySettings({
      maxBatchRecords: 2000,
      lingerMs: 100,
      batchDescription:
        "Records per send (split into as many `EventDataBatch`es as the link's max message size needs).",
    }),
    maxConcurrentBatches: concurrencySetting({
      default: 128,
      max: 256,
      unit: "batches",
      description:
        "Batches in flight at once; a key's next batch starts only after its previous one was accepted (1 = strictly sequential).",
    }),
    maxRetries: documented(z._default(z.number().check(z.int(), z.minimum(0), z.maximum(20)), 3), {
      description:
        "The SDK's own retries inside one operation of a consumer (`sef tail`, `sef-fleet`). The sink ignores it: its SDK makes one attempt per send, and the drainer's retry policy is the only retry loop.",
      unit: "retries",
    }),
    retryDelayMs: documented(z._default(z.number().check(z.int(), z.minimum(1)), 800), {
      description: "A consumer's first SDK retry delay.",
    }),
    maxRetryDelayMs: documented(z._default(z.number().check(z.int(), z.minimum(1)), 10_000), {
      description: "Cap of a consumer's SDK retry delay.",
    }),
    /**
     * Close the AMQP connection after this many ms without a send, and reopen it for the next record (heartbeats
     * included): a namespace allows 5,000 connections (Standard), so a fleet must not hold one per VM forever.
     * 0 keeps the connection open until shutdown.
     */
    idleCloseMs: documented(z._default(z.number().check(z.int(), z.minimum(0), z.maximum(3_600_000)), 30_000), {
      description:
        "Close the AMQP connection after this long without a send, reopen it for the next record (heartbeats included); `0` keeps it open until shutdown.",
    }),
    tryTimeoutMs: timeoutSetting({
      default: 30_000,
      min: 1000,
      description: "Time limit of one SDK attempt (link setup, send and disposition).",
    }),
  })
  .check(...eventHubsConnectionRules.map((rule) => z.refine<EventHubsConnectionFields>(rule.holds, rule.issue)));

export type EventHubsSettings = z.infer<typeof eventHubsSettingsSchema>;

/** Where the sink's credentials come from, decided once at start-up. */
export type EventHubsAuth =
  | {
      readonly kind: "connectionString";
      readonly connectionString: string;
      readonly eventHubName: string | undefined;
      readonly source: string;
    }
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
    return {
      kind: "connectionString",
      connectionString: settings.connectionString,
      eventHubName: settings.eventHubName,
      source: "config connectionString",
    };
  }
  const fromEnv = env[settings.connectionStringEnv];
  if (fromEnv && fromEnv.trim() !== "") {
    return {
      kind: "connectionString",
      connectionString: fromEnv.trim(),
      eventHubName: settings.eventHubName,
      source: `environment variable ${settings.connectionStringEnv}`,
    };
  }
  throw new SinkConfigError(
    `eventhubs sink: no credentials: set the environment variable ${settings.connectionStringEnv} to a connection string, ` +
      `or eventhubs.fullyQualifiedNamespace and eventhubs.eventHubName for Entra ID (managed identity)`,
  );
}

const hostLabel = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const fqdnPattern = new RegExp(`^(?=.{1,253}$)${hostLabel}(?:\\.${hostLabel})+$`, "i");
const hostPattern = new RegExp(`^(?=.{1,253}$)${hostLabel}(?:\\.${hostLabel})*$`, "i");

/** Whether `text` has the shape of an Event Hubs connection string; the value itself is never quoted anywhere. */
export function isEventHubsConnectionString(
  text: string,
): { ok: true; entityPath: string | undefined } | { ok: false } {
  const parts = new Map<string, string>();
  for (const part of text.split(";")) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    if (eq <= 0) return { ok: false };
    parts.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const endpoint = parts.get("endpoint");
  if (!endpoint || !/^sb:\/\/[^/\s]+/i.test(endpoint)) return { ok: false };
  const hasKey = Boolean(parts.get("sharedaccesskeyname") && parts.get("sharedaccesskey"));
  const hasSas = Boolean(parts.get("sharedaccesssignature"));
  if (!hasKey && !hasSas) return { ok: false };
  return { ok: true, entityPath: parts.get("entitypath") || undefined };
}

/** Cross-field rules: the namespace's shape, a connection string's shape, and credentials for a sink in use. */
export function eventHubsSettingsRules({ settings: eh, inUse, env }: PluginRulesInput<EventHubsSettings>): string[] {
  const problems: string[] = [];
  if (eh?.fullyQualifiedNamespace !== undefined) {
    const pattern = eh.customEndpointAddress === undefined ? fqdnPattern : hostPattern;
    if (!pattern.test(eh.fullyQualifiedNamespace)) {
      problems.push(
        "eventhubs.fullyQualifiedNamespace: must be a fully qualified host name such as NAME.servicebus.windows.net (no scheme, port or path)",
      );
    }
  }
  if (eh?.connectionString !== undefined)
    checkConnectionString(eh.connectionString, "eventhubs.connectionString", eh.eventHubName, problems);
  if (inUse && eh?.fullyQualifiedNamespace === undefined && eh?.connectionString === undefined) {
    const variable = eh?.connectionStringEnv ?? defaultConnectionStringEnv;
    const fromEnv = env[variable]?.trim();
    if (!fromEnv) {
      problems.push(
        `eventhubs: the eventhubs sink needs a namespace or a connection string: set eventhubs.fullyQualifiedNamespace (+ eventHubName) or the environment variable ${variable}`,
      );
    } else {
      checkConnectionString(fromEnv, `environment variable ${variable}`, eh?.eventHubName, problems);
    }
  }
  return problems;
}

function checkConnectionString(
  text: string,
  source: string,
  eventHubName: string | undefined,
  problems: string[],
): void {
  const parsed = isEventHubsConnectionString(text);
  if (!parsed.ok) {
    problems.push(
      `${source}: not a valid Event Hubs connection string (expected Endpoint=sb://…;SharedAccessKeyName=…;SharedAccessKey=…)`,
    );
  } else if (parsed.entityPath === undefined && eventHubName === undefined) {
    problems.push(`eventhubs.eventHubName: required when the connection string (${source}) has no EntityPath`);
  }
}

/** The default connection-string variable, and the one the section names. */
export function eventHubsReferencedVariables(section: unknown): string[] {
  // Any JSON value: a field of a string, a number or an array reads as undefined.
  const named = (section as { connectionStringEnv?: unknown } | null | undefined)?.connectionStringEnv;
  return typeof named === "string" ? [defaultConnectionStringEnv, named] : [defaultConnectionStringEnv];
}

export function eventHubsInlineSecrets(settings: EventHubsSettings): string[] {
  return settings.connectionString === undefined ? [] : ["eventhubs.connectionString"];
}
