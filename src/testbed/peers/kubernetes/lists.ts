// List and get answers shared by every resource: field and label selectors, limit/continue paging, typed lists (items
// without apiVersion/kind, as the API server sends them) or a Table when kubectl asks for one, and watch requests.
import type { ApiRequest, ApiResponse, Cluster } from "./api.js";
import type { KubeObject } from "./objects.js";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from "./selectors.js";
import { badRequest, failure, StatusError } from "./status.js";
import type { ResourceKind } from "./store.js";
import { tableOf, wantsTable } from "./tables.js";
import { defaultWatchTimeoutMs, type WatchRequest } from "./watch.js";

export interface ListShape {
  /** Plural resource name (for tables). */
  readonly resource: string;
  readonly apiVersion: string;
  /** e.g. "PodList". */
  readonly listKind: string;
  /** Fields the API server lets a fieldSelector use for this resource. */
  readonly selectableFields: readonly string[];
  /** What a field reads as when the object leaves it out (booleans: "false"); otherwise "". */
  readonly fieldDefaults?: Readonly<Record<string, string>>;
  /** The stored kind a watch follows, and the client's view of it (default: as stored); none = watch refused. */
  readonly watch?: { readonly kind: ResourceKind; readonly view?: (object: KubeObject) => KubeObject };
}

function decodeContinue(token: string): number {
  const offset = Number(Buffer.from(token, "base64url").toString("utf8"));
  if (!Number.isInteger(offset) || offset < 0) throw badRequest(`continue key is not valid: ${token}`);
  return offset;
}

function watchAnswer(
  request: ApiRequest,
  shape: ListShape,
  matches: (o: KubeObject) => boolean,
  selected: KubeObject[],
): ApiResponse {
  if (!shape.watch)
    throw new StatusError(
      failure(
        405,
        "MethodNotAllowed",
        `watch is not supported for ${shape.resource} by the sef testbed's Kubernetes peer`,
      ),
    );
  const since = request.query.get("resourceVersion");
  const timeoutSeconds = Number(request.query.get("timeoutSeconds") ?? "0");
  const watch: WatchRequest = {
    kind: shape.watch.kind,
    ...(request.namespace !== undefined ? { namespace: request.namespace } : {}),
    matches,
    view: shape.watch.view ?? ((o) => o),
    ...(since && since !== "0" ? { sinceResourceVersion: Number(since) } : {}),
    initial: selected,
    timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 : defaultWatchTimeoutMs,
    ...(wantsTable(request.accept) ? { tableResource: shape.resource } : {}),
  };
  if (watch.sinceResourceVersion !== undefined && !Number.isInteger(watch.sinceResourceVersion))
    throw badRequest(`invalid resource version: ${since}`);
  return { code: 200, body: undefined, watch };
}

/** Filters, pages and renders `objects` as the list answer the request asked for. */
export function listAnswer(
  request: ApiRequest,
  cluster: Cluster,
  shape: ListShape,
  objects: readonly KubeObject[],
): ApiResponse {
  const fields = parseFieldSelector(request.query.get("fieldSelector") ?? "", shape.selectableFields);
  const labels = parseLabelSelector(request.query.get("labelSelector") ?? "");
  const matches = (o: KubeObject): boolean =>
    matchesFields(o, fields, shape.fieldDefaults) && matchesLabels(o.metadata.labels, labels);
  const selected = objects.filter(matches);
  if (request.query.get("watch") === "true" || request.query.get("watch") === "1")
    return watchAnswer(request, shape, matches, selected);
  const limit = Number(request.query.get("limit") ?? "0");
  const offset = request.query.get("continue") ? decodeContinue(request.query.get("continue") ?? "") : 0;
  const page = limit > 0 ? selected.slice(offset, offset + limit) : selected.slice(offset);
  const remaining = selected.length - offset - page.length;
  const continueToken =
    limit > 0 && remaining > 0 ? Buffer.from(String(offset + page.length)).toString("base64url") : undefined;
  const resourceVersion = cluster.store.currentResourceVersion();
  if (wantsTable(request.accept)) {
    return {
      code: 200,
      body: tableOf(shape.resource, page, cluster.store.clock.wallNowMs(), resourceVersion, continueToken),
    };
  }
  const items = page.map(({ apiVersion: _apiVersion, kind: _kind, ...rest }) => rest);
  const metadata = {
    resourceVersion,
    ...(continueToken ? { continue: continueToken, remainingItemCount: remaining } : {}),
  };
  return { code: 200, body: { kind: shape.listKind, apiVersion: shape.apiVersion, metadata, items } };
}

/** One object, as JSON or as a one-row Table. */
export function objectAnswer(
  request: ApiRequest,
  cluster: Cluster,
  resource: string,
  object: KubeObject,
  code = 200,
): ApiResponse {
  if (request.method === "GET" && wantsTable(request.accept)) {
    return {
      code,
      body: tableOf(resource, [object], cluster.store.clock.wallNowMs(), object.metadata.resourceVersion),
    };
  }
  return { code, body: object };
}
