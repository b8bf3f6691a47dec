// Builds @azure/event-hubs clients (producer for the sink, consumer for `sef tail`) from resolved credentials:
// SAS connection string, managed identity or the default Entra ID chain; explicit exponential retry options.
import { EventHubConsumerClient, EventHubProducerClient, RetryMode, type CheckpointStore, type EventHubClientOptions, type EventHubConsumerClientOptions } from "@azure/event-hubs";
import type { TokenCredential } from "@azure/identity";
import { createAzureCredential } from "../azure-credential.js";
import type { EventHubsAuth } from "./settings.js";

export interface EventHubsClientOptions {
  readonly customEndpointAddress?: string | undefined;
  readonly maxRetries: number;
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly tryTimeoutMs: number;
  readonly userAgent?: string;
}

export function sdkClientOptions(options: EventHubsClientOptions): EventHubClientOptions {
  return {
    retryOptions: {
      mode: RetryMode.Exponential,
      maxRetries: options.maxRetries,
      retryDelayInMs: options.retryDelayMs,
      maxRetryDelayInMs: options.maxRetryDelayMs,
      timeoutInMs: options.tryTimeoutMs,
    },
    ...(options.customEndpointAddress ? { customEndpointAddress: options.customEndpointAddress } : {}),
    ...(options.userAgent ? { userAgent: options.userAgent } : {}),
  };
}

export function tokenCredentialFor(auth: Extract<EventHubsAuth, { kind: "tokenCredential" }>): TokenCredential {
  return createAzureCredential(auth.credential, auth.managedIdentityClientId);
}

/** A human-readable description of where the client connects, without secrets. */
export function describeTarget(auth: EventHubsAuth): string {
  if (auth.kind === "tokenCredential") return `${auth.fullyQualifiedNamespace}/${auth.eventHubName} (${auth.credential === "default" ? "DefaultAzureCredential" : "managed identity"})`;
  const endpoint = /Endpoint=([^;]+)/i.exec(auth.connectionString)?.[1] ?? "?";
  const entity = auth.eventHubName ?? /EntityPath=([^;]+)/i.exec(auth.connectionString)?.[1] ?? "?";
  return `${endpoint}${endpoint.endsWith("/") ? "" : "/"}${entity} (connection string from ${auth.source})`;
}

/**
 * A producer client; `credential` (Entra ID auth) lets clients opened one after another share one credential and so
 * its token cache (the sink reopens its client after each idle close).
 */
export function createProducerClient(auth: EventHubsAuth, options: EventHubsClientOptions, credential?: TokenCredential): EventHubProducerClient {
  const sdkOptions = sdkClientOptions(options);
  if (auth.kind === "tokenCredential") {
    return new EventHubProducerClient(auth.fullyQualifiedNamespace, auth.eventHubName, credential ?? tokenCredentialFor(auth), sdkOptions);
  }
  return auth.eventHubName
    ? new EventHubProducerClient(auth.connectionString, auth.eventHubName, sdkOptions)
    : new EventHubProducerClient(auth.connectionString, sdkOptions);
}

/** A consumer; with a checkpoint store, instances share the partitions through the SDK's load balancing (`sef fleet`). */
export function createConsumerClient(
  auth: EventHubsAuth,
  consumerGroup: string,
  options: EventHubsClientOptions,
  balancing?: { checkpointStore: CheckpointStore; loadBalancingOptions?: EventHubConsumerClientOptions["loadBalancingOptions"] },
): EventHubConsumerClient {
  const sdkOptions: EventHubConsumerClientOptions = { ...sdkClientOptions(options), ...(balancing?.loadBalancingOptions ? { loadBalancingOptions: balancing.loadBalancingOptions } : {}) };
  if (auth.kind === "tokenCredential") {
    return balancing
      ? new EventHubConsumerClient(consumerGroup, auth.fullyQualifiedNamespace, auth.eventHubName, tokenCredentialFor(auth), balancing.checkpointStore, sdkOptions)
      : new EventHubConsumerClient(consumerGroup, auth.fullyQualifiedNamespace, auth.eventHubName, tokenCredentialFor(auth), sdkOptions);
  }
  if (balancing) {
    return auth.eventHubName
      ? new EventHubConsumerClient(consumerGroup, auth.connectionString, auth.eventHubName, balancing.checkpointStore, sdkOptions)
      : new EventHubConsumerClient(consumerGroup, auth.connectionString, balancing.checkpointStore, sdkOptions);
  }
  return auth.eventHubName
    ? new EventHubConsumerClient(consumerGroup, auth.connectionString, auth.eventHubName, sdkOptions)
    : new EventHubConsumerClient(consumerGroup, auth.connectionString, sdkOptions);
}
