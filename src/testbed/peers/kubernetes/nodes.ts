// core/v1 nodes: list (field selectors metadata.name, spec.unschedulable), get, PATCH (strategic merge, JSON merge,
// JSON patch: how cordon and taints are written) and PUT; every write that changes a node goes to the node-write log.
import { isDryRun, type ApiRequest, type ApiResponse, type Cluster } from "./api.js";
import { listAnswer, objectAnswer } from "./lists.js";
import { methodNotAllowed, notFound } from "./status.js";
import { patchObject, replaceObject } from "./updates.js";

const target = { kind: "nodes", resource: "nodes", group: "", objectKind: "Node" } as const;
const shape = {
  resource: "nodes",
  apiVersion: "v1",
  listKind: "NodeList",
  selectableFields: ["metadata.name", "spec.unschedulable"],
  // The API server compares fmt.Sprint(node.Spec.Unschedulable): an uncordoned node is "false".
  fieldDefaults: { "spec.unschedulable": "false" },
  watch: { kind: "nodes" as const },
};

/** PATCH or PUT, written to the node-write log when it changed the stored node. */
function writeNode(request: ApiRequest, cluster: Cluster, write: typeof patchObject): ApiResponse {
  const before = cluster.store.get("nodes", undefined, request.name ?? "");
  const after = write(request, cluster, target);
  if (before && !isDryRun(request) && after.metadata.resourceVersion !== before.metadata.resourceVersion)
    cluster.log.nodeWrite(before, after, request.method, request.contentType);
  return objectAnswer(request, cluster, "nodes", after);
}

export function handleNodes(request: ApiRequest, cluster: Cluster): ApiResponse {
  if (request.subresource !== undefined) throw notFound("nodes", `${request.name}/${request.subresource}`);
  if (request.name === undefined) {
    if (request.method === "GET") return listAnswer(request, cluster, shape, cluster.store.list("nodes"));
    throw methodNotAllowed();
  }
  switch (request.method) {
    case "GET": {
      const node = cluster.store.get("nodes", undefined, request.name);
      if (!node) throw notFound("nodes", request.name);
      return objectAnswer(request, cluster, "nodes", node);
    }
    case "PATCH":
      return writeNode(request, cluster, patchObject);
    case "PUT":
      return writeNode(request, cluster, replaceObject);
    default:
      throw methodNotAllowed();
  }
}
