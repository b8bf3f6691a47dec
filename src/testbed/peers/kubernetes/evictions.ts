// POST pods/{name}/eviction (policy/v1 Eviction; v1beta1 bodies too): the API server's eviction rules. A pod that is
// not Running or already terminating is deleted without a budget check; more than one budget is a 500; a budget that
// allows no disruption answers 429 TooManyRequests with a DisruptionBudget cause; otherwise the pod starts its
// graceful deletion (deleteOptions.gracePeriodSeconds, else its own) and the answer is 201 Success.
import { isDryRun, requestedGracePeriodSeconds, requireObjectBody, type ApiRequest, type ApiResponse, type Cluster } from "./api.js";
import type { KubeObject } from "./objects.js";
import { budgetRefusalMessage } from "./pdb.js";
import { PodTerminator } from "./pod-lifecycle.js";
import { badRequest, failure, methodNotAllowed, notFound, StatusError, success } from "./status.js";
import { evictionLogLimit, type EvictionRecord } from "./store.js";

export const budgetRefusal = "Cannot evict pod as it would violate the pod's disruption budget.";

interface EvictionBody {
  metadata?: { name?: string; namespace?: string };
  deleteOptions?: { gracePeriodSeconds?: number; preconditions?: { uid?: string; resourceVersion?: string } };
}

function isReadyRunning(pod: KubeObject): boolean {
  const status = pod.status as { phase?: string; conditions?: { type: string; status: string }[] } | undefined;
  return status?.phase === "Running" && (status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

function canIgnoreBudget(pod: KubeObject): boolean {
  const phase = (pod.status as { phase?: string } | undefined)?.phase;
  return phase === "Succeeded" || phase === "Failed" || phase === "Pending" || pod.metadata.deletionTimestamp !== undefined;
}

function validate(request: ApiRequest, body: EvictionBody, pod: KubeObject): void {
  if (body.metadata?.name !== undefined && body.metadata.name !== request.name) throw badRequest("name in URL does not match name in Eviction object");
  if (body.metadata?.namespace && body.metadata.namespace !== request.namespace) throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  const uid = body.deleteOptions?.preconditions?.uid;
  if (uid !== undefined && uid !== pod.metadata.uid) {
    throw new StatusError(failure(409, "Conflict", `Operation cannot be fulfilled on Pod "${pod.metadata.name}": Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pod.metadata.uid}`, { name: pod.metadata.name, kind: "Pod" }));
  }
}

/** The budget refusal, or undefined when the eviction may go ahead. */
function budgetCheck(pod: KubeObject, cluster: Cluster): { refusal?: StatusError; budget?: string } {
  if (canIgnoreBudget(pod)) return {};
  const budgets = cluster.budgets.budgetsFor(pod);
  if (budgets.length > 1) {
    return { refusal: new StatusError(failure(500, "InternalError", "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")) };
  }
  const [budget] = budgets;
  if (!budget) return {};
  const status = cluster.budgets.statusOf(budget);
  const blocked = cluster.budgets.isBlocked(budget.metadata.namespace ?? "default", budget.metadata.name);
  const unhealthyButBudgetMet = !isReadyRunning(pod) && !blocked && status.currentHealthy >= status.desiredHealthy;
  if (status.disruptionsAllowed > 0 || unhealthyButBudgetMet) return { budget: budget.metadata.name };
  const refusal = failure(429, "TooManyRequests", budgetRefusal, { causes: [{ reason: "DisruptionBudget", message: budgetRefusalMessage(budget.metadata.name, status) }] });
  return { refusal: new StatusError(refusal), budget: budget.metadata.name };
}

function record(cluster: Cluster, entry: Omit<EvictionRecord, "atMs">): void {
  if (cluster.store.evictions.length >= evictionLogLimit) cluster.store.evictions.shift();
  cluster.store.evictions.push({ atMs: cluster.store.clock.wallNowMs(), ...entry });
  cluster.logger.debug(entry, "eviction");
}

export function handleEviction(request: ApiRequest, cluster: Cluster): ApiResponse {
  if (request.method !== "POST") throw methodNotAllowed();
  const namespace = request.namespace ?? "default";
  const podName = request.name ?? "";
  const body = requireObjectBody(request) as EvictionBody;
  const pod = cluster.store.get("pods", namespace, podName);
  const dryRun = isDryRun(request);
  if (!pod) {
    record(cluster, { namespace, pod: podName, outcome: "not-found", code: 404, dryRun });
    throw notFound("pods", podName);
  }
  validate(request, body, pod);
  const { refusal, budget } = budgetCheck(pod, cluster);
  if (refusal) {
    const code = refusal.status.code;
    record(cluster, { namespace, pod: podName, outcome: code === 429 ? "blocked" : "refused", code, ...(budget ? { budget } : {}), dryRun });
    throw refusal;
  }
  const grace = PodTerminator.gracePeriodOf(pod, requestedGracePeriodSeconds(request, body.deleteOptions));
  if (!dryRun) cluster.terminator.beginDeletion(pod, grace);
  record(cluster, { namespace, pod: podName, outcome: "evicted", code: 201, ...(budget ? { budget } : {}), gracePeriodSeconds: grace, dryRun });
  return { code: 201, body: success(201) };
}
