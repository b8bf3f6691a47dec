// coordination.k8s.io/v1 Leases, namespaced: create (name or generateName), list in a namespace or across all (and
// watch), get, PUT (metadata.resourceVersion required, 409 when stale; creates a missing Lease, as the Lease strategy
// allows), PATCH (a stale resourceVersion in the patch is a 409) and DELETE (preconditions checked; a Success Status
// naming the uid). Bodies are decoded and validated by lease-validation.ts.
import { isDryRun, requireObjectBody, type ApiRequest, type ApiResponse, type Cluster } from "./api.js";
import { decodeLease, leaseCauses, warningHeaders } from "./lease-validation.js";
import { listAnswer, objectAnswer } from "./lists.js";
import { randomNameSuffix, type KubeObject } from "./objects.js";
import {
  alreadyExists,
  badRequest,
  invalid,
  methodNotAllowed,
  notFound,
  preconditionFailed,
  type StatusError,
} from "./status.js";
import { patchObject, replaceObject, type UpdateTarget } from "./updates.js";

const group = "coordination.k8s.io";
const shape = {
  resource: "leases",
  apiVersion: "coordination.k8s.io/v1",
  listKind: "LeaseList",
  selectableFields: ["metadata.name", "metadata.namespace"],
  watch: { kind: "leases" as const },
};

/** Normalises `next` in place as the API server decodes it (types, MicroTimes, unknown fields dropped) and validates it. */
function validateLease(next: KubeObject): void {
  next.spec = decodeLease({ spec: next.spec }, "Ignore").lease.spec;
  for (const key of Object.keys(next)) if (!["apiVersion", "kind", "metadata", "spec"].includes(key)) delete next[key];
  const causes = leaseCauses(next);
  if (causes.length > 0) throw invalid("Lease", next.metadata.name ?? "", causes, group);
}

const target: UpdateTarget = {
  kind: "leases",
  resource: "leases",
  group,
  objectKind: "Lease",
  requireResourceVersion: true,
  validate: validateLease,
};

