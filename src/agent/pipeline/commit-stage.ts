// Commit stage: the one writer of records into the store. Commits a document's state with its records (or appends
// records of other kinds), counts them, keeps the outbox within its cap, then hands the entries to its listeners
// (the drain stage and the actions).
import type { Logger } from "pino";
import type { SefRecord } from "@sef/contract/record.js";
import type { CollectorState } from "../collector/state.js";
import type { Store } from "../store/store.js";
import type { OutboxEntry } from "../store/outbox-entry.js";
import type { DeadLetterFile } from "../sinks/dead-letter.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { Clock } from "../util/clock.js";

export interface CommitStageOptions {
  store: Store;
  deadLetters: DeadLetterFile;
  metrics: AgentMetrics;
  logger: Logger;
  clock: Clock;
  maxOutboxBytes: number;
}

export class CommitStage {
  private readonly listeners: Array<(entries: readonly OutboxEntry[]) => void> = [];

  constructor(private readonly options: CommitStageOptions) {}

  /** Called with each durable batch of entries (never empty). */
  onCommitted(listener: (entries: readonly OutboxEntry[]) => void): void {
    this.listeners.push(listener);
  }

  /** Saves the collector state and its records in one transaction; throws (nothing saved) when the store fails. */
  commitDocument(state: CollectorState, records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    const entries = this.options.store.commitDocument(state, records, nowMs);
    this.afterCommit(entries);
    return entries;
  }

  /** Appends records that are not transitions (heartbeats, approvals, hooks). */
  append(records: readonly SefRecord[]): OutboxEntry[] {
    const entries = this.options.store.append(records, this.options.clock.now());
    this.afterCommit(entries);
    return entries;
  }

  private afterCommit(entries: readonly OutboxEntry[]): void {
    if (entries.length === 0) return;
    for (const e of entries) this.options.metrics.recordsWritten.inc({ type: e.record.RecordType });
    this.evictOverCap();
    for (const listener of this.listeners) listener(entries);
  }

  /** Keeps the outbox within its cap: dead-letter lines on disk first, then the records leave (see Store.evictOverCap). */
  private evictOverCap(): void {
    const { store, deadLetters, metrics, logger, clock, maxOutboxBytes } = this.options;
    try {
      const counts = store.evictOverCap((items) => deadLetters.writeSync(items, clock.now()));
      let total = 0;
      for (const [sink, c] of counts) {
        if (c.pending > 0) metrics.outboxEvicted.inc({ sink, reason: "over_cap" }, c.pending);
        if (c.deadLettered > 0) metrics.outboxEvicted.inc({ sink, reason: "over_cap_dead_lettered" }, c.deadLettered);
        total += c.pending;
      }
      if (total > 0) {
        metrics.storeDroppedRecords.inc(total);
        logger.error({ deliveries: total, capBytes: maxOutboxBytes, directory: deadLetters.directory }, "outbox over its size cap: oldest records moved to the dead-letter files");
      }
    } catch (err) {
      metrics.storeErrors.inc();
      logger.error({ err }, "outbox over its size cap but the dead-letter file cannot be written: nothing evicted; not ready");
    }
  }
}
