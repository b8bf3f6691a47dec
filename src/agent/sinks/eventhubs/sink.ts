// The Event Hubs sink: one `send` = the batch grouped by partition key, packed into EventDataBatches up to the link's
// max message size, sent in order (batches of different keys concurrently); returns one outcome per record.
import { setMaxListeners } from "node:events";
import type { EventDataBatch } from "@azure/event-hubs";
import type { Logger } from "pino";
import {
  allOutcomes,
  delivered,
  rejected as rejectedOutcome,
  retry,
  type RetryOutcome,
  type SendOutcomes,
  type Sink,
} from "../sink.js";
import type { OutboxEntry } from "../../delivery/outbox-entry.js";
import { classifySendError } from "./classify.js";
import { groupByPartitionKey, toEventData, type KeyGroup } from "./encode.js";
import type { AgentMetrics } from "../../observability/metrics.js";
import { createSinkProducer, describeTarget } from "./client.js";
import type { ProducerOperations } from "./idle-producer.js";
import type { EventHubsSettings, PartitionKeyField, PartitionRouting } from "./settings.js";
import type { SinkRetrySettings } from "../delivery-settings.js";

export interface EventHubsSinkOptions {
  /** An EventHubProducerClient, or the IdleClosingProducer that holds one only while sending. */
  readonly producer: ProducerOperations;
  readonly logger: Logger;
  readonly partitionKeyField: PartitionKeyField;
  /** `hash`: route by a stable hash of the key to a partition and send whole-partition batches (default `key`). */
  readonly partitionRouting?: PartitionRouting;
  readonly maxBatchRecords: number;
  readonly lingerMs: number;
  /** The sink's own retry policy (its section's `retry`). */
  readonly retryPolicy?: SinkRetrySettings | undefined;
  /** Event batches of one send in flight at once; batches of the same partition key never overlap. */
  readonly maxConcurrentBatches: number;
  /**
   * Hash routing re-reads the hub's partition ids when they are older than this (default 10 s, as the SDK's buffered
   * producer does), so a partition count raised on a Premium or Dedicated namespace is followed, as the service would.
   */
  readonly partitionIdsMaxAgeMs?: number;
  /** Milliseconds since the epoch (tests pass a fake clock's). */
  readonly now?: () => number;
  readonly name?: string;
}

export const defaultPartitionIdsMaxAgeMs = 10_000;

/** A record the hub will never accept, with its reason. */
interface RejectedRecord {
  readonly seq: number;
  readonly reason: string;
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
  readonly retryPolicy: SinkRetrySettings | undefined;
  private closed = false;
  private partitionIdsRead: { readonly ids: readonly string[]; readonly atMs: number } | undefined;

  constructor(private readonly options: EventHubsSinkOptions) {
    this.name = options.name ?? "eventhubs";
    this.maxBatchRecords = options.maxBatchRecords;
    this.lingerMs = options.lingerMs;
    this.retryPolicy = options.retryPolicy;
  }