/** The body decoded as a Lease for `namespace`, with the warnings of its unknown fields. */
function decodeFor(request: ApiRequest, namespace: string): { lease: KubeObject; warnings: string[] } {
  const decoded = decodeLease(requireObjectBody(request), request.query.get("fieldValidation"));
  const { metadata } = decoded.lease;
  if (metadata.namespace && metadata.namespace !== namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  return decoded;
}

function create(
  request: ApiRequest,
  cluster: Cluster,
  namespace: string,
  decoded: { lease: KubeObject; warnings: string[] },
): ApiResponse {
  const {
    uid: _uid,
    resourceVersion: _rv,
    creationTimestamp: _created,
    deletionTimestamp: _deleted,
    deletionGracePeriodSeconds: _grace,
    generation: _generation,
    ...metadata
  } = decoded.lease.metadata;
  const name = metadata.name || (metadata.generateName ? `${metadata.generateName}${randomNameSuffix()}` : "");
  const lease: KubeObject = { ...decoded.lease, metadata: { ...metadata, name, namespace } as KubeObject["metadata"] };
  validateLease(lease);
  if (!cluster.store.hasNamespace(namespace)) throw notFound("namespaces", namespace);
  if (cluster.store.get("leases", namespace, name)) throw alreadyExists("leases", name, group);
  const stored = isDryRun(request) ? lease : cluster.store.create("leases", lease);
  return { code: 201, body: stored, headers: warningHeaders(decoded.warnings) };
}

/** PUT: an update with the current resourceVersion, or the creation of a Lease that does not exist. */
function update(request: ApiRequest, cluster: Cluster, namespace: string): ApiResponse {
  const decoded = decodeFor(request, namespace);
  if (decoded.lease.metadata.name !== undefined && decoded.lease.metadata.name !== request.name)
    throw badRequest(
      "the name of the object (" +
        String(decoded.lease.metadata.name) +
        ") does not match the name on the URL (" +
        String(request.name) +
        ")",
    );
  if (!cluster.store.get("leases", namespace, request.name ?? ""))
    return create(request, cluster, namespace, {
      ...decoded,
      lease: { ...decoded.lease, metadata: { ...decoded.lease.metadata, name: request.name ?? "" } },
    });
  const stored = replaceObject({ ...request, body: decoded.lease }, cluster, target);
  return { code: 200, body: stored, headers: warningHeaders(decoded.warnings) };
}

interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

function preconditionFailure(lease: KubeObject, preconditions: Preconditions | undefined): StatusError | undefined {
  const { namespace, name, uid, resourceVersion } = lease.metadata;
  if (preconditions?.uid !== undefined && preconditions.uid !== uid)
    return preconditionFailed("leases", namespace, name, "UID", preconditions.uid, uid, group);
  if (preconditions?.resourceVersion !== undefined && preconditions.resourceVersion !== resourceVersion) {
    return preconditionFailed(
      "leases",
      namespace,
      name,
      "ResourceVersion",
      preconditions.resourceVersion,
      resourceVersion,
      group,
    );
  }
  return undefined;
}

/** DELETE: removed at once (Leases have no grace period), unless finalizers hold it; Success names the uid. */
function remove(request: ApiRequest, cluster: Cluster, lease: KubeObject): ApiResponse {
  const failed = preconditionFailure(
    lease,
    (request.body as { preconditions?: Preconditions } | undefined)?.preconditions,
  );
  if (failed) throw failed;
  const { namespace, name, uid } = lease.metadata;
  if ((lease.metadata.finalizers ?? []).length > 0) {
    if (lease.metadata.deletionTimestamp !== undefined || isDryRun(request)) return { code: 200, body: lease };
    return {
      code: 200,
      body: cluster.store.replace("leases", {
        ...lease,
        metadata: { ...lease.metadata, deletionTimestamp: cluster.store.nowIso(), deletionGracePeriodSeconds: 0 },
      }),
    };
  }
  if (!isDryRun(request)) cluster.store.remove("leases", namespace, name);
  return {
    code: 200,
    body: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      details: { name, group, kind: "leases", uid },
    },
  };
}

function named(request: ApiRequest, cluster: Cluster, namespace: string, name: string): ApiResponse {
  if (request.method === "PUT") return update(request, cluster, namespace);
  const lease = cluster.store.get("leases", namespace, name);
  if (!lease) throw notFound("leases", name, group);
  switch (request.method) {
    case "GET":
      return objectAnswer(request, cluster, "leases", lease);
    case "PATCH":
      return { code: 200, body: patchObject(request, cluster, target) };
    case "DELETE":
      return remove(request, cluster, lease);
    default:
      throw methodNotAllowed();
  }
}

/** Answers a Leases request; a write that changed a Lease is logged (PeerLog.leaseWrites) with its holder after it. */
export function handleLeases(request: ApiRequest, cluster: Cluster): ApiResponse {
  const before =
    request.name && request.namespace ? cluster.store.get("leases", request.namespace, request.name) : undefined;
  const answer = leaseAnswer(request, cluster);
  if (request.method === "GET" || isDryRun(request)) return answer;
  const written = (answer.body as KubeObject | undefined)?.kind === "Lease" ? (answer.body as KubeObject) : before;
  if (written !== undefined) cluster.log.leaseWrite(written, request.method);
  return answer;
}

function leaseAnswer(request: ApiRequest, cluster: Cluster): ApiResponse {
  if (request.subresource !== undefined) throw notFound("leases", `${request.name}/${request.subresource}`, group);
  const namespace = request.namespace;
  if (request.name !== undefined) {
    if (namespace === undefined) throw notFound("leases", request.name, group);
    return named(request, cluster, namespace, request.name);
  }
  if (request.method === "GET") return listAnswer(request, cluster, shape, cluster.store.list("leases", namespace));
  if (request.method === "POST" && namespace !== undefined)
    return create(request, cluster, namespace, decodeFor(request, namespace));
  throw methodNotAllowed();
}
