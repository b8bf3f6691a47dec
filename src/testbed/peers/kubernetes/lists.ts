// List and get answers shared by every resource: field and label selectors, limit/continue paging, typed lists (items
// without apiVersion/kind, as the API server sends them) or a Table when kubectl asks for one.
import type { ApiRequest, ApiResponse, Cluster } from "./api.js";
import type { KubeObject } from "./objects.js";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from "./selectors.js";
import { badRequest, failure, StatusError } from "./status.js";
import { tableOf, wantsTable } from "./tables.js";

export interface ListShape {
  /** Plural resource name (for tables). */
  readonly resource: string;
  readonly apiVersion: string;
  /** e.g. "PodList". */
  readonly listKind: string;
  /** Fields the API server lets a fieldSelector use for this resource. */
  readonly selectableFields: readonly string[];
}

function decodeContinue(token: string): number {
  const offset = Number(Buffer.from(token, "base64url").toString("utf8"));
  if (!Number.isInteger(offset) || offset < 0) throw badRequest(`continue key is not valid: ${token}`);
  return offset;
}

/** Filters, pages and renders `objects` as the list answer the request asked for. */
export function listAnswer(request: ApiRequest, cluster: Cluster, shape: ListShape, objects: readonly KubeObject[]): ApiResponse {
  if (request.query.get("watch") === "true" || request.query.get("watch") === "1") {
    throw new StatusError(failure(405, "MethodNotAllowed", "watch is not supported by the sef testbed's Kubernetes peer"));
  }
  const fields = parseFieldSelector(request.query.get("fieldSelector") ?? "", shape.selectableFields);
  const labels = parseLabelSelector(request.query.get("labelSelector") ?? "");
  const selected = objects.filter((o) => matchesFields(o, fields) && matchesLabels(o.metadata.labels, labels));
  const limit = Number(request.query.get("limit") ?? "0");
  const offset = request.query.get("continue") ? decodeContinue(request.query.get("continue") ?? "") : 0;
  const page = limit > 0 ? selected.slice(offset, offset + limit) : selected.slice(offset);
  const remaining = selected.length - offset - page.length;
  const continueToken = limit > 0 && remaining > 0 ? Buffer.from(String(offset + page.length)).toString("base64url") : undefined;
  const resourceVersion = cluster.store.currentResourceVersion();
  if (wantsTable(request.accept)) {
    return { code: 200, body: tableOf(shape.resource, page, cluster.store.clock.wallNowMs(), resourceVersion, continueToken) };
  }
  const items = page.map(({ apiVersion: _apiVersion, kind: _kind, ...rest }) => rest);
  const metadata = { resourceVersion, ...(continueToken ? { continue: continueToken, remainingItemCount: remaining } : {}) };
  return { code: 200, body: { kind: shape.listKind, apiVersion: shape.apiVersion, metadata, items } };
}

/** One object, as JSON or as a one-row Table. */
export function objectAnswer(request: ApiRequest, cluster: Cluster, resource: string, object: KubeObject, code = 200): ApiResponse {
  if (request.method === "GET" && wantsTable(request.accept)) {
    return { code, body: tableOf(resource, [object], cluster.store.clock.wallNowMs(), object.metadata.resourceVersion) };
  }
  return { code, body: object };
}
