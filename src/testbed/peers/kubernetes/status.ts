// meta/v1 Status objects, the error (and eviction success) bodies of the real API server, with their HTTP codes.

export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: StatusCause[];
    retryAfterSeconds?: number;
  };
  code: number;
}

/** What a handler answers with when a request fails. */
export class StatusError extends Error {
  override readonly name = "StatusError";
  constructor(readonly status: Status) {
    super(status.message);
  }
}

export function failure(code: number, reason: string, message: string, details?: Status["details"]): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

export function success(code: number): Status {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code };
}

/** `pods "x" not found` (resource is the plural, group "" for core). */
export function notFound(resource: string, name: string, group = ""): StatusError {
  const qualified = group ? `${resource}.${group}` : resource;
  return new StatusError(
    failure(404, "NotFound", `${qualified} "${name}" not found`, { name, ...(group ? { group } : {}), kind: resource }),
  );
}

export function alreadyExists(resource: string, name: string, group = ""): StatusError {
  const qualified = group ? `${resource}.${group}` : resource;
  return new StatusError(
    failure(409, "AlreadyExists", `${qualified} "${name}" already exists`, {
      name,
      ...(group ? { group } : {}),
      kind: resource,
    }),
  );
}

/** 409 Conflict: `Operation cannot be fulfilled on leases.coordination.k8s.io "x": <reason>`. */
export function conflictWith(resource: string, name: string, reason: string, group = ""): StatusError {
  const qualified = group ? `${resource}.${group}` : resource;
  return new StatusError(
    failure(409, "Conflict", `Operation cannot be fulfilled on ${qualified} "${name}": ${reason}`, {
      name,
      ...(group ? { group } : {}),
      kind: resource,
    }),
  );
}

/**
 * The 409 of a failed delete precondition, worded by the storage layer: `StorageError: invalid object, Code: 4, Key:
 * /registry/<resource>/<namespace>/<name>, ..., AdditionalErrorMsg: Precondition failed: UID in precondition: ...`.
 */
export function preconditionFailed(
  resource: string,
  namespace: string | undefined,
  name: string,
  field: "UID" | "ResourceVersion",
  wanted: string,
  actual: string,
  group = "",
): StatusError {
  const key = `/registry/${resource}/${namespace ? `${namespace}/` : ""}${name}`;
  const detail = `Precondition failed: ${field} in precondition: ${wanted}, ${field} in object meta: ${actual}`;
  return conflictWith(
    resource,
    name,
    `StorageError: invalid object, Code: 4, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: ${detail}`,
    group,
  );
}

/** The optimistic-concurrency 409: the object changed since the client read it. */
export function conflict(resource: string, name: string, group = ""): StatusError {
  return conflictWith(
    resource,
    name,
    "the object has been modified; please apply your changes to the latest version and try again",
    group,
  );
}

export function badRequest(message: string): StatusError {
  return new StatusError(failure(400, "BadRequest", message));
}

/** 422 with one cause per invalid field, worded like the API server's validation. */
export function invalid(kind: string, name: string, causes: StatusCause[], group = ""): StatusError {
  const qualified = group ? `${kind}.${group}` : kind;
  const summary = causes.map((cause) => `${cause.field}: ${cause.message}`).join(", ");
  const message = `${qualified} "${name}" is invalid: ${causes.length > 1 ? `[${summary}]` : summary}`;
  return new StatusError(
    failure(422, "Invalid", message, {
      name,
      ...(group ? { group } : {}),
      kind,
      causes: causes.map((c) => ({
        reason: c.reason ?? "FieldValueInvalid",
        message: c.message,
        ...(c.field ? { field: c.field } : {}),
      })),
    }),
  );
}

export function methodNotAllowed(): StatusError {
  return new StatusError(
    failure(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"),
  );
}

const patchMediaTypes =
  "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json";
const bodyMediaTypes = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/** 415, listing what the API server accepts for a patch (`forPatch`) or for other bodies. */
export function unsupportedMediaType(forPatch = false): StatusError {
  const accepted = forPatch ? patchMediaTypes : bodyMediaTypes;
  return new StatusError(
    failure(
      415,
      "UnsupportedMediaType",
      `the body of the request was in an unknown format - accepted media types include: ${accepted}`,
    ),
  );
}

export function pathNotFound(): StatusError {
  return new StatusError(failure(404, "NotFound", "the server could not find the requested resource"));
}

export const unauthorizedStatus: Status = failure(401, "Unauthorized", "Unauthorized");
