// The `--sink eventhubs` factory. Light on purpose: the Azure SDK behind the sink loads only when the sink is configured.
import type { SinkFactory } from "../sink.js";
import {
  eventHubsInlineSecrets,
  eventHubsReferencedVariables,
  eventHubsSettingsRules,
  eventHubsSettingsSchema,
  type EventHubsSettings,
} from "./settings.js";

export const sinkFactory: SinkFactory<EventHubsSettings> = {
  section: "eventhubs",
  summary:
    "eventhubs — Azure Event Hubs (AMQP): connection string from $SEF_EVENTHUBS_CONNECTION_STRING or managed identity (config section eventhubs)",
  argument: "none",
  settingsSchema: eventHubsSettingsSchema,
  settingsDescription: "The Event Hubs sink: see src/agent/sinks/eventhubs/README.md.",
  rules: eventHubsSettingsRules,
  referencedVariables: eventHubsReferencedVariables,
  inlineSecrets: eventHubsInlineSecrets,
  create: async ({ settings, context }) => {
    const { createEventHubsSink } = await import("./sink.js");
    return createEventHubsSink(settings, context);
  },
};
