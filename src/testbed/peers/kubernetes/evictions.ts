// POST pods/{name}/eviction (policy/v1 Eviction; v1beta1 bodies too): the API server's eviction rules. A pod that is
// not Running or already terminating is deleted without a budget check; more than one budget is a 500; a budget that
// allows no disruption (or that the disruption controller has not processed yet) answers 429 TooManyRequests with a
// DisruptionBudget cause; otherwise the pod starts its graceful deletion (deleteOptions.gracePeriodSeconds, else its
// own) and the answer is 201 Success. Every request is written to the eviction log.
import {
  isDryRun,
  requestedGracePeriodSeconds,
  requireObjectBody,
  type ApiRequest,
  type ApiResponse,
  type Cluster,
} from "./api.js";
import type { KubeObject } from "./objects.js";
import { budgetRefusalMessage } from "./pdb.js";
import { PodTerminator } from "./pod-lifecycle.js";
import {
  badRequest,
  failure,
  methodNotAllowed,
  notFound,
  preconditionFailed,
  StatusError,
  success,
  type Status,
} from "./status.js";
import type { EvictionRecord } from "./peer-log.js";

export const budgetRefusal = "Cannot evict pod as it would violate the pod's disruption budget.";

interface EvictionBody {
  metadata?: { name?: string; namespace?: string };
  deleteOptions?: { gracePeriodSeconds?: number; preconditions?: { uid?: string; resourceVersion?: string } };
}

function isReadyRunning(pod: KubeObject): boolean {
  const status = pod.status as { phase?: string; conditions?: { type: string; status: string }[] } | undefined;
  return (
    status?.phase === "Running" && (status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")
  );
}

function canIgnoreBudget(pod: KubeObject): boolean {
  const phase = (pod.status as { phase?: string } | undefined)?.phase;
  return (
    phase === "Succeeded" || phase === "Failed" || phase === "Pending" || pod.metadata.deletionTimestamp !== undefined
  );
}

function validate(request: ApiRequest, body: EvictionBody, pod: KubeObject): void {
  if (body.metadata?.name !== undefined && body.metadata.name !== request.name)
    throw badRequest("name in URL does not match name in Eviction object");
  if (body.metadata?.namespace && body.metadata.namespace !== request.namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  const uid = body.deleteOptions?.preconditions?.uid;
  if (uid !== undefined && uid !== pod.metadata.uid) {
    throw preconditionFailed("pods", pod.metadata.namespace, pod.metadata.name, "UID", uid, pod.metadata.uid);
  }
}

/** The refusal the API server writes when the budget allows no disruption now (429, DisruptionBudget cause). */
function budgetRefusalError(cause: string, retryAfterSeconds = 0): StatusError {
  return new StatusError(
    failure(429, "TooManyRequests", budgetRefusal, {
      causes: [{ reason: "DisruptionBudget", message: cause }],
      ...(retryAfterSeconds > 0 ? { retryAfterSeconds } : {}),
    }),
  );
}

/** More than one budget: a Status the eviction handler returns as its result (code 500, no reason). */
const severalBudgets: Status = {
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: "Failure",
  message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
  code: 500,
};

/** The budget refusal, or undefined when the eviction may go ahead (the API server's order of checks). */
function budgetCheck(pod: KubeObject, cluster: Cluster): { refusal?: StatusError; budget?: string } {
  if (canIgnoreBudget(pod)) return {};
  const budgets = cluster.budgets.budgetsFor(pod);
  if (budgets.length > 1) return { refusal: new StatusError(severalBudgets) };
  const [budget] = budgets;
  if (!budget) return {};
  const namespace = budget.metadata.namespace ?? "default";
  const name = budget.metadata.name;
  const status = cluster.budgets.statusOf(budget);
  const blocked = cluster.budgets.isBlocked(namespace, name);
  if (!isReadyRunning(pod) && !blocked && status.currentHealthy >= status.desiredHealthy && status.desiredHealthy > 0)
    return { budget: name };
  // The disruption controller has not caught up with the budget's spec: 429 with Retry-After 10.
  if (cluster.budgets.isProcessing(namespace, name))
    return {
      refusal: budgetRefusalError(`The disruption budget ${name} is still being processed by the server.`, 10),
      budget: name,
    };
  if (status.disruptionsAllowed > 0) return { budget: name };
  return { refusal: budgetRefusalError(budgetRefusalMessage(name, status)), budget: name };
}

function record(cluster: Cluster, entry: Omit<EvictionRecord, "atMs" | "monotonicMs">): void {
  cluster.log.eviction(entry);
  cluster.logger.debug(entry, "eviction");
}

/** The log's outcome for a refused eviction: 429 from a budget is `blocked`, 404 `not-found`, others `refused`. */
function refusedOutcome(code: number): EvictionRecord["outcome"] {
  if (code === 429) return "blocked";
  return code === 404 ? "not-found" : "refused";
}

export function handleEviction(request: ApiRequest, cluster: Cluster): ApiResponse {
  if (request.method !== "POST") throw methodNotAllowed();
  const namespace = request.namespace ?? "default";
  const podName = request.name ?? "";
  const race = cluster.evictionRaces.get(`${namespace}/${podName}`);
  cluster.evictionRaces.delete(`${namespace}/${podName}`);
  race?.();
  const pod = cluster.store.get("pods", namespace, podName);
  const nodeName = (pod?.spec as { nodeName?: string } | undefined)?.nodeName;
  const dryRun = isDryRun(request);
  const entry = { namespace, pod: podName, ...(nodeName ? { nodeName } : {}), dryRun };
  let budget: string | undefined;
  try {
    const body = requireObjectBody(request) as EvictionBody;
    if (!pod) throw notFound("pods", podName);
    validate(request, body, pod);
    const check = budgetCheck(pod, cluster);
    budget = check.budget;
    if (check.refusal) throw check.refusal;
    const grace = PodTerminator.gracePeriodOf(pod, requestedGracePeriodSeconds(request, body.deleteOptions));
    if (!dryRun) cluster.terminator.beginDeletion(pod, grace);
    record(cluster, {
      ...entry,
      outcome: "evicted",
      code: 201,
      ...(budget ? { budget } : {}),
      gracePeriodSeconds: grace,
    });
    return { code: 201, body: success(201) };
  } catch (error) {
    if (error instanceof StatusError)
      record(cluster, {
        ...entry,
        outcome: refusedOutcome(error.status.code),
        code: error.status.code,
        ...(budget ? { budget } : {}),
      });
    throw error;
  }
}
