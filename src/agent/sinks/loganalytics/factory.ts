// The `--sink loganalytics` factory. Light on purpose: the Azure SDK behind the sink loads only when the sink is configured.
import type { SinkFactory } from "../sink.js";
import { logAnalyticsSettingsRules, logAnalyticsSettingsSchema, type LogAnalyticsSettings } from "./settings.js";

export const sinkFactory: SinkFactory<LogAnalyticsSettings> = {
  section: "loganalytics",
  summary:
    "loganalytics — Azure Monitor Logs Ingestion API (settings: config section `loganalytics`: endpoint, ruleId, …)",
  argument: "none",
  settingsSchema: logAnalyticsSettingsSchema,
  settingsDescription: "The Log Analytics sink: see src/agent/sinks/loganalytics/README.md.",
  rules: logAnalyticsSettingsRules,
  create: async ({ settings, context }) => {
    const { LogAnalyticsSink } = await import("./sink.js");
    return new LogAnalyticsSink({ settings, logger: context.logger, metrics: context.metrics });
  },
};
