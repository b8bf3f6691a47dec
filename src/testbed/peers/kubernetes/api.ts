// The shapes shared by the HTTP layer and the resource handlers: a parsed API request, a response, the cluster the
// handlers act on, and the request-body helpers every write handler uses.
import type { Logger } from "pino";
import type { DisruptionBudgets } from "./budgets.js";
import type { FaultRules } from "./faults.js";
import type { PeerLog } from "./peer-log.js";
import type { PodTerminator } from "./pod-lifecycle.js";
import { badRequest } from "./status.js";
import type { ClusterStore } from "./store.js";
import type { WatchRequest } from "./watch.js";
import type { ResourcePath } from "./resource-path.js";

/** Where a request points: /api/v1 or /apis/{group}/{version}, then [namespaces/{ns}/]{resource}[/{name}[/{sub}]]. */
export interface ApiRequest extends ResourcePath {
  readonly method: string;
  readonly query: URLSearchParams;
  /** Parsed JSON body (undefined when there is none). */
  readonly body: unknown;
  readonly contentType?: string;
  readonly accept: string;
}

export interface ApiResponse {
  readonly code: number;
  /** JSON, or plain text when a string. */
  readonly body: unknown;
  /** Extra response headers (Retry-After, Warning). */
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  /** Set for `?watch=true`: the server streams this watch instead of sending `body`. */
  readonly watch?: WatchRequest;
}

export interface Cluster {
  readonly store: ClusterStore;
  readonly budgets: DisruptionBudgets;
  readonly terminator: PodTerminator;
  readonly faults: FaultRules;
  readonly log: PeerLog;
  readonly logger: Logger;
  /**
   * Races a controller wins before the next eviction of a pod (namespace/name): run as the request arrives, before
   * the API server reads the pod (a StatefulSet pod recreated between a drain's list and its eviction).
   */
  readonly evictionRaces: Map<string, () => void>;
}

export type ResourceHandler = (request: ApiRequest, cluster: Cluster) => ApiResponse;

/** `dryRun=All` on a write: validate and answer, change nothing. */
export function isDryRun(request: ApiRequest): boolean {
  return request.query.getAll("dryRun").includes("All");
}

export function requireObjectBody(request: ApiRequest): Record<string, unknown> {
  const body = request.body;
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw badRequest("the request body must be a JSON object");
  return body as Record<string, unknown>;
}

/** gracePeriodSeconds from DeleteOptions in the body or the query string. */
export function requestedGracePeriodSeconds(request: ApiRequest, deleteOptions: unknown): number | undefined {
  const fromBody = (deleteOptions as { gracePeriodSeconds?: unknown } | undefined)?.gracePeriodSeconds;
  if (typeof fromBody === "number") return fromBody;
  const fromQuery = request.query.get("gracePeriodSeconds");
  return fromQuery !== null && fromQuery !== "" && Number.isInteger(Number(fromQuery)) ? Number(fromQuery) : undefined;
}
