// The outbox: records waiting for the sinks and, per (sink, record), their delivery state (ledger.ts), in the store's
// database. Appends, the drainers' reads and outcomes, the ledger commands and the size cap (eviction to the
// dead-letter files) all go through here; every write is one store transaction.
import type { SefRecord } from "@sef/contract/record.js";
import type { CollectorState } from "../collector/state.js";
import { CollectorStateTables } from "../collector/state-tables.js";
import type { OutboxEntry } from "./outbox-entry.js";
import type { Store } from "../store/store.js";
import { query } from "../store/sql.js";
import type { DeadLetterFile } from "./dead-letter.js";
import {
  DeliveryLedger,
  type DeadLetterEntry,
  type EvictedDelivery,
  type EvictionCounts,
  type LedgerOutcome,
  type ParkedSink,
  type ReplayFrom,
  type SinkLedgerStatus,
} from "./ledger.js";

export type {
  DeadLetterEntry,
  EvictedDelivery,
  EvictionCounts,
  LedgerOutcome,
  ParkedSink,
  ReplayFrom,
  SinkLedgerStatus,
} from "./ledger.js";

export const outboxDefaults = { maxOutboxBytes: 256 * 1024 * 1024 } as const;

/** Why records left the outbox unsent: the only eviction reason today. */
export const overCapReason = "evicted: the outbox was over maxOutboxBytes before this sink took the record";

export interface OutboxOptions {
  /** Cap on the JSON bytes held in the outbox; past it the oldest records are evicted (see `evictOverCap`). */
  maxOutboxBytes: number;
}

export class Outbox {
  /** The collector state saved with each document's records (`commitDocument`). */
  readonly collectorState: CollectorStateTables;
  private readonly ledger: DeliveryLedger;
  private readonly readAfterQuery;
  private evictionBlocked = false;

  private constructor(
    private readonly store: Store,
    private readonly options: OutboxOptions,
  ) {
    this.ledger = new DeliveryLedger(store.database);
    this.collectorState = new CollectorStateTables(store);
    this.readAfterQuery = query<[number, number], { seq: number; json: string }>(
      store.database,
      "SELECT seq, json FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?",
    );
  }

  /**
   * The outbox of an open store (its tables are the store's: store/migrations.ts). Next-attempt times are monotonic,
   * meaningful only within one process, so a writable store has every pending record due at open.
   */
  static open(store: Store, options: OutboxOptions = { maxOutboxBytes: Number.MAX_SAFE_INTEGER }): Outbox {
    if (!store.readOnly)
      store.write(() =>
        store.database.exec(
          "UPDATE deliveries SET next_attempt_ms = 0 WHERE state = 'pending' AND next_attempt_ms <> 0",
        ),
      );
    return new Outbox(store, options);
  }

  /**
   * Saves the collector state and appends the records (pending for every registered sink) in one transaction:
   * either both are durable or neither is. Returns the appended entries (with their outbox positions).
   */
  commitDocument(state: CollectorState, records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    return this.write(() => {
      this.collectorState.save(state);
      return this.ledger.appendRecords(records, nowMs);
    });
  }

  /** Appends records that do not change the collector state (heartbeats, approvals, hooks); joins an open transaction. */
  append(records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    return this.write(() => this.ledger.appendRecords(records, nowMs));
  }

  /** Records held in the outbox after `seq`, oldest first (whatever their delivery state). */
  readAfter(seq: number, limit: number): OutboxEntry[] {
    return this.readAfterQuery
      .all(seq, limit)
      .map((row) => ({ seq: row.seq, json: row.json, record: JSON.parse(row.json) as SefRecord }));
  }

  /**
   * Registers the configured sinks: a new one starts at the head (it gets records appended from now on; see
   * `backfill`); a sink no longer configured is parked (its rows wait for a sink of that name). Returns the new names.
   */
  registerSinks(names: readonly string[], nowMs: number = Date.now()): string[] {
    return this.write(() => this.ledger.register(names, nowMs));
  }

  /** Sinks not configured at the last registration whose deliveries are kept for them (see DeliveryLedger.register). */
  parkedSinks(): ParkedSink[] {
    return this.ledger.parked();
  }

