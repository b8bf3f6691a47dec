// Builds @azure/event-hubs clients from the sink's settings: the sink's producer (held only while sending) and the
// consumer of `sef tail`; SAS connection string, managed identity or the default Entra ID chain; SDK retries off for
// the sink (maxRetries 0: its drainer is the only retry loop).
import {
  EventHubConsumerClient,
  EventHubProducerClient,
  RetryMode,
  type EventHubClientOptions,
} from "@azure/event-hubs";
import type { TokenCredential } from "@azure/identity";
import type { Logger } from "pino";
import { redactSecrets } from "../../observability/logger.js";
import type { AgentMetrics } from "../../observability/metrics.js";
import { createAzureCredential } from "../azure-credential.js";
import { connectionMetrics } from "./connection-metrics.js";
import { IdleClosingProducer } from "./idle-producer.js";
import { resolveEventHubsAuth, type EventHubsAuth, type EventHubsSettings } from "./settings.js";
import { SinkConfigError } from "../errors.js";

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
  if (auth.kind === "tokenCredential")
    return `${auth.fullyQualifiedNamespace}/${auth.eventHubName} (${auth.credential === "default" ? "DefaultAzureCredential" : "managed identity"})`;
  const endpoint = /Endpoint=([^;]+)/i.exec(auth.connectionString)?.[1] ?? "?";
  const entity = auth.eventHubName ?? /EntityPath=([^;]+)/i.exec(auth.connectionString)?.[1] ?? "?";
  return `${endpoint}${endpoint.endsWith("/") ? "" : "/"}${entity} (connection string from ${auth.source})`;
}

/**
 * A producer client; `credential` (Entra ID auth) lets clients opened one after another share one credential and so
 * its token cache (the sink reopens its client after each idle close).
 */
export function createProducerClient(
  auth: EventHubsAuth,
  options: EventHubsClientOptions,
  credential?: TokenCredential,
): EventHubProducerClient {
  const sdkOptions = sdkClientOptions(options);
  if (auth.kind === "tokenCredential") {
    return new EventHubProducerClient(
      auth.fullyQualifiedNamespace,
      auth.eventHubName,
      credential ?? tokenCredentialFor(auth),
      sdkOptions,
    );
  }
  return auth.eventHubName
    ? new EventHubProducerClient(auth.connectionString, auth.eventHubName, sdkOptions)
    : new EventHubProducerClient(auth.connectionString, sdkOptions);
}

/**
 * A consumer reading without checkpoints (`sef tail`). Its SDK retries (`maxRetries`) stay on: nothing of sef retries
 * a receive, so they are its only retry owner (the credential inside tries each token once).
 */
export function createConsumerClient(
  auth: EventHubsAuth,
  consumerGroup: string,
  options: EventHubsClientOptions,
): EventHubConsumerClient {
  const sdkOptions = sdkClientOptions(options);
  if (auth.kind === "tokenCredential") {
    return new EventHubConsumerClient(
      consumerGroup,
      auth.fullyQualifiedNamespace,
      auth.eventHubName,
      tokenCredentialFor(auth),
      sdkOptions,
    );
  }
  return auth.eventHubName
    ? new EventHubConsumerClient(consumerGroup, auth.connectionString, auth.eventHubName, sdkOptions)
    : new EventHubConsumerClient(consumerGroup, auth.connectionString, sdkOptions);
}

/**
 * The sink's producer from validated settings: one attempt per send, one credential (and token cache) for every
 * client it opens, the connection held only while sending. Throws, redacted, on settings the SDK refuses.
 */
export function createSinkProducer(
  settings: EventHubsSettings,
  context: { logger: Logger; agentVersion?: string | undefined; metrics?: AgentMetrics | undefined },
  env: NodeJS.ProcessEnv,
): { producer: IdleClosingProducer; auth: EventHubsAuth } {
  const auth = resolveEventHubsAuth(settings, env);
  const clientOptions = {
    customEndpointAddress: settings.customEndpointAddress,
    // The drainer is the sink's only retry loop: the SDK makes one attempt per send (the delays then do not apply).
    maxRetries: 0,
    retryDelayMs: settings.retryDelayMs,
    maxRetryDelayMs: settings.maxRetryDelayMs,
    tryTimeoutMs: settings.tryTimeoutMs,
    ...(context.agentVersion ? { userAgent: `sef/${context.agentVersion}` } : {}),
  };
  // One credential for every client the sink opens, so a reconnect reuses its cached token.
  const credential = auth.kind === "tokenCredential" ? tokenCredentialFor(auth) : undefined;
  try {
    // Built once here so broken settings fail at start-up, not at the first record; the SDK connects lazily.
    void createProducerClient(auth, clientOptions, credential)
      .close()
      .catch(() => undefined);
  } catch (err) {
    // The SDK quotes the connection string in some validation errors.
    throw new SinkConfigError(`eventhubs sink: invalid settings: ${redactSecrets((err as Error).message)}`);
  }
  const producer = new IdleClosingProducer({
    createClient: () => createProducerClient(auth, clientOptions, credential),
    idleCloseMs: settings.idleCloseMs,
    logger: context.logger.child({ sink: "eventhubs" }),
    ...(context.metrics ? { observer: connectionMetrics(context.metrics.registry, "eventhubs") } : {}),
  });
  return { producer, auth };
}
