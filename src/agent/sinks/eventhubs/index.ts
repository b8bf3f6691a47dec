// The Event Hubs sink's public surface: building the sink from settings, and its parts (the registry uses the light factory.ts).
import type { Logger } from "pino";
import { redactSecrets } from "../../observability/logger.js";
import type { AgentMetrics } from "../../observability/metrics.js";
import { createProducerClient, describeTarget, tokenCredentialFor } from "./client.js";
import { connectionMetrics } from "./connection-metrics.js";
import { IdleClosingProducer } from "./idle-producer.js";
import { resolveEventHubsAuth, type EventHubsSettings } from "./settings.js";
import { EventHubsSink } from "./sink.js";

export { EventHubsSink, type EventHubsSinkOptions } from "./sink.js";
export { eventHubsSettingsSchema, resolveEventHubsAuth, defaultConnectionStringEnv, type EventHubsSettings, type EventHubsAuth } from "./settings.js";
export { createProducerClient, createConsumerClient, describeTarget } from "./client.js";
export { IdleClosingProducer, type ConnectionObserver, type ProducerOperations } from "./idle-producer.js";

/** Builds the sink from validated settings; `env` is where `connectionStringEnv` is looked up (default process.env). */
export function createEventHubsSink(
  settings: EventHubsSettings,
  context: { logger: Logger; agentVersion?: string; metrics?: AgentMetrics },
  env: NodeJS.ProcessEnv = process.env,
): EventHubsSink {
  const auth = resolveEventHubsAuth(settings, env);
  const clientOptions = {
    customEndpointAddress: settings.customEndpointAddress,
    maxRetries: settings.maxRetries,
    retryDelayMs: settings.retryDelayMs,
    maxRetryDelayMs: settings.maxRetryDelayMs,
    tryTimeoutMs: settings.tryTimeoutMs,
    ...(context.agentVersion ? { userAgent: `sef/${context.agentVersion}` } : {}),
  };
  // One credential for every client the sink opens, so a reconnect reuses its cached token.
  const credential = auth.kind === "tokenCredential" ? tokenCredentialFor(auth) : undefined;
  try {
    // Built once here so broken settings fail at start-up, not at the first record; the SDK connects lazily.
    void createProducerClient(auth, clientOptions, credential).close().catch(() => undefined);
  } catch (err) {
    // The SDK quotes the connection string in some validation errors.
    throw new Error(`eventhubs sink: invalid settings: ${redactSecrets((err as Error).message)}`);
  }
  const producer = new IdleClosingProducer({
    createClient: () => createProducerClient(auth, clientOptions, credential),
    idleCloseMs: settings.idleCloseMs,
    logger: context.logger.child({ sink: "eventhubs" }),
    ...(context.metrics ? { observer: connectionMetrics(context.metrics.registry, "eventhubs") } : {}),
  });
  context.logger.info(
    { sink: "eventhubs", target: describeTarget(auth), partitionKeyField: settings.partitionKeyField, partitionRouting: settings.partitionRouting, idleCloseMs: settings.idleCloseMs },
    "eventhubs sink ready",
  );
  return new EventHubsSink({
    producer,
    logger: context.logger,
    partitionKeyField: settings.partitionKeyField,
    partitionRouting: settings.partitionRouting,
    maxBatchRecords: settings.maxBatchRecords,
    lingerMs: settings.lingerMs,
    maxConcurrentBatches: settings.maxConcurrentBatches,
  });
}
