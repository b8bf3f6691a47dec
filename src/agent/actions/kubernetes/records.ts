// Kubernetes records (pure): one per node step of the kubernetes action, shaped like Hook and Approval records, with
// the step's numbers as JSON in Detail so KQL reads them with parse_json (no new table column).
import type { EventStatus, KubernetesOutcome, KubernetesRecord, RecordIdentity } from "@sef/contract/record.js";
import { deterministicUuid, recordSource } from "@sef/contract/record-id.js";

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
  /** Pods still on the node when the deadline passed (DrainIncomplete), as namespace/name. */
  podsLeft?: string[];
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
export function kubernetesRecordId(source: string, eventId: string, outcome: KubernetesOutcome, attempt?: number): string {
  return attempt === undefined
    ? deterministicUuid(source, eventId.toLowerCase(), "Kubernetes", outcome)
    : deterministicUuid(source, eventId.toLowerCase(), "Kubernetes", outcome, String(attempt));
}

export function kubernetesRecord(input: KubernetesRecordInput): KubernetesRecord {
  const time = new Date(input.nowMs).toISOString();
  return {
    ...input.vm,
    RecordId: kubernetesRecordId(recordSource(input.vm), input.event.EventId, input.outcome, input.attempt),
    RecordType: "Kubernetes",
    TimeGenerated: time,
    ObservedAt: time,
    EventId: input.event.EventId,
    EventType: input.event.EventType,
    EventStatus: input.eventStatus,
    Outcome: input.outcome,
    HttpStatus: input.httpStatus ?? 0,
    ElapsedMs: Math.max(0, Math.round(input.elapsedMs)),
    Detail: JSON.stringify(input.detail),
    AgentVersion: input.agentVersion,
  };
}
