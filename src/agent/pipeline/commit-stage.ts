// Commit stage: the one writer of records into the outbox. Commits a document's state with its records (or appends
// records of other kinds: heartbeats, hooks, approvals), counts them, keeps the outbox within its cap, then announces
// the durable entries on the records-committed signal (followed by the drain, act and heartbeat stages).
import type { Logger } from "pino";
import type { SefRecord } from "@sef/contract/record.js";
import type { CollectorState } from "../collector/state.js";
import type { Outbox } from "../delivery/outbox.js";
import type { OutboxEntry } from "../delivery/outbox-entry.js";
import type { DeadLetterFile } from "../delivery/dead-letter.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { Clock } from "@sef/runtime/clock.js";
import { RecordsCommitted } from "./records-committed.js";

export interface CommitStageOptions {
  outbox: Outbox;
  deadLetters: DeadLetterFile;
  metrics: AgentMetrics;
  logger: Logger;
  clock: Clock;
  maxOutboxBytes: number;
}

export class CommitStage {
  /** Announces each durable batch of entries. */
  readonly committed = new RecordsCommitted();

  constructor(private readonly options: CommitStageOptions) {}

  /** Saves the collector state and its records in one transaction; throws (nothing saved) when the store fails. */
  commitDocument(state: CollectorState, records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    const entries = this.options.outbox.commitDocument(state, records, nowMs);
    this.afterCommit(entries);
    return entries;
  }

  /** Appends records that are not transitions (heartbeats, approvals, hooks); joins a transaction the caller holds. */
  append(records: readonly SefRecord[]): OutboxEntry[] {
    const entries = this.options.outbox.append(records, this.options.clock.now());
    this.afterCommit(entries);
    return entries;
  }

  private afterCommit(entries: readonly OutboxEntry[]): void {
    if (entries.length === 0) return;
    for (const e of entries) this.options.metrics.recordsWritten.inc({ type: e.record.RecordType });
    this.evictOverCap();
    this.committed.announce(entries);
  }

  /** Keeps the outbox within its cap: dead-letter lines on disk first, then the records leave (see Outbox.evictOverCap). */
  private evictOverCap(): void {
    const { outbox, deadLetters, metrics, logger, clock, maxOutboxBytes } = this.options;
    try {
      const counts = outbox.evictOverCap(deadLetters, clock.now());
      let total = 0;
      for (const [sink, c] of counts) {
        if (c.pending > 0) metrics.outboxEvicted.inc({ sink, reason: "over_cap" }, c.pending);
        if (c.deadLettered > 0) metrics.outboxEvicted.inc({ sink, reason: "over_cap_dead_lettered" }, c.deadLettered);
        total += c.pending;
      }
      if (counts.size > 0) metrics.setParked(outbox.parkedSinks());
      if (total > 0) {
        metrics.storeDroppedRecords.inc(total);
        logger.error(
          { deliveries: total, capBytes: maxOutboxBytes, directory: deadLetters.directory },
          "outbox over its size cap: oldest records moved to the dead-letter files",
        );
      }
    } catch (err) {
      metrics.storeErrors.inc();
      logger.error(
        { err },
        "outbox over its size cap but the dead-letter file cannot be written: nothing evicted; not ready",
      );
    }
  }
}
