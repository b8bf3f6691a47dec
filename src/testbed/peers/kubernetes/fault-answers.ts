// The answers of fault rules, written as the API server writes them: API Priority and Fairness's 429 (plain text, not
// a Status, with Retry-After), RBAC's 403 Forbidden, a 500 InternalError, or a given Status; and the APF
// classification headers the API server puts on every request it classified.
import type { ApiResponse } from "./api.js";
import type { FaultAnswer } from "./faults.js";
import type { RequestInfo } from "./request-info.js";
import { failure } from "./status.js";

/**
 * The UIDs of the FlowSchema and PriorityLevelConfiguration every request is classified into (the API server sends
 * UIDs, not names; these stand for the `service-accounts` flow schema and the `workload-low` priority level).
 */
export const flowSchemaUid = "5c7b3d9e-1f4a-4b8c-9d2e-3a6f8b1c4d70";
export const priorityLevelUid = "8e2a6c41-7d3b-4f9a-b5c8-0d1e2f3a4b5c";

/** What the API server sets on every response to a request APF classified (all but failed authentication). */
export const apfHeaders: Readonly<Record<string, string>> = {
  "X-Kubernetes-PF-FlowSchema-UID": flowSchemaUid,
  "X-Kubernetes-PF-PriorityLevel-UID": priorityLevelUid,
};

/** The body of APF's rejection: Go's http.Error text, newline included. */
export const throttledBody = "Too many requests, please try again later.\n";
export const defaultForbiddenUser = "system:serviceaccount:sef-system:sef";
export const defaultInternalErrorMessage = "etcdserver: leader changed";

/** RBAC's wording: `User "u" cannot create resource "pods/eviction" in API group "" in the namespace "apps"`. */
function forbiddenReason(info: RequestInfo, user: string): string {
  const scope = info.namespace !== undefined ? `in the namespace "${info.namespace}"` : "at the cluster scope";
  return `User "${user}" cannot ${info.verb} resource "${info.resource ?? ""}" in API group "${info.apiGroup ?? ""}" ${scope}`;
}

function forbidden(info: RequestInfo, user: string): ApiResponse {
  const [resource = ""] = (info.resource ?? "").split("/");
  const qualified = info.apiGroup ? `${resource}.${info.apiGroup}` : resource;
  const subject = info.name !== undefined ? `${qualified} "${info.name}"` : qualified;
  const details = {
    ...(info.name !== undefined ? { name: info.name } : {}),
    ...(info.apiGroup ? { group: info.apiGroup } : {}),
    kind: resource,
  };
  return {
    code: 403,
    body: failure(403, "Forbidden", `${subject} is forbidden: ${forbiddenReason(info, user)}`, details),
  };
}

/** The response a fault answers `info` with. */
export function faultResponse(answer: FaultAnswer, info: RequestInfo): ApiResponse {
  switch (answer.kind) {
    case "throttle":
      return {
        code: 429,
        body: throttledBody,
        headers: { "Retry-After": String(answer.retryAfterSeconds ?? 1), "X-Content-Type-Options": "nosniff" },
      };
    case "forbidden":
      return forbidden(info, answer.user ?? defaultForbiddenUser);
    case "internal-error": {
      const message = answer.message ?? defaultInternalErrorMessage;
      return {
        code: 500,
        body: failure(500, "InternalError", `Internal error occurred: ${message}`, { causes: [{ message }] }),
      };
    }
    case "status": {
      const retry =
        answer.retryAfterSeconds !== undefined && answer.retryAfterSeconds > 0
          ? { retryAfterSeconds: answer.retryAfterSeconds }
          : undefined;
      return { code: answer.code, body: failure(answer.code, answer.reason, answer.message, retry) };
    }
  }
}
