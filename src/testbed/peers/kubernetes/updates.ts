// PATCH and PUT of a stored object, shared by the resources that allow them: patch application, the optimistic
// concurrency check on metadata.resourceVersion (409), immutable identity fields (422), and dryRun.
import { isDryRun, requireObjectBody, type ApiRequest, type Cluster } from "./api.js";
import type { KubeObject } from "./objects.js";
import { applyPatch, patchTypeOf } from "./patch.js";
import { conflict, invalid, notFound } from "./status.js";
import type { ResourceKind } from "./store.js";

interface Target {
  readonly kind: ResourceKind;
  readonly resource: string;
  readonly group: string;
  readonly objectKind: string;
}

function checkIdentity(target: Target, current: KubeObject, next: KubeObject): void {
  if (next.metadata?.name !== current.metadata.name) {
    throw invalid(target.objectKind, current.metadata.name, [{ field: "metadata.name", message: `Invalid value: "${String(next.metadata?.name)}": field is immutable` }], target.group);
  }
  if (next.metadata.uid !== undefined && next.metadata.uid !== current.metadata.uid) {
    throw invalid(target.objectKind, current.metadata.name, [{ field: "metadata.uid", message: `Invalid value: "${next.metadata.uid}": field is immutable` }], target.group);
  }
  if (next.metadata.resourceVersion !== undefined && next.metadata.resourceVersion !== current.metadata.resourceVersion) {
    throw conflict(target.resource, current.metadata.name, target.group);
  }
}

function currentOrNotFound(request: ApiRequest, cluster: Cluster, target: Target): KubeObject {
  const current = cluster.store.get(target.kind, request.namespace, request.name ?? "");
  if (!current) throw notFound(target.resource, request.name ?? "", target.group);
  return current;
}

/** Applies the request's patch to the stored object; returns what is (or, with dryRun, would be) stored. */
export function patchObject(request: ApiRequest, cluster: Cluster, target: Target): KubeObject {
  const current = currentOrNotFound(request, cluster, target);
  const patched = applyPatch(patchTypeOf(request.contentType), current, request.body) as KubeObject;
  patched.apiVersion = current.apiVersion;
  patched.kind = current.kind;
  checkIdentity(target, current, patched);
  patched.metadata.resourceVersion = current.metadata.resourceVersion;
  if (isDryRun(request)) return patched;
  return cluster.store.replace(target.kind, patched);
}

/** PUT: replaces the stored object with the body (resourceVersion, when given, must be the current one). */
export function replaceObject(request: ApiRequest, cluster: Cluster, target: Target): KubeObject {
  const current = currentOrNotFound(request, cluster, target);
  const next = requireObjectBody(request) as unknown as KubeObject;
  next.metadata = { ...(next.metadata ?? {}) };
  checkIdentity(target, current, next);
  next.metadata.resourceVersion = current.metadata.resourceVersion;
  next.metadata.namespace = current.metadata.namespace;
  next.apiVersion = current.apiVersion;
  next.kind = current.kind;
  if (isDryRun(request)) return next;
  return cluster.store.replace(target.kind, next);
}
