// The `--sink webhook[:URL]` factory (the registry's entry for this folder). Light on purpose: the sink and its HTTP
// client (undici) load only when a webhook sink is configured.
import type { SinkFactory } from "../sink.js";
import {
  webhookInlineSecrets,
  webhookReferencedVariables,
  webhookSettingsRules,
  webhookSettingsSchema,
  type WebhookSettings,
} from "./settings.js";

export const sinkFactory: SinkFactory<WebhookSettings> = {
  section: "webhook",
  summary:
    "webhook[:URL] — POST JSON arrays of records to URL (settings: webhook.url, headers, signature, timeoutMs, …)",
  argument: "optional",
  settingsSchema: webhookSettingsSchema,
  settingsDescription: "The webhook sink: see src/agent/sinks/webhook/README.md.",
  rules: webhookSettingsRules,
  referencedVariables: webhookReferencedVariables,
  inlineSecrets: webhookInlineSecrets,
  create: async ({ argument, settings, context }) => {
    const { createWebhookSink } = await import("./sink.js");
    return createWebhookSink({ argument, settings, logger: context.logger, agentVersion: context.agentVersion });
  },
};
