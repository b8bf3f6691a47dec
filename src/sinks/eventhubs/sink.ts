// The Event Hubs sink: one `send` = the batch grouped by partition key, packed into EventDataBatches up to the link's
// max message size, sent in order (batches of different keys concurrently), results classified for the drain loop.
import { setMaxListeners } from "node:events";
import type { EventDataBatch, EventHubProducerClient } from "@azure/event-hubs";
import type { Logger } from "pino";
import type { OutboxEntry, RejectedRecord, SendResult, Sink } from "../sink.js";
import { classifySendError } from "./classify.js";
import { groupByPartitionKey, leadingDoneCount, toEventData } from "./encode.js";
import type { PartitionKeyField } from "./settings.js";

export interface EventHubsSinkOptions {
  readonly producer: EventHubProducerClient;
  readonly logger: Logger;
  readonly partitionKeyField: PartitionKeyField;
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  /** Event batches of one send in flight at once; batches of the same partition key never overlap. */
  readonly maxConcurrentBatches: number;
  readonly name?: string;
}

/** One EventDataBatch to send: its partition key and the batch indexes of the entries it carries, in order. */
interface SendUnit {
  readonly keyId: string;
  readonly batch: EventDataBatch;
  readonly indexes: number[];
}

export class EventHubsSink implements Sink {
  readonly name: string;
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  private closed = false;

  constructor(private readonly options: EventHubsSinkOptions) {
    this.name = options.name ?? "eventhubs";
    this.maxBatchRecords = options.maxBatchRecords;
    this.lingerMs = options.lingerMs;
  }

  async send(batch: readonly OutboxEntry[], outerSignal: AbortSignal): Promise<SendResult> {
    if (batch.length === 0) return { kind: "ok" };
    if (this.closed) return { kind: "retryable", reason: "eventhubs sink is closed", acceptedCount: 0 };
    // The SDK adds an abort listener per call; give it a signal of our own so the caller's does not collect them.
    const controller = new AbortController();
    setMaxListeners(0, controller.signal);
    const onAbort = (): void => controller.abort(outerSignal.reason);
    if (outerSignal.aborted) onAbort();
    else outerSignal.addEventListener("abort", onAbort, { once: true });
    try {
      return await this.sendWith(batch, controller.signal);
    } finally {
      outerSignal.removeEventListener("abort", onAbort);
    }
  }

  private async sendWith(batch: readonly OutboxEntry[], signal: AbortSignal): Promise<SendResult> {
    const sent = new Set<number>();
    const rejected: RejectedRecord[] = [];
    try {
      const units = await this.pack(batch, rejected, signal);
      const failure = await this.sendUnits(batch, units, sent, rejected, signal);
      if (failure) return { ...failure, acceptedCount: leadingDoneCount(batch.length, sent) };
    } catch (err) {
      // Packing (createBatch opens the link) or anything unexpected: classify; never throw to the drain loop.
      const c = classifySendError(err);
      return { kind: "retryable", reason: c.reason, acceptedCount: leadingDoneCount(batch.length, sent) };
    }
    if (rejected.length > 0) {
      this.options.logger.warn({ sink: this.name, rejected: rejected.length }, "records rejected by Event Hubs (dead-lettered)");
      return { kind: "ok", rejected: rejected.sort((a, b) => a.seq - b.seq) };
    }
    return { kind: "ok" };
  }

