// The Kubernetes API as the kubernetes action uses it (I/O): the official @kubernetes/client-node, imported only when
// the `kubernetes` section is configured. Node read, list and JSON merge patch, pods of a node, policy/v1 evictions, Events.
// Answers become values (Node/Pod views, eviction outcomes); every request has a deadline.
import type { NodePatch, NodeView } from "./plan.js";
import { podViewOf, type PodView } from "./pods.js";

/**
 * What became of one eviction request: accepted, refused by a PodDisruptionBudget (429 whose Status names one),
 * throttled (429 without a budget, e.g. API Priority and Fairness, with its Retry-After), pod already gone (404), or
 * another error (403, 500, ...).
 */
export type EvictionOutcome =
  | { kind: "evicted" }
  | { kind: "pdb"; message: string }
  | { kind: "throttled"; retryAfterMs: number; message: string }
  | { kind: "gone" }
  | { kind: "error"; status: number; message: string };

export type NodeEventType = "Normal" | "Warning";

export interface KubeApi {
  readNode(name: string): Promise<NodeView & { resourceVersion: string; uid: string }>;
  /** Nodes matching a label selector (`agentpool=nodepool1`; "" = all). */
  listNodes(labelSelector: string): Promise<Array<NodeView & { resourceVersion: string; uid: string }>>;
  /** JSON merge patch of taints (the whole list), `unschedulable` and annotations (null removes), guarded by resourceVersion. */
  patchNode(name: string, patch: NodePatch, resourceVersion?: string): Promise<void>;
  /** Pods scheduled on the node (all namespaces, field selector spec.nodeName). */
  listPods(nodeName: string): Promise<PodView[]>;
  /** policy/v1 Eviction with the given grace period. */
  evict(pod: Pick<PodView, "namespace" | "name">, gracePeriodSeconds: number): Promise<EvictionOutcome>;
  /** A core/v1 Event about the Node (namespace "default", source component "sef"). */
  nodeEvent(node: { name: string; uid: string }, reason: string, message: string, type: NodeEventType): Promise<void>;
}

/** An API answer other than 2xx (or a network failure: status 0). */
export class KubeApiError extends Error {
  override readonly name = "KubeApiError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface KubeClientOptions {
  /** Kubeconfig path; absent = in-cluster (service-account token and CA, KUBERNETES_SERVICE_HOST/PORT). */
  kubeconfig?: string;
  /** In-cluster: prefix of /var/run/secrets/kubernetes.io/serviceaccount ("" in a pod). */
  inClusterPathPrefix?: string;
  requestTimeoutMs: number;
}

/** Loads @kubernetes/client-node (dynamic import: an agent without the section never loads it) and builds the API. */
export async function createKubeApi(options: KubeClientOptions): Promise<KubeApi> {
  const k8s = await import("@kubernetes/client-node");
  const config = new k8s.KubeConfig();
  if (options.kubeconfig !== undefined) config.loadFromFile(options.kubeconfig);
  else config.loadFromCluster(options.inClusterPathPrefix || undefined);
  const core = config.makeApiClient(k8s.CoreV1Api);
  const deadline: import("@kubernetes/client-node").ObservableMiddleware = {
    pre: (request) => {
      request.setSignal(AbortSignal.timeout(options.requestTimeoutMs));
      return new k8s.Observable(Promise.resolve(request));
    },
    post: (response) => new k8s.Observable(Promise.resolve(response)),
  };
  const withDeadline = { middleware: [deadline], middlewareMergeStrategy: "append" as const };
  const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch, withDeadline);

  return {
    async readNode(name) {
      return nodeView(name, await call(() => core.readNode({ name }, withDeadline)));
    },
    async listNodes(labelSelector) {
      const list = await call(() => core.listNode(labelSelector === "" ? {} : { labelSelector }, withDeadline));
      return list.items.map((node) => nodeView(node.metadata?.name ?? "", node));
    },
    async patchNode(name, patch, resourceVersion) {
      const body = {
        metadata: { annotations: patch.annotations, ...(resourceVersion !== undefined ? { resourceVersion } : {}) },
        spec: { taints: patch.taints, ...(patch.unschedulable !== undefined ? { unschedulable: patch.unschedulable } : {}) },
      };
      await call(() => core.patchNode({ name, body }, mergePatch));
    },
    async listPods(nodeName) {
      const list = await call(() => core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` }, withDeadline));
      return list.items.map(podView);
    },
    async evict(pod, gracePeriodSeconds) {
      const body = {
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name: pod.name, namespace: pod.namespace },
        deleteOptions: { gracePeriodSeconds },
      };
      try {
        await call(() => core.createNamespacedPodEviction({ name: pod.name, namespace: pod.namespace, body }, withDeadline));
        return { kind: "evicted" };
      } catch (err) {
        const e = err as KubeApiError;
        if (e.status === 429) return { kind: "pdb", message: e.message };
        if (e.status === 404) return { kind: "gone" };
        return { kind: "error", status: e.status, message: e.message };
      }
    },
    async nodeEvent(node, reason, message, type) {
      const body = nodeEventBody(node, reason, message, type, new Date());
      await call(() => core.createNamespacedEvent({ namespace: "default", body }, withDeadline));
    },
  };
}

type ClientNode = import("@kubernetes/client-node").V1Node;
type ClientPod = import("@kubernetes/client-node").V1Pod;

/** The node as the action reads it. */
function nodeView(name: string, node: ClientNode): Awaited<ReturnType<KubeApi["readNode"]>> {
  return {
    name,
    uid: node.metadata?.uid ?? "",
    resourceVersion: node.metadata?.resourceVersion ?? "",
    providerID: node.spec?.providerID ?? "",
    unschedulable: node.spec?.unschedulable === true,
    taints: (node.spec?.taints ?? []).map((t) => ({
      key: t.key,
      ...(t.value !== undefined ? { value: t.value } : {}),
      effect: t.effect,
      ...(t.timeAdded !== undefined ? { timeAdded: new Date(t.timeAdded).toISOString() } : {}),
    })),
    annotations: { ...(node.metadata?.annotations ?? {}) },
  };
}

/** A pod as the drain reads it (pods.ts owns the mapping). */
function podView(pod: ClientPod): Awaited<ReturnType<KubeApi["listPods"]>>[number] {
  return podViewOf(pod);
}

/** A core/v1 Event on the Node, reported by sef. */
function nodeEventBody(node: { name: string; uid: string }, reason: string, message: string, type: NodeEventType, now: Date) {
  return {
    metadata: { generateName: `${node.name}.sef.`, namespace: "default" },
    involvedObject: { apiVersion: "v1", kind: "Node", name: node.name, uid: node.uid },
    reason,
    message,
    type,
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component: "sef", host: node.name },
    reportingComponent: "sef",
    reportingInstance: node.name,
  };
}

/** Runs one API call; a non-2xx answer or a network failure becomes a KubeApiError with the status (0 for no answer). */
async function call<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const status = typeof code === "number" ? code : 0;
    throw new KubeApiError(status, describe(err, status));
  }
}

function describe(err: unknown, status: number): string {
  const body = (err as { body?: unknown }).body;
  let message: string | undefined;
  if (typeof body === "string") {
    try {
      message = (JSON.parse(body) as { message?: string }).message;
    } catch {
      message = body.slice(0, 300);
    }
  } else if (typeof body === "object" && body !== null) message = (body as { message?: string }).message;
  const text = message ?? (err instanceof Error ? err.message : String(err));
  return status === 0 ? `no answer from the Kubernetes API: ${text}` : `HTTP ${status}: ${text}`;
}
