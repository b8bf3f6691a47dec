// The record contract (v1): the one source of truth for the shape every consumer sees.
// Table schemas, the DCR stream declaration, the ingestion peer's validation, the record validator (the fleet's input)
// and the docs derive from `recordColumns`; every record is made by `buildRecord`, which alone sets the common fields.
import { recordSource } from "./record-id.js";

/** Column types, named as in a data collection rule stream declaration. */
export type ColumnType = "string" | "int" | "long" | "real" | "boolean" | "datetime" | "dynamic";

export interface ColumnSpec {
  readonly name: string;
  readonly type: ColumnType;
  readonly description: string;
  /** The JSON a `dynamic` column holds in every record that carries it: a list of strings, or an object of strings. */
  readonly json?: "string[]" | "{string: string}";
  /** A record may hold null here (every other column a record carries holds a value of its type). */
  readonly nullable?: true;
  /** Added to v1 after its first agents: records of older agents lack it, and consumers read them without it. */
  readonly absentInEarlierRecords?: true;
}

/** Every column any record type may carry, in table order. Transition records carry the first block. */
export const recordColumns: readonly ColumnSpec[] = [
  { name: "TimeGenerated", type: "datetime", description: "When this agent observed the transition (ISO 8601 UTC)" },
  {
    name: "ObservedAt",
    type: "datetime",
    description:
      "Same as TimeGenerated when written; kept as is when Log Analytics replaces a TimeGenerated older than 2 days with the ingestion time",
    absentInEarlierRecords: true,
  },
  {
    name: "RecordId",
    type: "string",
    description: "Deterministic id of (AgentId, VmId, lower-cased EventId, EventStatus); downstream dedupes on it",
  },
  {
    name: "RecordType",
    type: "string",
    description: "Transition, MalformedEvent, Heartbeat, Approval, Hook or Kubernetes",
  },
  { name: "EventId", type: "string", description: "EventId as IMDS gave it" },
  { name: "EventStatus", type: "string", description: "Scheduled, Started, Completed or Canceled" },
  { name: "PreviousStatus", type: "string", description: "Empty on first sighting, else the status before" },
  {
    name: "EventType",
    type: "string",
    description: "Freeze, Reboot, Redeploy, Preempt, Terminate, or any new value verbatim",
  },
  { name: "ResourceType", type: "string", description: "Resource type from IMDS (VirtualMachine)" },
  {
    name: "Resources",
    type: "dynamic",
    json: "string[]",
    description: "Names of all VMs the event affects (leading _ of old names removed)",
  },
  {
    name: "NotBefore",
    type: "datetime",
    nullable: true,
    description: "Earliest start time (ISO 8601 UTC), null when empty",
  },
  { name: "Description", type: "string", description: "Free text from IMDS, empty when the api-version has none" },
  { name: "EventSource", type: "string", description: "Platform, User, or empty" },
  { name: "DurationInSeconds", type: "int", description: "Expected impact in seconds, -1 when unknown or absent" },
  { name: "DocumentIncarnation", type: "long", description: "The document in which the transition was seen" },
  { name: "AffectsThisVm", type: "boolean", description: "This VM's compute.name is in Resources (case-insensitive)" },
  {
    name: "ObservationGap",
    type: "boolean",
    description: "The agent was not watching continuously since the previous sighting",
  },
  { name: "VmName", type: "string", description: "compute.name from instance metadata" },
  { name: "VmId", type: "string", description: "compute.vmId from instance metadata" },
  { name: "VmResourceId", type: "string", description: "compute.resourceId from instance metadata" },
  { name: "SubscriptionId", type: "string", description: "compute.subscriptionId from instance metadata" },
  { name: "ResourceGroup", type: "string", description: "compute.resourceGroupName from instance metadata" },
  { name: "Location", type: "string", description: "compute.location from instance metadata" },
  { name: "VmScaleSetName", type: "string", description: "compute.vmScaleSetName from instance metadata" },
  { name: "Zone", type: "string", description: "compute.zone from instance metadata" },
  {
    name: "Tags",
    type: "dynamic",
    json: "{string: string}",
    absentInEarlierRecords: true,
    description:
      "The VM's resource tags from instance metadata (compute.tagsList, else compute.tags) as an object {name: value}; {} when it has none; absent from records of older agents",
  },
  {
    name: "AgentId",
    type: "string",
    absentInEarlierRecords: true,
    description: "Random id of this sef installation, kept in the data directory (agent-id); unique fleet-wide",
  },
  { name: "AgentVersion", type: "string", description: "sef package version" },
  // Columns used only by non-transition record types (absent from Transition records).
  {
    name: "Outcome",
    type: "string",
    description:
      "Approval: Approved, Failed, DryRun, Interrupted; Hook: Succeeded, Failed, TimedOut, Interrupted; Kubernetes: Tainted, Cordoned, Draining, Drained, DrainIncomplete, Waiting, NotApproved, Uncordoned, Released, Failed; Heartbeat: Stopping on the agent's goodbye, else absent; MalformedEvent: the reason code",
  },
  {
    name: "HttpStatus",
    type: "int",
    description:
      "Approval: HTTP status of the approval request (0 when none); Kubernetes: HTTP status of a failed API request",
  },
  { name: "ExitCode", type: "int", description: "Hook: exit code of the command (-1 when killed or not started)" },
  {
    name: "ElapsedMs",
    type: "long",
    description:
      "Hook: run time of the command in milliseconds; Kubernetes: time the step took (a drain: from its start)",
  },
  {
    name: "Detail",
    type: "string",
    description:
      "Free text: error message, hook name, heartbeat statistics as JSON, a malformed event as JSON {problem, event}, or a Kubernetes step as JSON {node, policy, podsEvicted, podsBlockedByPdb, pdbHeldSeconds, podsLeft, ...}",
  },
];

