// Request paths to answers: discovery documents, OpenAPI v3 and health endpoints, then
// /api/v1[/namespaces/{ns}]/{resource}[/{name}[/{subresource}]] and the same under /apis/{group}/{version}, each
// resource to its handler; anything else is the API server's 404 Status.
import type { ApiRequest, ApiResponse, Cluster, ResourceHandler } from "./api.js";

import { apiGroup, apiGroupList, apiResourceList, apiVersions, serverVersion } from "./discovery.js";
import { handleCoreEvents, handleEventsV1 } from "./events.js";
import { handleLeases } from "./leases.js";
import { handleNodes } from "./nodes.js";
import { openApiAnswer } from "./openapi.js";
import { handlePods } from "./pods.js";
import { methodNotAllowed, pathNotFound } from "./status.js";
import { handleDaemonSets, handleNamespaces, handlePodDisruptionBudgets } from "./workloads.js";

const handlers: Readonly<Record<string, ResourceHandler>> = {
  "v1/nodes": handleNodes,
  "v1/pods": handlePods,
  "v1/events": handleCoreEvents,
  "v1/namespaces": handleNamespaces,
  "apps/v1/daemonsets": handleDaemonSets,
  "coordination.k8s.io/v1/leases": handleLeases,
  "policy/v1/poddisruptionbudgets": handlePodDisruptionBudgets,
  "events.k8s.io/v1/events": handleEventsV1,
};

const namespacedResources = new Set([
  "v1/pods",
  "v1/events",
  "apps/v1/daemonsets",
  "policy/v1/poddisruptionbudgets",
  "events.k8s.io/v1/events",
  "coordination.k8s.io/v1/leases",
]);

/** Discovery and health answers (GET only), or undefined for other paths. */
export function discoveryAnswer(method: string, pathname: string, serverAddress: string): ApiResponse | undefined {
  const path = pathname.replace(/\/+$/, "") || "/";
  const document = ((): unknown => {
    if (path === "/version") return serverVersion;
    if (path === "/api") return apiVersions(serverAddress);
    if (path === "/apis") return apiGroupList();
    if (path === "/healthz" || path === "/readyz" || path === "/livez") return "ok";
    if (path.startsWith("/openapi/v3")) return openApiAnswer(path);
    const groupVersion = /^\/api\/(v1)$/.exec(path)?.[1] ?? /^\/apis\/([^/]+\/[^/]+)$/.exec(path)?.[1];
    if (groupVersion) return apiResourceList(groupVersion);
    const group = /^\/apis\/([^/]+)$/.exec(path)?.[1];
    return group ? apiGroup(group) : undefined;
  })();
  if (document === undefined) return undefined;
  if (method !== "GET" && method !== "HEAD") throw methodNotAllowed();
  return { code: 200, body: document };
}

export function route(request: ApiRequest, cluster: Cluster): ApiResponse {
  const key = `${request.group ? `${request.group}/` : ""}${request.version}/${request.resource}`;
  const handler = handlers[key];
  if (!handler) throw pathNotFound();
  if (request.namespace !== undefined && !namespacedResources.has(key)) throw pathNotFound();
  return handler(request, cluster);
}
