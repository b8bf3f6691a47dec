// Public surface of the IMDS simulator (`sef-testbed simulate`): start a simulated IMDS, load and list scenarios.
export {
  startSimulator,
  simVmHeader,
  defaultSimulatorHost,
  type Simulator,
  type SimulatorOptions,
  type SimStatus,
  type ApprovalEntry,
} from "./server.js";
export { loadScenario, listScenarios, listScenarioNames, builtInScenarioDir } from "./scenarios.js";
export {
  parseScenario,
  ScenarioError,
  type Scenario,
  type ScenarioInput,
  type ScenarioEvent,
  type ScenarioStep,
  type Fault,
  type ExpectedRecord,
} from "./scenario-schema.js";
export { Timeline, type LiveEvent, type DocumentChange } from "./timeline.js";
export { renderDocument, formatRfc1123, type ImdsDocument, type ImdsEvent } from "./document.js";
export { computeFor, type ComputeMetadata } from "./compute.js";
export {
  scheduledEventsApiVersions,
  latestScheduledEventsApiVersion,
  type ScheduledEventsApiVersion,
} from "./api-versions.js";