export const recordTypes = ["Transition", "MalformedEvent", "Heartbeat", "Approval", "Hook", "Kubernetes"] as const;
export type RecordType = (typeof recordTypes)[number];

export const eventStatuses = ["Scheduled", "Started", "Completed", "Canceled"] as const;
export type EventStatus = (typeof eventStatuses)[number];
/** Statuses IMDS itself reports; Completed and Canceled are inferred by the collector. */
export type ImdsEventStatus = "Scheduled" | "Started";

/** VM identity from instance metadata; "" when unknown. */
export interface VmIdentity {
  VmName: string;
  VmId: string;
  VmResourceId: string;
  SubscriptionId: string;
  ResourceGroup: string;
  Location: string;
  VmScaleSetName: string;
  Zone: string;
  /** Resource tags of the VM (compute.tagsList, else compute.tags), `{}` when it has none. Records of older agents lack it. */
  Tags: Record<string, string>;
}

/** What every record carries about where it comes from: the VM (instance metadata) and this installation of sef. */
export interface RecordIdentity extends VmIdentity {
  /** Random UUID created at the first start and kept in the data directory; never "" in records. */
  AgentId: string;
}

export const unknownVmIdentity: VmIdentity = {
  VmName: "",
  VmId: "",
  VmResourceId: "",
  SubscriptionId: "",
  ResourceGroup: "",
  Location: "",
  VmScaleSetName: "",
  Zone: "",
  Tags: {},
};

/**
 * The fields every record carries whatever its kind, set by `buildRecord` and by nothing else: which record it is,
 * when it was observed, where it comes from (the VM and this installation) and the agent's version.
 */
export interface RecordEnvelope extends RecordIdentity {
  RecordId: string;
  RecordType: RecordType;
  TimeGenerated: string;
  /** The observation time again: Log Analytics never rewrites it (TimeGenerated older than 2 days it does). */
  ObservedAt: string;
  AgentVersion: string;
}

/** The event fields a transition record carries, normalized from any api-version. */
export interface EventFields {
  EventId: string;
  EventType: string;
  ResourceType: string;
  Resources: string[];
  NotBefore: string | null;
  Description: string;
  EventSource: string;
  DurationInSeconds: number;
}

export interface TransitionRecord extends EventFields, RecordEnvelope {
  RecordType: "Transition";
  EventStatus: EventStatus;
  PreviousStatus: EventStatus | "";
  DocumentIncarnation: number;
  AffectsThisVm: boolean;
  ObservationGap: boolean;
}

/**
 * Why one event of a document could not be read: a MalformedEvent record's `Outcome`, and the `reason` label of
 * `sef_imds_events_malformed_total`.
 */
export const malformedEventReasons = [
  "not_an_object",
  "event_id",
  "event_status",
  "resources",
  "not_before",
  "duration",
  "field_type",
  "duplicate_event_id",
] as const;
export type MalformedEventReason = (typeof malformedEventReasons)[number];

/**
 * An event IMDS listed that the agent cannot read (e.g. `Resources` as a string): forwarded, not dropped, so consumers
 * and alerts see it. Fields are copied when they have the right type, else left empty; `Detail` keeps the raw event.
 */
export interface MalformedEventRecord extends RecordEnvelope {
  RecordType: "MalformedEvent";
  /** The raw EventId when it is a string, else "". */
  EventId: string;
  /** The raw EventStatus when it is a string (it may be a value IMDS never documented), else "". */
  EventStatus: string;
  EventType: string;
  ResourceType: string;
  /** The raw Resources when it is an array of strings, else []. */
  Resources: string[];
  Description: string;
  EventSource: string;
  DocumentIncarnation: number;
  AffectsThisVm: boolean;
  /** The reason code (`resources`, `not_before`, `event_status`, ...), as in `sef_imds_events_malformed_total{reason}`. */
  Outcome: string;
  /** JSON: `{"problem": "Events[0]: Resources is not an array of strings: ...", "event": <the raw event>}`. */
  Detail: string;
}

