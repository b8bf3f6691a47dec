// In-memory event store of the local Event Hubs peer: partitions, sequence numbers, offsets, enqueued times.
// Pure logic (no I/O): the AMQP server appends encoded messages here and streams them to receivers.
import { partitionIndexForKey } from "@sef/contract/partition-hash.js";

/** One event as the peer stored it: the AMQP-encoded message the producer sent, plus the service's system properties. */
export interface StoredEvent {
  readonly partitionId: string;
  readonly sequenceNumber: number;
  /** Byte position of the event in its partition, as a decimal string (like the service's offsets). */
  readonly offset: string;
  readonly enqueuedTimeMs: number;
  readonly partitionKey: string | undefined;
  /** The single event's AMQP encoding as the producer sent it (one data section of a batch). */
  readonly encoded: Buffer;
}

export interface PartitionInfo {
  readonly partitionId: string;
  readonly beginSequenceNumber: number;
  readonly lastEnqueuedSequenceNumber: number;
  readonly lastEnqueuedOffset: string;
  readonly lastEnqueuedTimeMs: number;
  readonly isEmpty: boolean;
}

export class HubStore {
  private readonly ids: string[];
  private readonly partitions: StoredEvent[][];
  private readonly nextOffsets: number[];
  private roundRobin = 0;
  private readonly listeners = new Set<(partitionId: string) => void>();

  constructor(
    partitionCount: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(partitionCount) || partitionCount < 1)
      throw new RangeError(`partitionCount must be a positive integer, got ${partitionCount}`);
    this.ids = Array.from({ length: partitionCount }, (_, i) => String(i));
    this.partitions = this.ids.map(() => []);
    this.nextOffsets = this.ids.map(() => 0);
  }

  /** The hub's partition ids, "0" to "N-1". */
  get partitionIds(): readonly string[] {
    return this.ids;
  }

  /**
   * Raises the partition count (Premium and Dedicated namespaces allow it; it can never go down). Existing partitions
   * keep their events; from now on partition keys hash over the new count.
   */
  scalePartitions(partitionCount: number): void {
    if (!Number.isInteger(partitionCount) || partitionCount < this.ids.length) {
      throw new RangeError(`partition count can only grow: have ${this.ids.length}, asked for ${partitionCount}`);
    }
    while (this.ids.length < partitionCount) {
      this.ids.push(String(this.ids.length));
      this.partitions.push([]);
      this.nextOffsets.push(0);
    }
  }

  hasPartition(partitionId: string): boolean {
    return this.ids.includes(partitionId);
  }

  /** Where a send without an explicit partition goes: by key hash, else round robin (one batch stays together). */
  assignPartition(partitionKey: string | undefined): string {
    // The service's own key → partition mapping, so keyed events land where they would in Azure.
    if (partitionKey !== undefined && partitionKey !== "")
      return this.partitionIds[partitionIndexForKey(partitionKey, this.partitionIds.length)]!;
    const id = String(this.roundRobin % this.partitionIds.length);
    this.roundRobin++;
    return id;
  }

  /** Appends the messages of one transfer to one partition, in order; returns what was stored. */
  append(partitionId: string, partitionKey: string | undefined, encodedMessages: readonly Buffer[]): StoredEvent[] {
    const index = this.indexOf(partitionId);
    const list = this.partitions[index]!;
    const enqueuedTimeMs = this.now();
    const stored: StoredEvent[] = [];
    for (const encoded of encodedMessages) {
      const event: StoredEvent = {
        partitionId,
        sequenceNumber: list.length,
        offset: String(this.nextOffsets[index]!),
        enqueuedTimeMs,
        partitionKey,
        encoded,
      };
      this.nextOffsets[index]! += encoded.length;
      list.push(event);
      stored.push(event);
    }
    if (stored.length > 0) for (const listener of this.listeners) listener(partitionId);
    return stored;
  }

  /** Events of one partition (sequence number = index). */
  events(partitionId: string): readonly StoredEvent[] {
    return this.partitions[this.indexOf(partitionId)]!;
  }

  /** Every stored event, partition by partition. */
  allEvents(): StoredEvent[] {
    return this.partitions.flat();
  }

  info(partitionId: string): PartitionInfo {
    const list = this.events(partitionId);
    const last = list[list.length - 1];
    return {
      partitionId,
      beginSequenceNumber: list.length > 0 ? 0 : -1,
      lastEnqueuedSequenceNumber: last ? last.sequenceNumber : -1,
      lastEnqueuedOffset: last ? last.offset : "-1",
      lastEnqueuedTimeMs: last ? last.enqueuedTimeMs : 0,
      isEmpty: list.length === 0,
    };
  }

  /** Called after every append with the partition that grew. Returns an unsubscribe function. */
  onAppend(listener: (partitionId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private indexOf(partitionId: string): number {
    const index = this.partitionIds.indexOf(partitionId);
    if (index === -1) throw new RangeError(`no partition "${partitionId}" (have ${this.partitionIds.join(", ")})`);
    return index;
  }
}
