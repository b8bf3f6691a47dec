// What a request is in the API server's terms (its RequestInfo): a resource request's verb (get, list, watch, create,
// update, patch, delete, deletecollection), resource and subresource, namespace and name; or a non-resource path.
// Pure: fault rules match on it and the request log records it.
import { parseResourcePath } from "./resource-path.js";

export interface RequestInfo {
  /** True for /api/v1/... and /apis/{group}/{version}/... paths that name a resource. */
  readonly isResourceRequest: boolean;
  /** Kubernetes verb for resource requests; the lower-case HTTP method otherwise. */
  readonly verb: string;
  /** API group ("" for core); undefined for non-resource requests. */
  readonly apiGroup?: string;
  /** "pods", or "pods/eviction" with the subresource. */
  readonly resource?: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly path: string;
}

function resourceVerb(method: string, named: boolean, query: URLSearchParams): string {
  switch (method) {
    case "GET":
    case "HEAD": {
      const watch = query.get("watch");
      if (watch === "true" || watch === "1") return "watch";
      return named ? "get" : "list";
    }
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return named ? "delete" : "deletecollection";
    default:
      return method.toLowerCase();
  }
}

/** The RequestInfo of `method` on `pathname` with `query`, as the API server's RequestInfoFactory derives it. */
export function requestInfoOf(method: string, pathname: string, query: URLSearchParams): RequestInfo {
  const target = parseResourcePath(pathname);
  if (!target || target.resource === "")
    return { isResourceRequest: false, verb: method.toLowerCase(), path: pathname };
  const named = target.name !== undefined && target.name !== "";
  return {
    isResourceRequest: true,
    verb: resourceVerb(method, named, query),
    apiGroup: target.group,
    resource: target.subresource ? `${target.resource}/${target.subresource}` : target.resource,
    ...(target.namespace !== undefined ? { namespace: target.namespace } : {}),
    ...(named ? { name: target.name } : {}),
    path: pathname,
  };
}
