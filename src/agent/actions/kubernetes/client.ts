// The Kubernetes API as the kubernetes action uses it (I/O): Node read, list and JSON merge patch, the pods of a node,
// policy/v1 evictions, pod deletion, coordination.k8s.io Leases, core/v1 Events — plain JSON requests (api-request.ts) with
// client-node's credential handling (credentials.ts), not its generated API. Answers become values; one deadline each.
import type { NodePatch } from "./plan.js";
import type { PodView } from "./pods.js";
import { ApiTransport, errorOf, KubeApiError } from "./api-request.js";
import { loadKubeEndpoint } from "./credentials.js";
import {
  deleteOptions,
  evictionBody,
  evictionOutcomeOf,
  leaseView,
  type LeaseJson,
  type LeaseView,
  nodeEventBody,
  nodeMergePatch,
  nodeView,
  podView,
  type EvictionOutcome,
  type NodeEventType,
  type NodeJson,
  type NodeRead,
  type PodJson,
} from "./views.js";

export { KubeApiError };
export type { EvictionOutcome, LeaseView, NodeEventType, NodeRead };

export interface KubeApi {
  readNode(name: string): Promise<NodeRead>;
  /** Nodes matching a label selector (`agentpool=nodepool1`; "" = all). */
  listNodes(labelSelector: string): Promise<NodeRead[]>;
  /** JSON merge patch of taints (the whole list), `unschedulable` and annotations (null removes), guarded by resourceVersion. */
  patchNode(name: string, patch: NodePatch, resourceVersion?: string): Promise<void>;
  /** Pods scheduled on the node (all namespaces, field selector spec.nodeName; a label selector when not ""). */
  listPods(nodeName: string, labelSelector?: string): Promise<PodView[]>;
  /**
   * policy/v1 Eviction with the given grace period and the pod's uid as precondition; never throws for an HTTP answer
   * (see EvictionOutcome).
   */
  evict(pod: Pick<PodView, "namespace" | "name" | "uid">, gracePeriodSeconds: number): Promise<EvictionOutcome>;
  /** DELETE of the pod with the grace period and its uid as precondition: deleted (true), or gone or replaced (false). */
  deletePod(pod: Pick<PodView, "namespace" | "name" | "uid">, gracePeriodSeconds: number): Promise<boolean>;
  /** A coordination.k8s.io/v1 Lease, or undefined when there is none. */
  readLease(namespace: string, name: string): Promise<LeaseView | undefined>;
  /**
   * Creates the Lease (no resourceVersion) or replaces it (guarded by the resourceVersion read): false when another
   * writer came first (409).
   */
  writeLease(namespace: string, name: string, body: object, resourceVersion?: string): Promise<boolean>;
  /** A core/v1 Event about the Node (namespace "default", source component "sef"). */
  nodeEvent(node: { name: string; uid: string }, reason: string, message: string, type: NodeEventType): Promise<void>;
  /** Closes the kept-alive connection. */
  close(): void;
}

export interface KubeClientOptions {
  /** Kubeconfig path; absent = in-cluster (service-account token and CA, KUBERNETES_SERVICE_HOST/PORT). */
  kubeconfig?: string;
  /** In-cluster: prefix of /var/run/secrets/kubernetes.io/serviceaccount ("" in a pod). */
  inClusterPathPrefix?: string;
  requestTimeoutMs: number;
  /** User-Agent of every request (default "sef"). */
  userAgent?: string;
  env?: NodeJS.ProcessEnv;
}

const mergePatch = "application/merge-patch+json";
const enc = encodeURIComponent;

/** Reads the credentials (kubeconfig or in-cluster) and builds the API; no request is sent yet. */
export async function createKubeApi(options: KubeClientOptions): Promise<KubeApi> {
  const endpoint = await loadKubeEndpoint({
    ...(options.kubeconfig !== undefined ? { kubeconfig: options.kubeconfig } : {}),
    inClusterPathPrefix: options.inClusterPathPrefix ?? "",
    execTimeoutMs: options.requestTimeoutMs,
    ...(options.env ? { env: options.env } : {}),
  });
  const api = new ApiTransport(endpoint, options.requestTimeoutMs, options.userAgent ?? "sef");
  // Before the first notice: one request opens the kept-alive TLS connection, runs an exec plugin and reads a token
  // file, and runs this path once (the first notice's taint then waits for none of it). Its failure is the steps' to see.
  void api.send({ method: "GET", path: "/version" }).catch(() => undefined);
  return {
    async readNode(name) {
      return nodeView(await api.json<NodeJson>({ method: "GET", path: `/api/v1/nodes/${enc(name)}` }));
    },
    async listNodes(labelSelector) {
      const query = labelSelector === "" ? "" : `?labelSelector=${enc(labelSelector)}`;
      return (
        (await api.json<{ items?: NodeJson[] }>({ method: "GET", path: `/api/v1/nodes${query}` })).items ?? []
      ).map(nodeView);
    },
    async patchNode(name, patch, resourceVersion) {
      await api.json({
        method: "PATCH",
        path: `/api/v1/nodes/${enc(name)}`,
        body: nodeMergePatch(patch, resourceVersion),
        contentType: mergePatch,
      });
    },
    async listPods(nodeName, labelSelector = "") {
      const labels = labelSelector === "" ? "" : `&labelSelector=${enc(labelSelector)}`;
      const path = `/api/v1/pods?fieldSelector=${enc(`spec.nodeName=${nodeName}`)}${labels}`;
      return ((await api.json<{ items?: PodJson[] }>({ method: "GET", path })).items ?? []).map(podView);
    },
    async evict(pod, gracePeriodSeconds) {
      const path = `/api/v1/namespaces/${enc(pod.namespace)}/pods/${enc(pod.name)}/eviction`;
      return evictionOutcomeOf(
        await api.send({ method: "POST", path, body: evictionBody(pod, gracePeriodSeconds) }),
        Date.now(),
      );
    },
    async deletePod(pod, gracePeriodSeconds) {
      const path = `/api/v1/namespaces/${enc(pod.namespace)}/pods/${enc(pod.name)}`;
      const answer = await api.send({ method: "DELETE", path, body: deleteOptions(pod, gracePeriodSeconds) });
      if (answer.status >= 200 && answer.status < 300) return true;
      if (answer.status === 404 || answer.status === 409) return false;
      throw errorOf(answer, `DELETE ${path}`);
    },
    async readLease(namespace, name) {
      const path = `/apis/coordination.k8s.io/v1/namespaces/${enc(namespace)}/leases/${enc(name)}`;
      const answer = await api.send({ method: "GET", path });
      if (answer.status === 404) return undefined;
      if (answer.status >= 200 && answer.status < 300) return leaseView(answer.body as LeaseJson);
      throw errorOf(answer, `GET ${path}`);
    },
    async writeLease(namespace, name, body, resourceVersion) {
      const leases = `/apis/coordination.k8s.io/v1/namespaces/${enc(namespace)}/leases`;
      const call =
        resourceVersion === undefined
          ? ({ method: "POST", path: leases, body } as const)
          : ({ method: "PUT", path: `${leases}/${enc(name)}`, body } as const);
      const answer = await api.send(call);
      if (answer.status >= 200 && answer.status < 300) return true;
      if (answer.status === 409) return false;
      throw errorOf(answer, `${call.method} ${call.path}`);
    },
    async nodeEvent(node, reason, message, type) {
      await api.json({
        method: "POST",
        path: "/api/v1/namespaces/default/events",
        body: nodeEventBody(node, reason, message, type, new Date()),
      });
    },
    close() {
      api.close();
    },
  };
}
