// The Log Analytics sink's public surface for tools and tests: the sink, its settings, classification and rule pauses;
// the registry imports the light factory.ts directly (the Azure SDK loads only when the sink is configured).
export {
  LogAnalyticsSink,
  createCredential,
  type LogAnalyticsSinkOptions,
  type LogAnalyticsSinkStats,
} from "./sink.js";
export { logAnalyticsSettingsSchema, serviceMaxRequestBytes, type LogAnalyticsSettings } from "./settings.js";
export { oldestUndeliveredAgeWarning, classifyUploadError } from "./classify.js";
export { RulePauses, processRulePauses } from "./rule-pauses.js";
