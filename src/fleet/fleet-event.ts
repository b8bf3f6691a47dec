// Folds the transition records of many VMs into one fleet event per maintenance EventId (pure). All records of one
// EventId meet in one Event Hubs partition (the partition key is the EventId), so one partition owner folds them.
import type { EventStatus } from "@sef/contract/record.js";
import type { FleetTransition } from "./record-input.js";
import { dictOf, emptyDict, own } from "./safe-dict.js";

/** What one reporting VM last said about the event. */
export interface VmStatus {
  readonly vmName: string;
  readonly vmId: string;
  readonly zone: string;
  readonly vmScaleSetName: string;
  readonly resourceGroup: string;
  /** The VM's resource tags from its records (absent in states saved before tags were read). */
  readonly tags?: Readonly<Record<string, string>>;
  readonly affectsThisVm: boolean;
  readonly status: EventStatus;
  readonly lastSeen: string;
}

export type OverallStatus = "Scheduled" | "Started" | "Completed" | "Canceled";

export interface FleetEvent {
  /** Lower-cased EventId: the key. */
  readonly key: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly eventSource: string;
  readonly description: string;
  readonly durationInSeconds: number;
  readonly notBefore: string | null;
  /** Names of every VM the event affects, as IMDS listed them (union over the reports). */
  readonly resources: readonly string[];
  /** Status per reporting VM, keyed by its AgentId (else VmId, else VmName): a dictionary without prototype. */
  readonly vms: Readonly<Record<string, VmStatus>>;
  readonly firstSeen: string;
  readonly lastSeen: string;
  readonly status: OverallStatus;
}

const statusRank: Record<EventStatus, number> = { Scheduled: 0, Started: 1, Completed: 2, Canceled: 2 };

/** The key of a record's VM among an event's reporters: its AgentId, else VmId, else VmName, else RecordId. */
export function reporterOf(record: FleetTransition): string {
  return record.AgentId || record.VmId || record.VmName || record.RecordId;
}

export function eventKeyOf(eventId: string): string {
  return eventId.toLowerCase();
}

/** The fields a notification is about: once one went out, later records never change them. */
export type PagedField = "eventType" | "description" | "notBefore";

export interface FoldOptions {
  /** A notification about the event went out (or is claimed): its type, description and NotBefore stay as paged. */
  readonly paged?: boolean;
  /** Told of each change a record offered to a paged field, which was not applied. */
  readonly onKept?: (field: PagedField, kept: string | null, offered: string | null) => void;
}

/**
 * Adds one record to the fleet event it belongs to: returns `previous` updated in place (the caller owns the copy it
 * folds into), or a new event. Older or repeated reports never move a VM back. Cost grows with the number
 * of names in Resources, not with the number of VMs that reported.
 */
export function foldRecord(
  previous: FleetEvent | undefined,
  record: FleetTransition,
  options: FoldOptions = {},
): FleetEvent {
  const event: Mutable<FleetEvent> =
    previous ??
    ({
      key: eventKeyOf(record.EventId),
      eventId: record.EventId,
      eventType: "",
      eventSource: "",
      description: "",
      durationInSeconds: record.DurationInSeconds,
      notBefore: null,
      resources: [],
      vms: emptyDict<VmStatus>(),
      firstSeen: record.TimeGenerated,
      lastSeen: record.TimeGenerated,
      status: "Scheduled",
    } satisfies FleetEvent);
  const reporter = reporterOf(record);
  const vms = event.vms as Record<string, VmStatus>;
  const before = own(vms, reporter);
  const previousStatus = before?.status;
  if (before === undefined || statusRank[before.status] <= statusRank[record.EventStatus]) {
    vms[reporter] = {
      vmName: record.VmName,
      vmId: record.VmId,
      zone: record.Zone,
      vmScaleSetName: record.VmScaleSetName,
      resourceGroup: record.ResourceGroup,
      tags: dictOf<string>(record.Tags),
      affectsThisVm: record.AffectsThisVm,
      status: record.EventStatus,
      lastSeen: record.TimeGenerated,
    };
  }
  const resources = event.resources as string[];
  const known = new Set(resources);
  resources.push(...new Set(record.Resources.filter((name) => !known.has(name))));
  resources.sort();
  // The earliest and the latest time reported (ISO 8601 in UTC: their text order is their time order).
  const seen = [event.firstSeen, event.lastSeen, record.TimeGenerated].sort();
  event.firstSeen = seen[0]!;
  event.lastSeen = seen[2]!;
  const offered = {
    eventType: record.EventType || event.eventType,
    description: record.Description || event.description,
  };
  for (const field of ["eventType", "description"] as const) {
    if (options.paged === true && offered[field] !== event[field])
      options.onKept?.(field, event[field], offered[field]);
    else event[field] = offered[field];
  }
  const notBefore = record.NotBefore ?? event.notBefore;
  if (options.paged === true && notBefore !== event.notBefore)
    options.onKept?.("notBefore", event.notBefore, notBefore);
  else event.notBefore = notBefore;
  event.eventSource = record.EventSource || event.eventSource;
  event.durationInSeconds = record.DurationInSeconds;
  // The overall status follows the VMs' statuses: only this VM's may have changed (a new event's always has).
  if (previousStatus !== own(vms, reporter)?.status) event.status = overallStatus(Object.values(vms));
  return event;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Started while any VM is Started; ended only when every reporting VM ended; Completed wins over Canceled. */
export function overallStatus(vms: readonly VmStatus[]): OverallStatus {
  if (vms.some((v) => v.status === "Started")) return "Started";
  if (vms.some((v) => v.status === "Scheduled")) return "Scheduled";
  return vms.some((v) => v.status === "Completed") ? "Completed" : "Canceled";
}

export function isEnded(event: FleetEvent): boolean {
  return event.status === "Completed" || event.status === "Canceled";
}

/** VMs the event touches that reported it about themselves (AffectsThisVm), sorted by name. */
export function affectedVms(event: FleetEvent): VmStatus[] {
  return Object.values(event.vms)
    .filter((v) => v.affectsThisVm)
    .sort((a, b) => a.vmName.localeCompare(b.vmName));
}