  /**
   * Gives a sink up for good: its pending records go to `writeDeadLetters` with `reason` (durable before anything is
   * deleted), then its rows. Returns what it held, or undefined when the outbox knows no such sink.
   */
  dropSink(
    sink: string,
    reason: string,
    writeDeadLetters: (items: readonly EvictedDelivery[]) => void,
  ): ParkedSink | undefined {
    return this.write(() => this.ledger.dropSink(sink, reason, writeDeadLetters));
  }

  /** Makes every record still held from `from` on pending for `sink` again (`--replay-from`). Returns how many. */
  backfill(sink: string, from: ReplayFrom): number {
    return this.write(() => this.ledger.backfill(sink, from));
  }

  /** Pending records of `sink` whose next attempt is due, oldest first (only those after `afterSeq`, when given). */
  due(sink: string, limit: number, nowMs: number, afterSeq = 0): OutboxEntry[] {
    return this.ledger.due(sink, limit, nowMs, afterSeq);
  }

  /** Earliest next attempt among the sink's pending records, or null when nothing is pending. */
  nextAttemptMs(sink: string): number | null {
    return this.ledger.nextAttemptMs(sink);
  }

  /** Applies one send's per-record outcomes in one transaction. */
  applyOutcomes(
    sink: string,
    outcomes: readonly LedgerOutcome[],
    nowMs: number,
  ): { delivered: number; retried: number; rejected: number } {
    return this.write(() => this.ledger.apply(sink, outcomes, nowMs));
  }

  /** Undelivered records of a sink and the creation time of the oldest (O(1): counters and an index lookup). */
  depth(sink: string): { records: number; oldestCreatedMs: number | null } {
    const s = this.ledger.status(sink);
    return { records: s.pending, oldestCreatedMs: s.oldestPendingCreatedMs };
  }

  /** Per registered sink: pending, dead-lettered, delivered, oldest pending, last delivery. */
  status(): SinkLedgerStatus[] {
    return this.ledger.registeredSinks.map((sink) => this.ledger.status(sink));
  }

  deadLetters(sink?: string): DeadLetterEntry[] {
    return this.ledger.deadLetters(sink);
  }

  /** Makes dead-lettered deliveries pending again; the records keep their RecordId. Returns counts by sink. */
  replayDeadLetters(filter: { sink?: string; reasonContains?: string }): Map<string, number> {
    return this.write(() => this.ledger.replay(filter));
  }

  /** Forgets dead-lettered deliveries (the dead-letter files keep their lines); returns how many, by sink. */
  purgeDeadLetters(filter: {
    sink?: string;
    reasonContains?: string;
    deadLetteredUpToMs?: number;
  }): Map<string, number> {
    return this.write(() => this.ledger.purge(filter));
  }

  /**
   * Size cap policy: when the outbox holds more than `maxOutboxBytes`, the oldest records are removed (down to 90 %
   * of the cap). The dead-letter lines of the deliveries still pending are written to `deadLetters` and made durable
   * before anything is deleted; if that throws, nothing is deleted, the outbox reports blocked (readiness) and the
   * error is rethrown. Returns the evicted counts by sink.
   */
  evictOverCap(deadLetters: DeadLetterFile, nowMs: number): EvictionCounts {
    if (this.ledger.outboxBytes <= this.options.maxOutboxBytes) {
      this.evictionBlocked = false;
      return new Map();
    }
    const target = Math.floor(this.options.maxOutboxBytes * 0.9);
    try {
      const counts = this.write(() =>
        this.ledger.evictDownTo(target, overCapReason, (items) => deadLetters.writeSync(items, nowMs)),
      );
      this.evictionBlocked = false;
      return counts;
    } catch (err) {
      this.evictionBlocked = true;
      throw err;
    }
  }

  /** Readiness: false while the outbox is over its cap and the dead-letter file cannot take the evicted records. */
  isEvictionBlocked(): boolean {
    return this.evictionBlocked;
  }

  headSeq(): number {
    return this.ledger.headSeq();
  }

  get bytesInOutbox(): number {
    return this.ledger.outboxBytes;
  }

  /** One store transaction; the checkpoint worker hears how many bytes it moved, and a rollback re-reads the totals. */
  private write<T>(body: () => T): T {
    const bytesBefore = this.ledger.outboxBytes;
    return this.store.write(body, {
      bytesWritten: () => Math.abs(this.ledger.outboxBytes - bytesBefore),
      onRollback: () => this.ledger.reload(),
    });
  }
}
