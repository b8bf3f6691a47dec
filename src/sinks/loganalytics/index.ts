// The Log Analytics sink's public surface: its factory for the registry (`--sink loganalytics`) and its types.
import type { SinkFactory } from "../registry.js";
import { LogAnalyticsSink } from "./sink.js";
import { logAnalyticsSettingsSchema, type LogAnalyticsSettings } from "./settings.js";

export { LogAnalyticsSink, createCredential, type LogAnalyticsSinkOptions, type LogAnalyticsSinkStats } from "./sink.js";
export { logAnalyticsSettingsSchema, serviceMaxRequestBytes, type LogAnalyticsSettings } from "./settings.js";
export { oldestUndeliveredAgeWarning, classifyUploadError } from "./outcome.js";
export { RulePauses, processRulePauses } from "./rule-pauses.js";

export const logAnalyticsSinkFactory: SinkFactory<LogAnalyticsSettings> = {
  type: "loganalytics",
  summary: "loganalytics — Azure Monitor Logs Ingestion API (settings: config section `loganalytics`: endpoint, ruleId, …)",
  argument: "none",
  settingsSchema: logAnalyticsSettingsSchema,
  create: ({ settings, context }) => new LogAnalyticsSink({ settings, logger: context.logger }),
};
