// The Event Hubs sink's public surface for tools and tests: the sink and its builder, its settings, its clients and
// producer; the registry imports the light factory.ts directly (the Azure SDK loads only when the sink is configured).
export { EventHubsSink, createEventHubsSink, type EventHubsSinkOptions } from "./sink.js";
export {
  eventHubsSettingsSchema,
  resolveEventHubsAuth,
  defaultConnectionStringEnv,
  type EventHubsSettings,
  type EventHubsAuth,
} from "./settings.js";
export { createProducerClient, createConsumerClient, createSinkProducer, describeTarget } from "./client.js";
export { IdleClosingProducer, type ConnectionObserver, type ProducerOperations } from "./idle-producer.js";
