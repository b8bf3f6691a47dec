// The local Logs Ingestion peer's public surface (tests, the demo and `sef-testbed emulate logs-ingestion`).
export {
  startLogsIngestionEmulator,
  defaultLocalRuleId,
  logsIngestionApiVersion,
  logsIngestionAudience,
  maxRequestBodyBytes,
  type LogsIngestionEmulator,
  type LogsIngestionEmulatorOptions,
  type LogsIngestionRequestStats,
  type LogsIngestionDrops,
} from "./server.js";
export { azureRuleLimits, RuleWindow, type RuleLimits } from "./rule-limits.js";
export { keepDeclaredColumns, fitsColumnType, type DeclaredColumn } from "./stream-declaration.js";
export { FaultQueue, parseFaultSpec, type Fault } from "./faults.js";
