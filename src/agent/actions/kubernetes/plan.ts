// Pure decisions of the kubernetes action: the taint of an event (sef's marks as a whole: marks.ts), when a drain
// starts and ends, the grace period each pod gets, and the waits after a refused eviction (which pods a drain evicts:
// pods.ts). Plain values in and out (the few Node fields used); the I/O is in client.ts and node-action.ts.
import { retryDelayMs } from "@sef/retry/policy.js";

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
  /** The node's labels (absent: none read). */
  labels?: Record<string, string>;
}

export interface EventOnNode {
  EventId: string;
  EventType: string;
  NotBefore: string | null;
}

/** The taint key of an EventType: `sef.azure.com/scheduled-event-<type lower-cased>` (other characters become `-`). */
export function taintKeyFor(eventType: string): string {
  const name =
    eventType
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "")
      .slice(0, 40) || "unknown";
  return `${taintKeyPrefix}${name}`;
}

/** A taint value holds at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric (a GUID EventId fits as is). */
export function taintValueFor(eventId: string): string {
  return (
    eventId
      .replace(/[^A-Za-z0-9._-]/g, "-")
      .slice(0, 63)
      .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "") || "unknown"
  );
}

export interface NodePatch {
  taints: Taint[];
  unschedulable?: boolean;
  /** Annotations to set (string) or remove (null). */
  annotations: Record<string, string | null>;
  /** Labels to set (string) or remove (null); absent: none changed. */
  labels?: Record<string, string | null>;
}

/** When the drain starts (wall ms): `drainLeadMs` before NotBefore, or now when that is past or NotBefore is unknown. */
export function drainStartMs(notBefore: string | null, drainLeadMs: number, nowMs: number): number {
  const notBeforeMs = parseNotBefore(notBefore);
  return notBeforeMs === undefined ? nowMs : Math.max(nowMs, notBeforeMs - drainLeadMs);
}

/** The drain's deadline (wall ms): NotBefore minus the reserve; with no NotBefore, `fallbackMs` from now. */
export function drainDeadlineMs(
  notBefore: string | null,
  deadlineReserveMs: number,
  nowMs: number,
  fallbackMs = 30_000,
): number {
  const notBeforeMs = parseNotBefore(notBefore);
  return notBeforeMs === undefined ? nowMs + fallbackMs : notBeforeMs - deadlineReserveMs;
}

function parseNotBefore(notBefore: string | null): number | undefined {
  if (notBefore === null) return undefined;
  const ms = Date.parse(notBefore); // NaN for "" too
  return Number.isNaN(ms) ? undefined : ms;
}

/** Kubernetes' default when a pod gives no terminationGracePeriodSeconds. */
export const defaultPodGraceSeconds = 30;

/** The grace period an eviction asks for: the pod's own, capped by the whole seconds left before the deadline (at least 1). */
export function gracePeriodSeconds(podGraceSeconds: number | undefined, timeLeftMs: number): number {
  const own = podGraceSeconds ?? defaultPodGraceSeconds;
  return Math.max(1, Math.min(own, Math.floor(timeLeftMs / 1000)));
}

/**
 * The grace period of a pod deleted at the deadline: the whole seconds left before `endMs` (NotBefore), at least 1.
 */
export function deadlineDeleteGraceSeconds(endMs: number, nowMs: number): number {
  return Math.max(1, Math.floor((endMs - nowMs) / 1000));
}

/**
 * Wait before retry number `retry` (1-based) of a refused eviction: sef's one backoff formula (@sef/retry) from
 * `initialMs`, doubling, at most `maxMs`, with equal jitter (`random` in [0, 1): half fixed, half random).
 */
export function pdbRetryDelayMs(retry: number, initialMs: number, maxMs: number, random: number): number {
  return retryDelayMs({ initialDelayMs: initialMs, maxDelayMs: maxMs, multiplier: 2 }, retry, undefined, random);
}

/** The shortest wait after an eviction throttled by API Priority and Fairness (429 without a disruption budget). */
export const throttleFloorMs = 1_000;

/**
 * How long the drain pauses every eviction after a throttled one: the server's Retry-After bounded by sef's one
 * backoff formula (@sef/retry) — at least `throttleFloorMs`, at most `capMs` (the drain's `pdbRetryMaxMs`), lengthened
 * by up to half of itself (`random`) so the nodes of a throttled cluster do not come back in the same instant.
 */
export function throttleWaitMs(retryAfterMs: number, capMs: number, random: number): number {
  const hintMs = Number.isFinite(retryAfterMs) ? retryAfterMs : 0;
  return retryDelayMs(
    { initialDelayMs: Math.min(throttleFloorMs, capMs), maxDelayMs: capMs, multiplier: 2 },
    1,
    hintMs,
    random,
  );
}

/** The scheme of an Azure Node's providerID (`azure:///subscriptions/…`: the scheme, then the VM's resource id). */
export const azureProviderScheme = "azure://";

/**
 * Whether the Node is this VM: its providerID is `azure://` and the VM's resource id from instance metadata
 * (case-insensitive). An unknown resource id, or a providerID of another cloud, is no match.
 */
export function nodeIsThisVm(providerID: string, vmResourceId: string): boolean {
  return vmResourceId !== "" && providerID.toLowerCase() === `${azureProviderScheme}${vmResourceId}`.toLowerCase();
}
