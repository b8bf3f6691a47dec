// Where discovery remembers the endpoint that last answered across restarts: the store's meta row `imds-endpoint`
// ({url, source}), reused at the next start while it answers.
import type { MetaValues } from "../../store/meta.js";
import type { EndpointMemory, RememberedEndpoint } from "./endpoint-discovery.js";

const memoryKey = "imds-endpoint";

/** The endpoint memory kept in the store's meta rows (read back as written; endpoint-discovery.ts checks it). */
export function endpointMemoryIn(meta: MetaValues): EndpointMemory {
  return {
    load: () => meta.get<RememberedEndpoint>(memoryKey),
    save: (endpoint) => meta.set(memoryKey, { url: endpoint.url, source: endpoint.source }),
  };
}
