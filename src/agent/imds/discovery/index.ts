// IMDS endpoint discovery: the public surface used by start-up (resolver, settings) and by tests (the pure parsers).
export {
  EndpointDiscovery,
  type EndpointMemory,
  type EndpointSnapshot,
  type RememberedEndpoint,
} from "./endpoint-discovery.js";
export { endpointMemoryIn } from "./endpoint-memory.js";
export { imdsDiscoverySettingsSchema, defaultImdsDiscoverySettings, type ImdsDiscoverySettings } from "./settings.js";
export { resolveImdsEndpoint, endpointUrl, type ResolvedEndpoint } from "./resolver.js";
export type { DiscoveryFailure, DiscoveryFailureReason, DiscoverySource } from "./failure.js";
