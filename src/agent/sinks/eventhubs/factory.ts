// The `--sink eventhubs` factory. Light on purpose: the Azure SDK behind the sink loads only when the sink is configured.
import type { SinkFactory } from "../sink.js";
import { eventHubsSettingsSchema, type EventHubsSettings } from "./settings.js";

export const eventHubsSinkFactory: SinkFactory<EventHubsSettings> = {
  type: "eventhubs",
  summary: "eventhubs — Azure Event Hubs (AMQP): connection string from $SEF_EVENTHUBS_CONNECTION_STRING or managed identity (config section eventhubs)",
  argument: "none",
  settingsSchema: eventHubsSettingsSchema,
  create: async ({ settings, context }) => {
    const { createEventHubsSink } = await import("./index.js");
    return createEventHubsSink(settings, context);
  },
};
