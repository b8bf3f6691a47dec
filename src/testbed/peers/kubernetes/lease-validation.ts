// Pure decoding and validation of coordination.k8s.io/v1 Leases as the API server does it: unknown fields (400
// under fieldValidation=Strict, a Warning header otherwise), wrong types and MicroTimes that are not exactly
// RFC 3339 with six fractional digits (400), then ValidateLease's rules (422): a DNS-subdomain name,
// leaseDurationSeconds > 0, leaseTransitions >= 0. strategy and preferredHolder are dropped, as a 1.33 server does
// with the CoordinatedLeaderElection gate off.
import type { KubeObject } from "./objects.js";
import { isPlainObject } from "./objects.js";
import { badRequest, type StatusCause, type StatusError } from "./status.js";

const objectMetaFields = new Set([
  "name",
  "generateName",
  "namespace",
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
]);
const leaseSpecFields: Readonly<Record<string, "string" | "int32" | "microtime">> = {
  holderIdentity: "string",
  leaseDurationSeconds: "int32",
  acquireTime: "microtime",
  renewTime: "microtime",
  leaseTransitions: "int32",
  strategy: "string",
  preferredHolder: "string",
};
/** MicroTime's layout: RFC 3339 with exactly six fractional digits. */
const microTimeLayout = "2006-01-02T15:04:05.000000Z07:00";
const microTimePattern = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})(Z|[+-]\d{2}:\d{2})$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function cannotHandle(reason: string): StatusError {
  return badRequest(`Lease in version "v1" cannot be handled as a Lease: ${reason}`);
}

/** Fields of a Lease body that the Lease type does not have, as strict decoding names them (`spec.foo`). */
export function unknownLeaseFields(body: Record<string, unknown>): string[] {
  const unknown = Object.keys(body).filter((k) => !["apiVersion", "kind", "metadata", "spec"].includes(k));
  if (isPlainObject(body.metadata))
    unknown.push(
      ...Object.keys(body.metadata)
        .filter((k) => !objectMetaFields.has(k))
        .map((k) => `metadata.${k}`),
    );
  if (isPlainObject(body.spec))
    unknown.push(
      ...Object.keys(body.spec)
        .filter((k) => !(k in leaseSpecFields))
        .map((k) => `spec.${k}`),
    );
  return unknown;
}

/** A MicroTime as the API server stores it (UTC, six digits), or the 400 Go's time.Parse gives. */
export function normalizeMicroTime(value: string): string {
  const match = microTimePattern.exec(value);
  if (!match) {
    const fraction = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(.*)$/.exec(value);
    const detail = fraction
      ? `cannot parse ${JSON.stringify(fraction[1])} as ".000000"`
      : `cannot parse ${JSON.stringify(value)} as "2006"`;
    throw cannotHandle(`parsing time ${JSON.stringify(value)} as ${JSON.stringify(microTimeLayout)}: ${detail}`);
  }
  const [, seconds = "", micros = "", zone = ""] = match;
  const epochMs = Date.parse(`${seconds}${zone}`);
  if (Number.isNaN(epochMs)) throw cannotHandle(`parsing time ${JSON.stringify(value)}: month or day out of range`);
  return `${new Date(epochMs).toISOString().slice(0, 19)}.${micros}Z`;
}

function decodeSpecField(field: string, value: unknown): unknown {
  const type = leaseSpecFields[field];
  if (value === null || type === undefined) return value;
  const goType = type === "int32" ? "int32" : type === "microtime" ? "v1.MicroTime" : "string";
  const jsonType = Array.isArray(value) ? "array" : typeof value === "object" ? "object" : typeof value;
  const fits =
    type === "int32" ? Number.isInteger(value) && Math.abs(value as number) < 2 ** 31 : typeof value === "string";
  if (!fits)
    throw cannotHandle(
      `json: cannot unmarshal ${jsonType} into Go struct field LeaseSpec.spec.${field} of type ${goType}`,
    );
  return type === "microtime" ? normalizeMicroTime(value as string) : value;
}

/**
 * The Lease a create or update body decodes to, and the warnings of unknown fields; `fieldValidation` Strict makes
 * them a 400, Ignore drops them silently (default Warn).
 */
export function decodeLease(
  body: Record<string, unknown>,
  fieldValidation: string | null,
): { lease: KubeObject; warnings: string[] } {
  if (body.apiVersion !== undefined && body.apiVersion !== "coordination.k8s.io/v1")
    throw badRequest(
      `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (coordination.k8s.io/v1)`,
    );
  if (body.kind !== undefined && body.kind !== "Lease")
    throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (Lease)`);
  const unknown = unknownLeaseFields(body);
  if (fieldValidation === "Strict" && unknown.length > 0)
    throw cannotHandle(`strict decoding error: ${unknown.map((f) => `unknown field ${JSON.stringify(f)}`).join(", ")}`);
  const spec: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(isPlainObject(body.spec) ? body.spec : {})) {
    if (field in leaseSpecFields && value !== null && field !== "strategy" && field !== "preferredHolder")
      spec[field] = decodeSpecField(field, value);
  }
  const metadata = { ...(isPlainObject(body.metadata) ? body.metadata : {}) } as unknown as KubeObject["metadata"];
  const warnings = fieldValidation === "Ignore" ? [] : unknown.map((f) => `unknown field ${JSON.stringify(f)}`);
  return { lease: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata, spec }, warnings };
}

/** ValidateLease: the causes of a 422 (empty when the Lease is valid). */
export function leaseCauses(lease: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = lease.metadata.name ?? "";
  if (name === "")
    causes.push({
      field: "metadata.name",
      reason: "FieldValueRequired",
      message: "Required value: name or generateName is required",
    });
  else if (!dnsSubdomain.test(name) || name.length > 253) {
    causes.push({
      field: "metadata.name",
      message: `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    });
  }
  const spec = (lease.spec ?? {}) as { leaseDurationSeconds?: number; leaseTransitions?: number };
  if (spec.leaseDurationSeconds !== undefined && spec.leaseDurationSeconds <= 0)
    causes.push({
      field: "spec.leaseDurationSeconds",
      message: `Invalid value: ${spec.leaseDurationSeconds}: must be greater than 0`,
    });
  if (spec.leaseTransitions !== undefined && spec.leaseTransitions < 0)
    causes.push({
      field: "spec.leaseTransitions",
      message: `Invalid value: ${spec.leaseTransitions}: must be greater than or equal to 0`,
    });
  return causes;
}

/** One Warning header per warning, as the API server writes them: `299 - "unknown field \"spec.foo\""`. */
export function warningHeaders(warnings: readonly string[]): Record<string, string[]> {
  return warnings.length === 0 ? {} : { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`) };
}
