// Pure decisions of the kubernetes action: the taint of an event (sef's marks as a whole: marks.ts), when a drain
// starts and ends, the grace period each pod gets, which pods are evicted, and the PDB retry backoff. Plain values
// in and out (the few Node and Pod fields used); the I/O lives in client.ts and node-action.ts.

/** The taint key prefix: one key per EventType, the value is the EventId (see README: telling a planned disruption from a failure). */
export const taintKeyPrefix = "sef.azure.com/scheduled-event-";

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

/** The Node fields the action reads. */
export interface NodeView {
  name: string;
  providerID: string;
  unschedulable: boolean;
  taints: Taint[];
  annotations: Record<string, string>;
}

/** The Pod fields the action reads. */
export interface PodView {
  namespace: string;
  name: string;
  /** Kinds of the owner references marked as controller (e.g. ["DaemonSet"]). */
  controllerKinds: string[];
  annotations: Record<string, string>;
  phase: string;
  /** The pod's own terminationGracePeriodSeconds (Kubernetes defaults it to 30). */
  terminationGracePeriodSeconds: number | undefined;
  hasEmptyDir: boolean;
  /** Already being deleted (deletionTimestamp set). */
  terminating: boolean;
}

export interface EventOnNode {
  EventId: string;
  EventType: string;
  NotBefore: string | null;
}

/** The taint key of an EventType: `sef.azure.com/scheduled-event-<type lower-cased>` (other characters become `-`). */
export function taintKeyFor(eventType: string): string {
  const name = eventType.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40) || "unknown";
  return `${taintKeyPrefix}${name}`;
}

/** A taint value holds at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric (a GUID EventId fits as is). */
export function taintValueFor(eventId: string): string {
  return eventId.replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 63).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "") || "unknown";
}

export interface NodePatch {
  taints: Taint[];
  unschedulable?: boolean;
  /** Annotations to set (string) or remove (null). */
  annotations: Record<string, string | null>;
}

/** When the drain starts (wall ms): `drainLeadMs` before NotBefore, or now when that is past or NotBefore is unknown. */
export function drainStartMs(notBefore: string | null, drainLeadMs: number, nowMs: number): number {
  const notBeforeMs = parseNotBefore(notBefore);
  return notBeforeMs === undefined ? nowMs : Math.max(nowMs, notBeforeMs - drainLeadMs);
}

/** The drain's deadline (wall ms): NotBefore minus the reserve; with no NotBefore, `fallbackMs` from now. */
export function drainDeadlineMs(notBefore: string | null, deadlineReserveMs: number, nowMs: number, fallbackMs = 30_000): number {
  const notBeforeMs = parseNotBefore(notBefore);
  return notBeforeMs === undefined ? nowMs + fallbackMs : notBeforeMs - deadlineReserveMs;
}

function parseNotBefore(notBefore: string | null): number | undefined {
  if (notBefore === null || notBefore === "") return undefined;
  const ms = Date.parse(notBefore);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Kubernetes' default when a pod gives no terminationGracePeriodSeconds. */
export const defaultPodGraceSeconds = 30;

/** The grace period an eviction asks for: the pod's own, capped by the whole seconds left before the deadline (at least 1). */
export function gracePeriodSeconds(podGraceSeconds: number | undefined, timeLeftMs: number): number {
  const own = podGraceSeconds ?? defaultPodGraceSeconds;
  return Math.max(1, Math.min(own, Math.floor(timeLeftMs / 1000)));
}

export type SkipReason = "daemonset" | "mirror" | "self" | "finished" | "emptydir";

export interface EvictionSelection {
  /** Pods to evict (not yet terminating). */
  evict: PodView[];
  /** Pods already terminating: waited for, not evicted again. */
  terminating: PodView[];
  /** Pods left on the node on purpose, with the reason. */
  skipped: Array<{ pod: PodView; reason: SkipReason }>;
}

export const podRef = (pod: Pick<PodView, "namespace" | "name">): string => `${pod.namespace}/${pod.name}`;

/**
 * Which pods of the node a drain evicts: all but DaemonSet pods (their controller would put them back), mirror
 * (static) pods (the kubelet owns them), sef's own pod, pods that have finished, and emptyDir pods when not allowed.
 */
export function selectEvictions(pods: readonly PodView[], self: { namespace: string; name: string } | undefined, evictEmptyDir: boolean): EvictionSelection {
  const selection: EvictionSelection = { evict: [], terminating: [], skipped: [] };
  for (const pod of pods) {
    const reason = skipReason(pod, self, evictEmptyDir);
    if (reason !== undefined) selection.skipped.push({ pod, reason });
    else if (pod.terminating) selection.terminating.push(pod);
    else selection.evict.push(pod);
  }
  return selection;
}

function skipReason(pod: PodView, self: { namespace: string; name: string } | undefined, evictEmptyDir: boolean): SkipReason | undefined {
  if (pod.controllerKinds.includes("DaemonSet")) return "daemonset";
  if ("kubernetes.io/config.mirror" in pod.annotations) return "mirror";
  if (self !== undefined && pod.namespace === self.namespace && pod.name === self.name) return "self";
  if (pod.phase === "Succeeded" || pod.phase === "Failed") return "finished";
  if (pod.hasEmptyDir && !evictEmptyDir) return "emptydir";
  return undefined;
}

/** Wait before retry number `retry` (1-based) of a refused eviction: initial × 2^(retry-1), at most `maxMs`. */
export function pdbRetryDelayMs(retry: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, Math.min(30, retry - 1)));
}

/**
 * Whether the Node is this VM: its providerID (`azure:///subscriptions/…/virtualMachines/…`) names the VM's resource
 * id from instance metadata (case-insensitive). Unknown on either side is no match.
 */
export function nodeIsThisVm(providerID: string, vmResourceId: string): boolean {
  const id = providerID.replace(/^azure:\/\//i, "").toLowerCase();
  return id !== "" && vmResourceId !== "" && id === vmResourceId.toLowerCase();
}
