// Pure encoding of outbox entries for Event Hubs: record → EventData (JSON body, messageId, filterable properties),
// partition keys, grouping one send into per-key runs, and the accepted-prefix arithmetic.
import type { EventData } from "@azure/event-hubs";
import type { SefRecord } from "@sef/contract/record.js";
import type { OutboxEntry } from "../../delivery/outbox-entry.js";
import type { PartitionKeyField } from "./settings.js";
import { partitionIndexForKey } from "@sef/contract/partition-hash.js";

/** Application properties every event carries, so consumers can filter without parsing the body. */
export function applicationProperties(record: SefRecord): Record<string, string> {
  const withEvent = record as Partial<Record<"EventStatus" | "EventType", string>>;
  return {
    RecordType: record.RecordType,
    EventStatus: withEvent.EventStatus ?? "",
    EventType: withEvent.EventType ?? "",
    VmId: record.VmId,
  };
}

/** The event for one entry: the outbox's JSON verbatim as body, `messageId` = RecordId (downstream dedupe key). */
export function toEventData(entry: OutboxEntry): EventData {
  return {
    body: Buffer.from(entry.json, "utf8"),
    contentType: "application/json",
    messageId: entry.record.RecordId,
    properties: applicationProperties(entry.record),
  };
}

/**
 * Partition key of a record: the configured field; records without it (Heartbeat has no EventId) fall back to VmId;
 * `none` (or an empty value everywhere) lets the service spread events (undefined).
 */
export function partitionKeyOf(record: SefRecord, field: PartitionKeyField): string | undefined {
  if (field === "none") return undefined;
  const value = (record as unknown as Record<string, unknown>)[field];
  if (typeof value === "string" && value !== "") return value;
  return record.VmId !== "" ? record.VmId : undefined;
}

/** Entries sent together, in outbox order: one partition key, or (hash routing) one partition. */
export interface KeyGroup {
  readonly partitionKey: string | undefined;
  /** Set with hash routing: the partition every entry of the group goes to. */
  readonly partitionId?: string;
  /** Indexes into the batch, ascending. */
  readonly indexes: number[];
}

/** The partition a key is routed to with hash routing: the one Event Hubs itself assigns to that partition key. */
export function partitionForKey(key: string, partitionIds: readonly string[]): string {
  return partitionIds[partitionIndexForKey(key, partitionIds.length)]!;
}

/**
 * Groups a send's entries: per partition key, or, when `partitionIds` is given (hash routing), per partition chosen
 * from the key. Groups are ordered by their first entry; entries without a key go in one unkeyed group.
 */
export function groupByPartitionKey(
  batch: readonly OutboxEntry[],
  field: PartitionKeyField,
  partitionIds?: readonly string[],
): KeyGroup[] {
  const groups = new Map<string, KeyGroup>();
  const ordered: KeyGroup[] = [];
  batch.forEach((entry, index) => {
    const partitionKey = partitionKeyOf(entry.record, field);
    const partitionId =
      partitionKey !== undefined && partitionIds && partitionIds.length > 0
        ? partitionForKey(partitionKey, partitionIds)
        : undefined;
    const mapKey =
      partitionId !== undefined ? `p:${partitionId}` : partitionKey === undefined ? "\u0000none" : `k:${partitionKey}`;
    let group = groups.get(mapKey);
    if (!group) {
      group =
        partitionId !== undefined
          ? { partitionKey: undefined, partitionId, indexes: [] }
          : { partitionKey, indexes: [] };
      groups.set(mapKey, group);
      ordered.push(group);
    }
    group.indexes.push(index);
  });
  return ordered;
}
