// Kubernetes records (pure): one per node step of the kubernetes action, shaped like Hook and Approval records, with
// the step's numbers as JSON in Detail so KQL reads them with parse_json (no new table column).
import {
  buildRecord,
  type EventStatus,
  type KubernetesOutcome,
  type KubernetesRecord,
  type RecordIdentity,
} from "@sef/contract/record.js";
import { deterministicUuid } from "@sef/contract/record-id.js";
import type { DrainResult } from "./drain.js";

/** What Detail holds (absent fields are left out). */
export interface KubernetesStepDetail {
  node: string;
  policy: string;
  /** Pods whose eviction the API accepted during this drain. */
  podsEvicted?: number;
  /** Pods a PodDisruptionBudget refused (429) at least once, as namespace/name. */
  podsBlockedByPdb?: string[];
  /** Longest time one pod was held by a PodDisruptionBudget, in seconds. */
  pdbHeldSeconds?: number;
  /** Pods still on the node when the drain ended incomplete (DrainIncomplete), as namespace/name. */
  podsLeft?: string[];
  /** Why the drain is incomplete: "at its deadline", or pods without a controller left (force off). */
  incompleteBecause?: string;
  /** Pods without a controller left on the node (force off): the reboot deletes them for good. */
  podsWithoutController?: string[];
  /** Pods labelled `sef.azure.com/drain: skip`: left by their owner's choice (the drain completes without them). */
  podsOptedOut?: string[];
  /** Pods that came after the drain started and tolerate sef's taint: left, not evicted again and again. */
  podsArrivedTolerating?: string[];
  /** Pods with emptyDir volumes left on the node (evictEmptyDir false): the event takes their data. */
  podsWithEmptyDir?: string[];
  /** Pods deleted at the deadline (`atDeadline: delete`), still refused or terminating then. */
  podsDeletedAtDeadline?: string[];
  /** The grace period those pods were deleted with: the seconds left before NotBefore. */
  deadlineGraceSeconds?: number;
  /** Terminating pods asked again with a shorter grace because a sooner event's deadline came. */
  podsGraceShortened?: string[];
  /** Dry run: nothing was changed; the record says what would have been done. */
  dryRun?: boolean;
  /** Dry run: the pods a drain would evict now. */
  podsToEvict?: string[];
  /** Pods being deleted past their grace period (stuck terminating): not waited for. */
  podsStuckTerminating?: string[];
  /** Pods whose eviction failed with another status (403, 500, ...), the last failure of each. */
  evictionErrors?: Array<{ pod: string; status: number; message: string }>;
  /** Eviction requests throttled (429 without a disruption budget) and waited out. */
  evictionsThrottled?: number;
  /** Multi-node events: the nodes of this cluster the event names, in the order of Resources. */
  nodesNamed?: string[];
  /** Multi-node events: the event's VMs that are not nodes of this cluster (they do not hold the approval up). */
  outsideCluster?: string[];
  /** Multi-node events: the node whose agent approves the event (the first named node of this cluster). */
  approver?: string;
  /** Multi-node events: the named nodes that had not drained yet (Waiting, NotApproved). */
  waitingFor?: string[];
  /** Why the approval was released as it was (NotApproved), or why sef took marks off by reconciliation. */
  reason?: string;
  /** The node stayed cordoned at the undo, and why. */
  keptCordoned?: string;
  /** The taint sef put on (key=value:effect). */
  taint?: string;
  deadline?: string;
  error?: string;
}

export interface KubernetesRecordInput {
  vm: RecordIdentity;
  event: { EventId: string; EventType: string };
  eventStatus: EventStatus;
  outcome: KubernetesOutcome;
  detail: KubernetesStepDetail;
  elapsedMs: number;
  httpStatus?: number;
  /** Distinguishes repeated steps of one outcome (a Failed step retried): part of the RecordId. */
  attempt?: number;
  nowMs: number;
  agentVersion: string;
}

/** RecordId: deterministic from (AgentId and VmId, lower-cased EventId, "Kubernetes", Outcome[, attempt]): a step recorded twice is deduplicated downstream. */
export function kubernetesRecordId(
  source: string,
  eventId: string,
  outcome: KubernetesOutcome,
  attempt?: number,
): string {
  return attempt === undefined
    ? deterministicUuid(source, eventId.toLowerCase(), "Kubernetes", outcome)
    : deterministicUuid(source, eventId.toLowerCase(), "Kubernetes", outcome, String(attempt));
}

export function kubernetesRecord(input: KubernetesRecordInput): KubernetesRecord {
  const recordId = (source: string): string =>
    kubernetesRecordId(source, input.event.EventId, input.outcome, input.attempt);
  return buildRecord<KubernetesRecord>(input, input.nowMs, recordId, {
    RecordType: "Kubernetes",
    EventId: input.event.EventId,
    EventType: input.event.EventType,
    EventStatus: input.eventStatus,
    Outcome: input.outcome,
    HttpStatus: input.httpStatus ?? 0,
    ElapsedMs: Math.max(0, Math.round(input.elapsedMs)),
    Detail: JSON.stringify(input.detail),
  });
}

/** The drain's part of Detail (Drained, DrainIncomplete): counts, PDB holds, the pods left and why; empty lists left out. */
export function drainDetail(
  result: Exclude<DrainResult, { outcome: "interrupted" }>,
  deadlineIso: string,
): Omit<KubernetesStepDetail, "node" | "policy"> {
  const named = (key: keyof KubernetesStepDetail, pods: string[]) => (pods.length > 0 ? { [key]: pods } : {});
  return {
    podsEvicted: result.evicted.length,
    podsBlockedByPdb: result.pdbBlocked,
    pdbHeldSeconds: Math.round(result.pdbHeldMs / 100) / 10,
    ...named("podsWithoutController", result.podsWithoutController),
    ...named("podsOptedOut", result.podsOptedOut),
    ...named("podsArrivedTolerating", result.podsArrivedTolerating),
    ...named("podsStuckTerminating", result.podsStuckTerminating),
    ...named("podsWithEmptyDir", result.podsWithEmptyDir),
    ...named("podsGraceShortened", result.graceShortened ?? []),
    ...(result.outcome === "incomplete" && result.deleted
      ? { podsDeletedAtDeadline: result.deleted.podsDeleted, deadlineGraceSeconds: result.deleted.graceSeconds }
      : {}),
    ...((result.evictionErrors ?? []).length > 0 ? { evictionErrors: result.evictionErrors } : {}),
    ...((result.throttled ?? 0) > 0 ? { evictionsThrottled: result.throttled } : {}),
    ...(result.outcome === "incomplete"
      ? { podsLeft: result.podsLeft, incompleteBecause: result.reason, deadline: deadlineIso }
      : {}),
  };
}
