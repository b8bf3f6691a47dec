// The Log Analytics sink's public surface: its factory for the registry (`--sink loganalytics`) and its types.
export { LogAnalyticsSink, createCredential, type LogAnalyticsSinkOptions, type LogAnalyticsSinkStats } from "./sink.js";
export { logAnalyticsSettingsSchema, serviceMaxRequestBytes, type LogAnalyticsSettings } from "./settings.js";
export { oldestUndeliveredAgeWarning, classifyUploadError } from "./outcome.js";
export { RulePauses, processRulePauses } from "./rule-pauses.js";
export { logAnalyticsSinkFactory } from "./factory.js";