  /** Packs the entries into EventDataBatches, per partition key, in order; records too large for any batch are rejected. */
  private async pack(batch: readonly OutboxEntry[], rejected: RejectedRecord[], signal: AbortSignal): Promise<SendUnit[]> {
    const { producer } = this.options;
    const units: SendUnit[] = [];
    const groups = groupByPartitionKey(batch, this.options.partitionKeyField);
    // One empty batch per key up front, concurrently (createBatch is async but only reads the open link's size).
    const firstBatches = await Promise.all(groups.map((group) => producer.createBatch(this.batchOptions(group.partitionKey, signal))));
    for (const [groupIndex, group] of groups.entries()) {
      const keyId = String(groupIndex);
      let current: SendUnit = { keyId, batch: firstBatches[groupIndex]!, indexes: [] };
      for (const index of group.indexes) {
        const entry = batch[index]!;
        const event = toEventData(entry);
        if (current.batch.tryAdd(event)) {
          current.indexes.push(index);
          continue;
        }
        if (current.indexes.length > 0) {
          units.push(current);
          current = { keyId, batch: await producer.createBatch(this.batchOptions(group.partitionKey, signal)), indexes: [] };
          if (current.batch.tryAdd(event)) {
            current.indexes.push(index);
            continue;
          }
        }
        rejected.push({
          seq: entry.seq,
          reason: `record of ${Buffer.byteLength(entry.json)} bytes does not fit in one event (max message size ${current.batch.maxSizeInBytes} bytes)`,
        });
      }
      if (current.indexes.length > 0) units.push(current);
    }
    return units;
  }

  private batchOptions(partitionKey: string | undefined, signal: AbortSignal): { abortSignal: AbortSignal; partitionKey?: string } {
    return partitionKey !== undefined ? { abortSignal: signal, partitionKey } : { abortSignal: signal };
  }

  /**
   * Sends the units in waves of up to `maxConcurrentBatches`, never two of one key in the same wave (so one key's
   * events keep their order). Stops at the first wave with a retryable failure and returns it.
   */
  private async sendUnits(
    batch: readonly OutboxEntry[],
    units: readonly SendUnit[],
    sent: Set<number>,
    rejected: RejectedRecord[],
    signal: AbortSignal,
  ): Promise<{ kind: "retryable"; reason: string; retryAfterMs?: number } | undefined> {
    const { producer } = this.options;
    let next = 0;
    while (next < units.length) {
      const wave: SendUnit[] = [];
      const keys = new Set<string>();
      while (next < units.length && wave.length < this.options.maxConcurrentBatches && !keys.has(units[next]!.keyId)) {
        keys.add(units[next]!.keyId);
        wave.push(units[next]!);
        next++;
      }
      const outcomes = await Promise.allSettled(wave.map((unit) => producer.sendBatch(unit.batch, { abortSignal: signal })));
      let failure: { kind: "retryable"; reason: string; retryAfterMs?: number } | undefined;
      for (const [i, outcome] of outcomes.entries()) {
        const unit = wave[i]!;
        if (outcome.status === "fulfilled") {
          for (const index of unit.indexes) sent.add(index);
          continue;
        }
        const c = classifySendError(outcome.reason);
        if (c.kind === "reject-record") {
          const retry = await this.sendOneByOne(batch, unit, sent, rejected, signal, c.reason);
          failure ??= retry;
        } else {
          failure ??= c;
        }
      }
      if (failure) return failure;
    }
    return undefined;
  }

  /** A unit the service refused as a whole (too large, quota): find out which records it refuses, one by one. */
  private async sendOneByOne(
    batch: readonly OutboxEntry[],
    unit: SendUnit,
    sent: Set<number>,
    rejected: RejectedRecord[],
    signal: AbortSignal,
    unitReason: string,
  ): Promise<{ kind: "retryable"; reason: string; retryAfterMs?: number } | undefined> {
    if (unit.indexes.length === 1) {
      rejected.push({ seq: batch[unit.indexes[0]!]!.seq, reason: unitReason });
      return undefined;
    }
    const partitionKey = unit.batch.partitionKey;
    for (const index of unit.indexes) {
      const entry = batch[index]!;
      try {
        await this.options.producer.sendBatch([toEventData(entry)], { abortSignal: signal, ...(partitionKey !== undefined ? { partitionKey } : {}) });
        sent.add(index);
      } catch (err) {
        const c = classifySendError(err);
        if (c.kind !== "reject-record") return c;
        rejected.push({ seq: entry.seq, reason: c.reason });
      }
    }
    return undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.options.producer.close();
  }
}
