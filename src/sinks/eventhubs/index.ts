// The Event Hubs sink's public surface: building the sink from settings, and its parts (the registry uses the light factory.ts).
import type { Logger } from "pino";
import { redactSecrets } from "../../observability/logger.js";
import { createProducerClient, describeTarget } from "./client.js";
import { resolveEventHubsAuth, type EventHubsSettings } from "./settings.js";
import { EventHubsSink } from "./sink.js";

export { EventHubsSink, type EventHubsSinkOptions } from "./sink.js";
export { eventHubsSettingsSchema, resolveEventHubsAuth, defaultConnectionStringEnv, type EventHubsSettings, type EventHubsAuth } from "./settings.js";
export { createProducerClient, createConsumerClient, describeTarget } from "./client.js";

/** Builds the sink from validated settings; `env` is where `connectionStringEnv` is looked up (default process.env). */
export function createEventHubsSink(
  settings: EventHubsSettings,
  context: { logger: Logger; agentVersion?: string },
  env: NodeJS.ProcessEnv = process.env,
): EventHubsSink {
  const auth = resolveEventHubsAuth(settings, env);
  let producer;
  try {
    producer = createProducerClient(auth, {
      customEndpointAddress: settings.customEndpointAddress,
      maxRetries: settings.maxRetries,
      retryDelayMs: settings.retryDelayMs,
      maxRetryDelayMs: settings.maxRetryDelayMs,
      tryTimeoutMs: settings.tryTimeoutMs,
      ...(context.agentVersion ? { userAgent: `sef/${context.agentVersion}` } : {}),
    });
  } catch (err) {
    // The SDK quotes the connection string in some validation errors.
    throw new Error(`eventhubs sink: invalid settings: ${redactSecrets((err as Error).message)}`);
  }
  context.logger.info({ sink: "eventhubs", target: describeTarget(auth), partitionKeyField: settings.partitionKeyField, partitionRouting: settings.partitionRouting }, "eventhubs sink ready");
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
