// The `--sink webhook[:URL]` factory (the registry's entry for this folder). Light on purpose: the sink and its HTTP
// client (undici) load only when a webhook sink is configured.
import type { SinkFactory } from "../sink.js";
import { webhookSettingsSchema, type WebhookSettings } from "./settings.js";

export const webhookSinkFactory: SinkFactory<WebhookSettings> = {
  type: "webhook",
  summary: "webhook[:URL] — POST JSON arrays of records to URL (settings: webhook.url, headers, signature, timeoutMs, …)",
  argument: "optional",
  settingsSchema: webhookSettingsSchema,
  create: async ({ argument, settings, context }) => {
    const { createWebhookSink } = await import("./sink.js");
    return createWebhookSink({ argument, settings, logger: context.logger, agentVersion: context.agentVersion });
  },
};
