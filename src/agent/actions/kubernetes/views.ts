// Pure translation between the Kubernetes API's JSON and the action's values: the few Node and Pod fields it
// reads (hand-typed views, not the generated models), request bodies, and what an eviction's answer means.
import { parseRetryAfterMs } from "@sef/retry/retry-after.js";
import type { NodePatch, NodeView } from "./plan.js";
import { podViewOf, type PodObject, type PodView } from "./pods.js";
import type { ApiAnswer, StatusBody } from "./api-request.js";

export type NodeEventType = "Normal" | "Warning";

/** A Node as the action reads it, with what a guarded patch needs. */
export type NodeRead = NodeView & { resourceVersion: string; uid: string; labels: Record<string, string> };

/**
 * What became of one eviction request: accepted; refused by a PodDisruptionBudget (429 whose Status names a budget);
 * throttled (429 without a budget: API Priority and Fairness, to be retried after `retryAfterMs`); pod already gone
 * (404); or another answer (403, 500, …) with its status.
 */
export type EvictionOutcome =
  | { kind: "evicted" }
  | { kind: "pdb"; message: string }
  | { kind: "throttled"; retryAfterMs: number; message: string }
  | { kind: "gone" }
  | { kind: "error"; status: number; message: string };

/** A throttling 429's wait: its Retry-After (or the Status's retryAfterSeconds), else 1 s, within [0.2 s, 60 s]. */
export const throttleBoundsMs = { min: 200, fallback: 1_000, max: 60_000 } as const;

interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  ownerReferences?: Array<{ kind: string; controller?: boolean }>;
}

export interface NodeJson {
  metadata?: ObjectMeta;
  spec?: {
    providerID?: string;
    unschedulable?: boolean;
    taints?: Array<{ key: string; value?: string; effect: string; timeAdded?: string }>;
  };
}

/** A pod as the API serves it (the fields the drain reads: pods.ts). */
export type PodJson = PodObject;

export function nodeView(node: NodeJson): NodeRead {
  return {
    name: node.metadata?.name ?? "",
    uid: node.metadata?.uid ?? "",
    resourceVersion: node.metadata?.resourceVersion ?? "",
    labels: { ...(node.metadata?.labels ?? {}) },
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

export function podView(pod: PodJson): PodView {
  return podViewOf(pod);
}

/** The JSON merge patch of a NodePatch: the whole taint list, `unschedulable`, annotations (null removes), guarded by resourceVersion. */
export function nodeMergePatch(patch: NodePatch, resourceVersion: string | undefined): object {
  return {
    metadata: {
      annotations: patch.annotations,
      ...(patch.labels !== undefined ? { labels: patch.labels } : {}),
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
    },
    spec: {
      taints: patch.taints,
      ...(patch.unschedulable !== undefined ? { unschedulable: patch.unschedulable } : {}),
    },
  };
}

/** DeleteOptions with the grace period and, when the pod's uid is known, the uid precondition (never another pod). */
export function deleteOptions(pod: Pick<PodView, "uid">, gracePeriodSeconds: number): object {
  return { gracePeriodSeconds, ...(pod.uid !== "" ? { preconditions: { uid: pod.uid } } : {}) };
}

/** A policy/v1 Eviction of the pod: a pod recreated under its name (another uid) is refused with 409, not evicted. */
export function evictionBody(pod: Pick<PodView, "namespace" | "name" | "uid">, gracePeriodSeconds: number): object {
  return {
    apiVersion: "policy/v1",
    kind: "Eviction",
    metadata: { name: pod.name, namespace: pod.namespace },
    deleteOptions: deleteOptions(pod, gracePeriodSeconds),
  };
}

/** A core/v1 Event on the Node, reported by sef. */
export function nodeEventBody(
  node: { name: string; uid: string },
  reason: string,
  message: string,
  type: NodeEventType,
  now: Date,
): object {
  const at = now.toISOString();
  return {
    metadata: { generateName: `${node.name}.sef.`, namespace: "default" },
    involvedObject: { apiVersion: "v1", kind: "Node", name: node.name, uid: node.uid },
    reason,
    message,
    type,
    count: 1,
    firstTimestamp: at,
    lastTimestamp: at,
    source: { component: "sef", host: node.name },
    reportingComponent: "sef",
    reportingInstance: node.name,
  };
}

/** Whether a 429's Status names a PodDisruptionBudget: a DisruptionBudget cause (JSON `reason`), or its message says so. */
export function namesDisruptionBudget(status: StatusBody): boolean {
  const causes = status.details?.causes ?? [];
  return (
    causes.some((c) => c.reason === "DisruptionBudget" || c.type === "DisruptionBudget") ||
    /disruption budget/i.test(status.message ?? "")
  );
}

/** What an eviction's answer means (see EvictionOutcome); `nowMs` reads an HTTP-date Retry-After. */
export function evictionOutcomeOf(answer: ApiAnswer, nowMs: number): EvictionOutcome {
  const status = (answer.body ?? {}) as StatusBody;
  const message = status.message ?? `HTTP ${answer.status}`;
  if (answer.status >= 200 && answer.status < 300) return { kind: "evicted" };
  // 404: gone; 409: the uid precondition failed (the pod was replaced by another of the same name): this one is gone.
  if (answer.status === 404 || answer.status === 409) return { kind: "gone" };
  if (answer.status !== 429) return { kind: "error", status: answer.status, message };
  if (namesDisruptionBudget(status)) return { kind: "pdb", message };
  const hintMs =
    parseRetryAfterMs(answer.header("retry-after"), nowMs, throttleBoundsMs.max) ??
    secondsToMs(status.details?.retryAfterSeconds);
  const retryAfterMs = Math.min(
    throttleBoundsMs.max,
    Math.max(throttleBoundsMs.min, hintMs ?? throttleBoundsMs.fallback),
  );
  return { kind: "throttled", retryAfterMs, message };
}

function secondsToMs(seconds: number | undefined): number | undefined {
  return typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/** A coordination.k8s.io/v1 Lease as the drain slots read it. */
export interface LeaseView {
  name: string;
  resourceVersion: string;
  holderIdentity: string;
  leaseDurationSeconds: number;
  /** spec.renewTime (else acquireTime) in epoch ms; 0 when neither is set. */
  renewTimeMs: number;
}

export interface LeaseJson {
  metadata?: { name?: string; resourceVersion?: string };
  spec?: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string };
}

export function leaseView(lease: LeaseJson): LeaseView {
  const spec = lease.spec ?? {};
  const renew = Date.parse(spec.renewTime ?? spec.acquireTime ?? "");
  return {
    name: lease.metadata?.name ?? "",
    resourceVersion: lease.metadata?.resourceVersion ?? "",
    holderIdentity: spec.holderIdentity ?? "",
    leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
    renewTimeMs: Number.isNaN(renew) ? 0 : renew,
  };
}

/** A MicroTime as the API server takes it: RFC 3339 with six fractional digits, UTC. */
export function microTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/Z$/, "000Z"); // milliseconds, then three zero digits
}

/** The Lease body of a slot: held by `holder` (renewed now), or free (no holder) when `holder` is "". */
export function leaseBody(
  namespace: string,
  name: string,
  holder: string,
  leaseDurationSeconds: number,
  nowMs: number,
  resourceVersion?: string,
): object {
  const now = microTime(nowMs);
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name, namespace, ...(resourceVersion !== undefined ? { resourceVersion } : {}) },
    spec: holder === "" ? {} : { holderIdentity: holder, leaseDurationSeconds, acquireTime: now, renewTime: now },
  };
}
