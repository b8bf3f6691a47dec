// Where the fleet reads the agents' records: the `eventHubs.connection` settings of a consumer (namespace + Entra ID, or
// a connection string; the SDK's receive retries), and the EventHubConsumerClient that shares the hub's partitions with
// every other instance through a checkpoint store (the SDK's load balancing). The one SDK retry sef keeps: nothing of
// the fleet retries a receive, so the consumer's own retries (`maxRetries`) are its only retry owner; the credential
// inside it tries each token once.
import {
  EventHubConsumerClient,
  RetryMode,
  type CheckpointStore,
  type EventHubConsumerClientOptions,
} from "@azure/event-hubs";
import { DefaultAzureCredential, ManagedIdentityCredential, type TokenCredential } from "@azure/identity";
import * as z from "zod/mini";
import "./zod-locale.js";
import { SefError } from "@sef/errors/sef-error.js";
import {
  defaultConnectionStringEnv,
  eventHubsConnectionRules,
  type EventHubsConnectionFields,
} from "@sef/contract/eventhubs-connection.js";

export const eventHubsConnectionSchema = z
  .strictObject({
    /** A SAS connection string in the config file (prefer `connectionStringEnv`: keeps the secret out of files). */
    connectionString: z.optional(z.string().check(z.minLength(1))),
    /** Environment variable holding the connection string. */
    connectionStringEnv: z._default(z.string().check(z.minLength(1)), defaultConnectionStringEnv),
    /** `<namespace>.servicebus.windows.net`: selects Entra ID auth (managed identity or the default chain). */
    fullyQualifiedNamespace: z.optional(z.string().check(z.minLength(1))),
    /** The event hub; required with `fullyQualifiedNamespace`, optional when the connection string has EntityPath. */
    eventHubName: z.optional(z.string().check(z.minLength(1))),
    credential: z._default(z.enum(["managedIdentity", "default"]), "managedIdentity"),
    /** Client id of a user-assigned managed identity (system-assigned when absent); also used for Blob storage. */
    managedIdentityClientId: z.optional(z.string().check(z.minLength(1))),
    /** Where to connect instead of the namespace host (`amqps://host:port`): private endpoints, local peers. */
    customEndpointAddress: z.optional(z.string().check(z.url())),
    /** The SDK's retries of a failed receive or management operation (exponential), before it reports an error. */
    maxRetries: z._default(z.number().check(z.int(), z.minimum(0), z.maximum(20)), 3),
    retryDelayMs: z._default(z.number().check(z.int(), z.minimum(1)), 800),
    maxRetryDelayMs: z._default(z.number().check(z.int(), z.minimum(1)), 10_000),
    /** Time limit of one SDK operation, in ms. */
    tryTimeoutMs: z._default(z.number().check(z.int(), z.minimum(1000)), 30_000),
  })
  .check(...eventHubsConnectionRules.map((rule) => z.refine<EventHubsConnectionFields>(rule.holds, rule.issue)));

export type EventHubsConnection = z.infer<typeof eventHubsConnectionSchema>;

/**
 * No retries inside a token request (the identity client's pipeline and its managed-identity 404/410 policy): whoever
 * asked for the token is its retry owner (the consumer's SDK retries, the fleet's Blob retries in blob-storage.ts).
 */
const oneTryPerToken = { retryOptions: { maxRetries: 0 } };

/** The Entra ID credential of the fleet's identity (Event Hubs with a namespace, Blob storage with a service URL). */
export function fleetCredential(
  connection: Pick<EventHubsConnection, "credential" | "managedIdentityClientId">,
): TokenCredential {
  const clientId = connection.managedIdentityClientId;
  if (connection.credential === "default")
    return new DefaultAzureCredential(
      clientId ? { managedIdentityClientId: clientId, ...oneTryPerToken } : oneTryPerToken,
    );
  return clientId
    ? new ManagedIdentityCredential({ clientId, ...oneTryPerToken })
    : new ManagedIdentityCredential(oneTryPerToken);
}

/** Thrown when the settings name no usable credentials (never quotes a secret). */
export class EventHubsSourceError extends SefError {
  override readonly name = "EventHubsSourceError";
  override readonly code = "SEF_ERR_FLEET_EVENTHUBS_SOURCE";
}

/**
 * A consumer of `consumerGroup` that balances partitions through `checkpointStore`: Entra ID when the settings name a
 * namespace, else the config's connection string, else the one in the environment variable they name.
 */
export function createFleetConsumer(
  connection: EventHubsConnection,
  consumerGroup: string,
  checkpointStore: CheckpointStore,
  loadBalancingOptions: EventHubConsumerClientOptions["loadBalancingOptions"],
  env: NodeJS.ProcessEnv,
): EventHubConsumerClient {
  const options: EventHubConsumerClientOptions = {
    retryOptions: {
      mode: RetryMode.Exponential,
      maxRetries: connection.maxRetries,
      retryDelayInMs: connection.retryDelayMs,
      maxRetryDelayInMs: connection.maxRetryDelayMs,
      timeoutInMs: connection.tryTimeoutMs,
    },
    ...(connection.customEndpointAddress ? { customEndpointAddress: connection.customEndpointAddress } : {}),
    ...(loadBalancingOptions ? { loadBalancingOptions } : {}),
  };
  if (connection.fullyQualifiedNamespace) {
    const hub = connection.eventHubName ?? "";
    return new EventHubConsumerClient(
      consumerGroup,
      connection.fullyQualifiedNamespace,
      hub,
      fleetCredential(connection),
      checkpointStore,
      options,
    );
  }
  const connectionString = connection.connectionString ?? env[connection.connectionStringEnv]?.trim();
  if (!connectionString) {
    throw new EventHubsSourceError(
      `eventHubs.connection: no credentials: set the environment variable ${connection.connectionStringEnv} to a connection string, ` +
        `or fullyQualifiedNamespace and eventHubName for Entra ID (managed identity)`,
    );
  }
  return connection.eventHubName
    ? new EventHubConsumerClient(consumerGroup, connectionString, connection.eventHubName, checkpointStore, options)
    : new EventHubConsumerClient(consumerGroup, connectionString, checkpointStore, options);
}
