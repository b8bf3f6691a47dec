// PATCH and PUT of a stored object, shared by the resources that allow them: patch application, the optimistic
// concurrency check on metadata.resourceVersion (409; 422 when a PUT must carry one), immutable identity fields
// (422), deletion fields only deletion changes, no new finalizers once deleting, removal when the last finalizer of
// an object deleted with grace 0 goes, and dryRun.
import { isDryRun, requireObjectBody, type ApiRequest, type Cluster } from "./api.js";
import type { KubeObject } from "./objects.js";
import { applyPatch, patchTypeOf } from "./patch.js";
import { conflict, invalid, notFound, type StatusError } from "./status.js";
import type { ResourceKind } from "./store.js";

export interface UpdateTarget {
  readonly kind: ResourceKind;
  readonly resource: string;
  readonly group: string;
  readonly objectKind: string;
  /** A PUT must carry metadata.resourceVersion (the strategy does not allow unconditional updates): 422 otherwise. */
  readonly requireResourceVersion?: boolean;
  /** Validates the object about to be stored (throws the API server's 422 or 400). */
  readonly validate?: (next: KubeObject, current: KubeObject) => void;
  /** Extra condition before an update that empties a deleting object's finalizers removes it (pods: terminal). */
  readonly mayDeleteDuringUpdate?: (next: KubeObject) => boolean;
}

function checkIdentity(target: UpdateTarget, current: KubeObject, next: KubeObject): void {
  if (next.metadata?.name !== current.metadata.name) {
    throw invalid(
      target.objectKind,
      current.metadata.name,
      [{ field: "metadata.name", message: `Invalid value: "${String(next.metadata?.name)}": field is immutable` }],
      target.group,
    );
  }
  if (next.metadata.uid !== undefined && next.metadata.uid !== current.metadata.uid) {
    throw invalid(
      target.objectKind,
      current.metadata.name,
      [{ field: "metadata.uid", message: `Invalid value: "${next.metadata.uid}": field is immutable` }],
      target.group,
    );
  }
  if (
    next.metadata.resourceVersion !== undefined &&
    next.metadata.resourceVersion !== current.metadata.resourceVersion
  ) {
    throw conflict(target.resource, current.metadata.name, target.group);
  }
}

function currentOrNotFound(request: ApiRequest, cluster: Cluster, target: UpdateTarget): KubeObject {
  const current = cluster.store.get(target.kind, request.namespace, request.name ?? "");
  if (!current) throw notFound(target.resource, request.name ?? "", target.group);
  return current;
}

/** ValidateObjectMetaUpdate's rule: no finalizer may be added once deletion has begun. */
function checkNoNewFinalizers(target: UpdateTarget, current: KubeObject, next: KubeObject): void {
  if (current.metadata.deletionTimestamp === undefined) return;
  const added = [...new Set(next.metadata.finalizers ?? [])]
    .filter((f) => !(current.metadata.finalizers ?? []).includes(f))
    .sort();
  if (added.length === 0) return;
  const found = `[]string{${added.map((f) => JSON.stringify(f)).join(", ")}}`;
  throw invalid(
    target.objectKind,
    current.metadata.name,
    [
      {
        field: "metadata.finalizers",
        reason: "FieldValueForbidden",
        message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${found}`,
      },
    ],
    target.group,
  );
}

/** The generic store's rule: an update that removes the last finalizer of an object deleted with grace 0 deletes it. */
export function shouldDeleteDuringUpdate(current: KubeObject, next: KubeObject): boolean {
  if ((next.metadata.finalizers ?? []).length > 0 || (current.metadata.finalizers ?? []).length === 0) return false;
  if (current.metadata.deletionTimestamp === undefined) return false;
  const grace = next.metadata.deletionGracePeriodSeconds;
  return grace === undefined || grace === 0;
}

/** Stores `next` in place of `current` (dryRun: only answers), keeping what only deletion may change. */
function commit(
  request: ApiRequest,
  cluster: Cluster,
  target: UpdateTarget,
  current: KubeObject,
  next: KubeObject,
): KubeObject {
  for (const field of ["deletionTimestamp", "deletionGracePeriodSeconds"] as const) {
    if (current.metadata[field] === undefined) delete next.metadata[field];
    else (next.metadata as unknown as Record<string, unknown>)[field] = current.metadata[field];
  }
  checkNoNewFinalizers(target, current, next);
  target.validate?.(next, current);
  if (isDryRun(request)) return next;
  if (shouldDeleteDuringUpdate(current, next) && (target.mayDeleteDuringUpdate?.(next) ?? true)) {
    cluster.store.remove(target.kind, current.metadata.namespace, current.metadata.name);
    return next;
  }
  return cluster.store.replace(target.kind, next);
}

/** Applies the request's patch to the stored object; returns what is (or, with dryRun, would be) stored. */
export function patchObject(request: ApiRequest, cluster: Cluster, target: UpdateTarget): KubeObject {
  const current = currentOrNotFound(request, cluster, target);
  const patched = applyPatch(patchTypeOf(request.contentType), current, request.body) as KubeObject;
  patched.apiVersion = current.apiVersion;
  patched.kind = current.kind;
  checkIdentity(target, current, patched);
  patched.metadata.resourceVersion = current.metadata.resourceVersion;
  return commit(request, cluster, target, current, patched);
}

/** The 422 of an update without metadata.resourceVersion where the strategy requires one. */
function resourceVersionRequired(target: UpdateTarget, name: string): StatusError {
  return invalid(
    target.resource,
    name,
    [{ field: "metadata.resourceVersion", message: "Invalid value: 0x0: must be specified for an update" }],
    target.group,
  );
}

/** PUT: replaces the stored object with the body (resourceVersion, when given, must be the current one). */
export function replaceObject(request: ApiRequest, cluster: Cluster, target: UpdateTarget): KubeObject {
  const current = currentOrNotFound(request, cluster, target);
  const next = requireObjectBody(request) as unknown as KubeObject;
  next.metadata = { ...(next.metadata ?? {}) };
  checkIdentity(target, current, next);
  if (target.requireResourceVersion && !next.metadata.resourceVersion)
    throw resourceVersionRequired(target, current.metadata.name);
  next.metadata.resourceVersion = current.metadata.resourceVersion;
  next.metadata.namespace = current.metadata.namespace;
  next.apiVersion = current.apiVersion;
  next.kind = current.kind;
  return commit(request, cluster, target, current, next);
}
