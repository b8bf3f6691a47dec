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
} from "./server.js";
export { FaultQueue, parseFaultSpec, type Fault } from "./faults.js";
