// The read-only resources the peer serves for clients' checks: apps/v1 DaemonSets (kubectl drain looks up a
// DaemonSet pod's controller), policy/v1 PodDisruptionBudgets (status computed live) and core/v1 namespaces.
import type { ApiRequest, ApiResponse, Cluster } from "./api.js";
import { listAnswer, objectAnswer, type ListShape } from "./lists.js";
import type { KubeObject } from "./objects.js";
import { methodNotAllowed, notFound } from "./status.js";

function readOnly(
  request: ApiRequest,
  cluster: Cluster,
  resource: string,
  group: string,
  objects: () => KubeObject[],
  listShape: Omit<ListShape, "resource" | "selectableFields">,
): ApiResponse {
  if (request.method !== "GET") throw methodNotAllowed();
  if (request.subresource !== undefined) throw notFound(resource, `${request.name}/${request.subresource}`, group);
  const all = objects();
  if (request.name === undefined) {
    return listAnswer(
      request,
      cluster,
      { resource, ...listShape, selectableFields: ["metadata.name", "metadata.namespace"] },
      all,
    );
  }
  const found = all.find((o) => o.metadata.name === request.name);
  if (!found) throw notFound(resource, request.name, group);
  return objectAnswer(request, cluster, resource, found);
}

export function handleDaemonSets(request: ApiRequest, cluster: Cluster): ApiResponse {
  return readOnly(request, cluster, "daemonsets", "apps", () => cluster.store.list("daemonsets", request.namespace), {
    apiVersion: "apps/v1",
    listKind: "DaemonSetList",
    watch: { kind: "daemonsets" },
  });
}

export function handlePodDisruptionBudgets(request: ApiRequest, cluster: Cluster): ApiResponse {
  const live = (): KubeObject[] =>
    cluster.store.list("poddisruptionbudgets", request.namespace).map((pdb) => cluster.budgets.withLiveStatus(pdb));
  return readOnly(request, cluster, "poddisruptionbudgets", "policy", live, {
    apiVersion: "policy/v1",
    listKind: "PodDisruptionBudgetList",
    watch: { kind: "poddisruptionbudgets", view: (pdb) => cluster.budgets.withLiveStatus(pdb) },
  });
}

export function handleNamespaces(request: ApiRequest, cluster: Cluster): ApiResponse {
  if (request.namespace !== undefined) throw notFound("namespaces", request.namespace);
  const namespaces = (): KubeObject[] =>
    cluster.store.namespaces().map(({ name, uid, creationTimestamp }) => ({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name, uid, resourceVersion: "1", creationTimestamp, labels: { "kubernetes.io/metadata.name": name } },
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    }));
  return readOnly(request, cluster, "namespaces", "", namespaces, { apiVersion: "v1", listKind: "NamespaceList" });
}
