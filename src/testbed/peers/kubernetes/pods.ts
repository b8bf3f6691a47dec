// core/v1 pods: list in a namespace or across all (field selectors spec.nodeName, status.phase, ...), get, PATCH,
// graceful DELETE; the eviction subresource is evictions.ts.
import { isDryRun, requestedGracePeriodSeconds, type ApiRequest, type ApiResponse, type Cluster } from "./api.js";
import { handleEviction } from "./evictions.js";
import { listAnswer, objectAnswer } from "./lists.js";
import { PodTerminator } from "./pod-lifecycle.js";
import { methodNotAllowed, notFound } from "./status.js";
import { patchObject } from "./updates.js";

const target = { kind: "pods", resource: "pods", group: "", objectKind: "Pod" } as const;
const shape = {
  resource: "pods",
  apiVersion: "v1",
  listKind: "PodList",
  selectableFields: ["metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
  watch: { kind: "pods" as const },
};

function deletePod(request: ApiRequest, cluster: Cluster): ApiResponse {
  const pod = cluster.store.get("pods", request.namespace, request.name ?? "");
  if (!pod) throw notFound("pods", request.name ?? "");
  if (isDryRun(request)) return { code: 200, body: pod };
  const grace = PodTerminator.gracePeriodOf(pod, requestedGracePeriodSeconds(request, request.body));
  const after = cluster.terminator.beginDeletion(pod, grace);
  return { code: 200, body: after ?? pod };
}

export function handlePods(request: ApiRequest, cluster: Cluster): ApiResponse {
  if (request.subresource === "eviction") return handleEviction(request, cluster);
  if (request.subresource !== undefined) throw notFound("pods", `${request.name}/${request.subresource}`);
  if (request.name === undefined) {
    if (request.method === "GET") return listAnswer(request, cluster, shape, cluster.store.list("pods", request.namespace));
    throw methodNotAllowed();
  }
  switch (request.method) {
    case "GET": {
      const pod = cluster.store.get("pods", request.namespace, request.name);
      if (!pod) throw notFound("pods", request.name);
      return objectAnswer(request, cluster, "pods", pod);
    }
    case "PATCH":
      return objectAnswer(request, cluster, "pods", patchObject(request, cluster, target));
    case "DELETE":
      return deletePod(request, cluster);
    default:
      throw methodNotAllowed();
  }
}
