// The `--sink webhook[:URL]` factory (the registry's entry for this folder).
import type { SinkFactory } from "../sink.js";
import { webhookSettingsSchema, type WebhookSettings } from "./settings.js";
import { createWebhookSink } from "./sink.js";

export const webhookSinkFactory: SinkFactory<WebhookSettings> = {
  type: "webhook",
  summary: "webhook[:URL] — POST JSON arrays of records to URL (settings: webhook.url, headers, signature, timeoutMs, …)",
  argument: "optional",
  settingsSchema: webhookSettingsSchema,
  create: ({ argument, settings, context }) =>
    createWebhookSink({ argument, settings, logger: context.logger, agentVersion: context.agentVersion }),
};