export interface HeartbeatRecord extends RecordEnvelope {
  RecordType: "Heartbeat";
  /** Only on the goodbye: the agent stops (clean shutdown) or this VM is about to go (its Terminate or Preempt). */
  Outcome?: "Stopping";
  Detail: string;
}

export interface ApprovalRecord extends RecordEnvelope {
  RecordType: "Approval";
  EventId: string;
  EventType: string;
  EventStatus: EventStatus;
  DocumentIncarnation: number;
  Outcome: "Approved" | "Failed" | "DryRun" | "Interrupted";
  HttpStatus: number;
  Detail: string;
}

export interface HookRecord extends RecordEnvelope {
  RecordType: "Hook";
  EventId: string;
  EventType: string;
  EventStatus: EventStatus;
  Outcome: "Succeeded" | "Failed" | "TimedOut" | "Interrupted";
  ExitCode: number;
  ElapsedMs: number;
  Detail: string;
}

/** What a Kubernetes record reports: the step the kubernetes action took on this VM's node for an event. */
/** Waiting, NotApproved: an event naming several nodes of the cluster (approved together once all have drained). */
export const kubernetesOutcomes = [
  "Tainted",
  "Cordoned",
  "Draining",
  "Drained",
  "DrainIncomplete",
  "Waiting",
  "NotApproved",
  "Uncordoned",
  "Released",
  "Failed",
] as const;
export type KubernetesOutcome = (typeof kubernetesOutcomes)[number];

/**
 * One step of the kubernetes action on this VM's node. `Detail` is JSON: `{node, policy, step, podsEvicted,
 * podsBlockedByPdb, pdbHeldSeconds, podsLeft, ...}` (see src/actions/kubernetes/README.md).
 */
export interface KubernetesRecord extends RecordEnvelope {
  RecordType: "Kubernetes";
  EventId: string;
  EventType: string;
  EventStatus: EventStatus;
  Outcome: KubernetesOutcome;
  /** HTTP status of the failed API request (Failed), else 0. */
  HttpStatus: number;
  ElapsedMs: number;
  Detail: string;
}

/** Any record the agent writes to its outbox. */
export type SefRecord =
  TransitionRecord | MalformedEventRecord | HeartbeatRecord | ApprovalRecord | HookRecord | KubernetesRecord;

/** Names of the columns Transition records carry (the contract table), in order. */
export const transitionFieldNames: readonly string[] = recordColumns
  .slice(
    0,
    recordColumns.findIndex((c) => c.name === "Outcome"),
  )
  .map((c) => c.name);

/** Where a record comes from: the VM and this installation, and the version of the agent writing it. */
export interface RecordOrigin {
  /** Its identity fields alone are taken (a transition record or a larger object may be given). */
  vm: RecordIdentity;
  agentVersion: string;
}

/** What a producer gives for a record of kind `R`: the kind's own fields and its RecordType, no common field. */
export type RecordFields<R extends SefRecord> = Omit<R, Exclude<keyof RecordEnvelope, "RecordType">>;

/** How a kind makes its RecordId, from `recordSource` of the identity and the record's TimeGenerated. */
export type RecordIdMaker = (source: string, timeGenerated: string) => string;

/**
 * Every record the agent writes, of any kind: the common fields (`RecordEnvelope`) from `origin` and the observation
 * time, the kind's own `fields` from its producer. A new common field is set here and nowhere else (README.md).
 */
export function buildRecord<R extends SefRecord>(
  origin: RecordOrigin,
  observedAtMs: number,
  recordId: RecordIdMaker,
  fields: RecordFields<R>,
): R {
  const identity = recordIdentity(origin.vm);
  const time = new Date(observedAtMs).toISOString();
  // Before the kind's fields and after them: the order of the table's columns for transitions.
  const head = {
    RecordId: recordId(recordSource(identity), time),
    RecordType: fields.RecordType,
    TimeGenerated: time,
    ObservedAt: time,
  };
  const tail = { ...identity, AgentVersion: origin.agentVersion };
  return { ...head, ...fields, ...tail } satisfies RecordEnvelope as unknown as R;
}

/** The identity fields of `source` alone; Tags `{}` when it lacks them (a record of an older agent). */
export function recordIdentity(source: RecordIdentity): RecordIdentity {
  const { VmName, VmId, VmResourceId, SubscriptionId, ResourceGroup, Location, VmScaleSetName, Zone, Tags, AgentId } =
    source;
  return {
    VmName,
    VmId,
    VmResourceId,
    SubscriptionId,
    ResourceGroup,
    Location,
    VmScaleSetName,
    Zone,
    Tags: Tags ?? {},
    AgentId,
  };
}
