// core/v1 pods: list in a namespace or across all (field selectors spec.nodeName, status.phase, ...), get, PATCH,
// graceful DELETE (a uid precondition checked); the eviction subresource is evictions.ts.
import { isDryRun, requestedGracePeriodSeconds, type ApiRequest, type ApiResponse, type Cluster } from "./api.js";
import { handleEviction } from "./evictions.js";
import { listAnswer, objectAnswer } from "./lists.js";
import { PodTerminator } from "./pod-lifecycle.js";
import { methodNotAllowed, notFound, preconditionFailed } from "./status.js";
import type { KubeObject } from "./objects.js";
import { patchObject, type UpdateTarget } from "./updates.js";

/** The pod registry's extra condition: emptying a deleting pod's finalizers removes it once it is terminal or unbound. */
function terminalOrUnbound(pod: KubeObject): boolean {
  const phase = (pod.status as { phase?: string } | undefined)?.phase;
  return !(pod.spec as { nodeName?: string } | undefined)?.nodeName || phase === "Succeeded" || phase === "Failed";
}

const target: UpdateTarget = {
  kind: "pods",
  resource: "pods",
  group: "",
  objectKind: "Pod",
  mayDeleteDuringUpdate: terminalOrUnbound,
};
const shape = {
  resource: "pods",
  apiVersion: "v1",
  listKind: "PodList",
  selectableFields: [
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
  ],
  // The API server compares strconv.FormatBool(pod.Spec.HostNetwork).
  fieldDefaults: { "spec.hostNetwork": "false" },
  watch: { kind: "pods" as const },
};

function deletePod(request: ApiRequest, cluster: Cluster): ApiResponse {
  const pod = cluster.store.get("pods", request.namespace, request.name ?? "");
  if (!pod) throw notFound("pods", request.name ?? "");
  // DeleteOptions.preconditions.uid: another pod under the name (recreated) is a 409, as the storage layer answers.
  const uid = (request.body as { preconditions?: { uid?: string } } | undefined)?.preconditions?.uid;
  if (uid !== undefined && uid !== pod.metadata.uid)
    throw preconditionFailed("pods", pod.metadata.namespace, pod.metadata.name, "UID", uid, pod.metadata.uid);
  if (isDryRun(request)) return { code: 200, body: pod };
  const grace = PodTerminator.gracePeriodOf(pod, requestedGracePeriodSeconds(request, request.body));
  const after = cluster.terminator.beginDeletion(pod, grace);
  return { code: 200, body: after ?? pod };
}

export function handlePods(request: ApiRequest, cluster: Cluster): ApiResponse {
  if (request.subresource === "eviction") return handleEviction(request, cluster);
  if (request.subresource !== undefined) throw notFound("pods", `${request.name}/${request.subresource}`);
  if (request.name === undefined) {
    if (request.method === "GET")
      return listAnswer(request, cluster, shape, cluster.store.list("pods", request.namespace));
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