  async send(batch: readonly OutboxEntry[], outerSignal: AbortSignal): Promise<SendOutcomes> {
    if (batch.length === 0) return [];
    if (this.closed) return allOutcomes(batch, retry("eventhubs sink is closed"));
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

  private async sendWith(batch: readonly OutboxEntry[], signal: AbortSignal): Promise<SendOutcomes> {
    // Indexes of the entries the hub has accepted in this send.
    const sent = new Set<number>();
    const rejected: RejectedRecord[] = [];
    let failure: RetryOutcome | undefined;
    try {
      const units = await this.pack(batch, rejected, signal);
      failure = await this.sendUnits(batch, units, sent, rejected, signal);
    } catch (err) {
      // Packing (createBatch opens the link) or anything unexpected: classify; never throw to the drainer.
      failure = retry(classifySendError(err).reason);
    }
    if (rejected.length > 0)
      this.options.logger.warn(
        { sink: this.name, rejected: rejected.length },
        "records rejected by Event Hubs (dead-lettered)",
      );
    const rejectedBySeq = new Map(rejected.map((r) => [r.seq, r.reason]));
    const notSent = failure ?? retry("not sent (internal: no outcome)");
    return batch.map((entry, index) => {
      if (sent.has(index)) return delivered;
      const reason = rejectedBySeq.get(entry.seq);
      return reason !== undefined ? rejectedOutcome(reason) : notSent;
    });
  }

  /**
   * Packs the entries into EventDataBatches, per partition key, in order; records too large for any
   * batch are rejected.
   */
  private async pack(
    batch: readonly OutboxEntry[],
    rejected: RejectedRecord[],
    signal: AbortSignal,
  ): Promise<SendUnit[]> {
    const { producer } = this.options;
    const units: SendUnit[] = [];
    const partitionIds = this.options.partitionRouting === "hash" ? await this.partitionIds(signal) : undefined;
    const groups = groupByPartitionKey(batch, this.options.partitionKeyField, partitionIds).filter(
      (group) => group.indexes.length > 0,
    );
    // One empty batch per group up front, concurrently (createBatch is async but only reads the open link's size).
    const firstBatches = await Promise.all(
      groups.map((group) => producer.createBatch(this.batchOptions(group, signal))),
    );
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
          current = { keyId, batch: await producer.createBatch(this.batchOptions(group, signal)), indexes: [] };
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

  private batchOptions(
    group: KeyGroup,
    signal: AbortSignal,
  ): { abortSignal: AbortSignal; partitionKey?: string; partitionId?: string } {
    if (group.partitionId !== undefined) return { abortSignal: signal, partitionId: group.partitionId };
    return group.partitionKey !== undefined
      ? { abortSignal: signal, partitionKey: group.partitionKey }
      : { abortSignal: signal };
  }

  /**
   * The hub's partition ids (hash routing), re-read once they are `partitionIdsMaxAgeMs` old. When a re-read fails the
   * ids read before are used (the send that follows fails the same way if the hub is unreachable).
   */
  private async partitionIds(signal: AbortSignal): Promise<readonly string[]> {
    const nowMs = (this.options.now ?? Date.now)();
    const previous = this.partitionIdsRead;
    if (previous && nowMs - previous.atMs < (this.options.partitionIdsMaxAgeMs ?? defaultPartitionIdsMaxAgeMs))
      return previous.ids;
    let ids: readonly string[];
    try {
      ids = await this.options.producer.getPartitionIds({ abortSignal: signal });
    } catch (err) {
      if (!previous) throw err;
      this.options.logger.debug(
        { sink: this.name, reason: classifySendError(err).reason },
        "could not re-read the partition ids; using the last ones",
      );
      return previous.ids;
    }
    if (previous && ids.length !== previous.ids.length) {
      this.options.logger.info(
        { sink: this.name, from: previous.ids.length, to: ids.length },
        "event hub partition count changed; hash routing follows it",
      );
    }
    this.partitionIdsRead = { ids, atMs: nowMs };
    return ids;
  }

  /**
   * Sends the units with up to `maxConcurrentBatches` in flight, one chain per partition key: a key's next unit starts
   * only after its previous one was accepted (so one key's events keep their order), and a new send starts as soon
   * as any finishes. After the first retryable failure no new send starts; the failure is returned once the sends in
   * flight have settled.
   */
  private async sendUnits(
    batch: readonly OutboxEntry[],
    units: readonly SendUnit[],
    sent: Set<number>,
    rejected: RejectedRecord[],
    signal: AbortSignal,
  ): Promise<RetryOutcome | undefined> {
    const chains = new Map<string, SendUnit[]>();
    for (const unit of units) {
      const chain = chains.get(unit.keyId);
      if (chain) chain.push(unit);
      else chains.set(unit.keyId, [unit]);
    }
    const queue = [...chains.values()];
    let failure: RetryOutcome | undefined;
    const runChain = async (chain: readonly SendUnit[]): Promise<void> => {
      for (const unit of chain) {
        if (failure) return;
        const outcome = await this.sendUnit(batch, unit, sent, rejected, signal);
        if (outcome) {
          failure ??= outcome;
          return;
        }
      }
    };
    const worker = async (): Promise<void> => {
      for (let chain = queue.shift(); chain && !failure; chain = queue.shift()) await runChain(chain);
    };
    await Promise.all(Array.from({ length: Math.min(this.options.maxConcurrentBatches, queue.length) }, worker));
    return failure;
  }

  /** Sends one unit; returns a retryable failure, or undefined when it was accepted (or its records were rejected). */
  private async sendUnit(
    batch: readonly OutboxEntry[],
    unit: SendUnit,
    sent: Set<number>,
    rejected: RejectedRecord[],
    signal: AbortSignal,
  ): Promise<RetryOutcome | undefined> {
    try {
      await this.options.producer.sendBatch(unit.batch, { abortSignal: signal });
      for (const index of unit.indexes) sent.add(index);
      return undefined;
    } catch (err) {
      const c = classifySendError(err);
      if (c.kind === "rejected") return this.sendOneByOne(batch, unit, sent, rejected, signal, c.reason);
      return c;
    }
  }

  /** A unit the service refused as a whole (too large, quota): find out which records it refuses, one by one. */
  private async sendOneByOne(
    batch: readonly OutboxEntry[],
    unit: SendUnit,
    sent: Set<number>,
    rejected: RejectedRecord[],
    signal: AbortSignal,
    unitReason: string,
  ): Promise<RetryOutcome | undefined> {
    if (unit.indexes.length === 1) {
      rejected.push({ seq: batch[unit.indexes[0]!]!.seq, reason: unitReason });
      return undefined;
    }
    const { partitionKey, partitionId } = unit.batch;
    const target = partitionId !== undefined ? { partitionId } : partitionKey !== undefined ? { partitionKey } : {};
    for (const index of unit.indexes) {
      const entry = batch[index]!;
      try {
        await this.options.producer.sendBatch([toEventData(entry)], { abortSignal: signal, ...target });
        sent.add(index);
      } catch (err) {
        const c = classifySendError(err);
        if (c.kind !== "rejected") return c;
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

/** Builds the sink from validated settings; `env` is where `connectionStringEnv` is looked up (default process.env). */
export function createEventHubsSink(
  settings: EventHubsSettings,
  context: { logger: Logger; agentVersion?: string; metrics?: AgentMetrics },
  env: NodeJS.ProcessEnv = process.env,
): EventHubsSink {
  const { producer, auth } = createSinkProducer(settings, context, env);
  context.logger.info(
    {
      sink: "eventhubs",
      target: describeTarget(auth),
      partitionKeyField: settings.partitionKeyField,
      partitionRouting: settings.partitionRouting,
      idleCloseMs: settings.idleCloseMs,
    },
    "eventhubs sink ready",
  );
  return new EventHubsSink({
    producer,
    logger: context.logger,
    partitionKeyField: settings.partitionKeyField,
    partitionRouting: settings.partitionRouting,
    maxBatchRecords: settings.maxBatchRecords,
    lingerMs: settings.lingerMs,
    retryPolicy: settings.retry,
    maxConcurrentBatches: settings.maxConcurrentBatches,
  });
}
