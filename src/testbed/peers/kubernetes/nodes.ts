// core/v1 nodes: list (field selectors metadata.name, spec.unschedulable), get, PATCH (strategic merge, JSON merge,
// JSON patch: how cordon and taints are written) and PUT.
import type { ApiRequest, ApiResponse, Cluster } from "./api.js";
import { listAnswer, objectAnswer } from "./lists.js";
import { methodNotAllowed, notFound } from "./status.js";
import { patchObject, replaceObject } from "./updates.js";

const target = { kind: "nodes", resource: "nodes", group: "", objectKind: "Node" } as const;
const shape = { resource: "nodes", apiVersion: "v1", listKind: "NodeList", selectableFields: ["metadata.name", "spec.unschedulable"], watch: { kind: "nodes" as const } };

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
      return objectAnswer(request, cluster, "nodes", patchObject(request, cluster, target));
    case "PUT":
      return objectAnswer(request, cluster, "nodes", replaceObject(request, cluster, target));
    default:
      throw methodNotAllowed();
  }
}
