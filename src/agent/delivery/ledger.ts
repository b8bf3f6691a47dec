// The delivery ledger (SQL over the store's database, used through outbox.ts): for each (sink, record) a row that is pending (attempts, next attempt time,
// last error) or dead-lettered (reason); a delivered row is deleted, and a record no row needs any more leaves the outbox.
// Per-sink counters and the outbox byte total are kept in the same transactions, so depth and bytes are O(1) lookups.
import type { DatabaseSync } from "node:sqlite";
import type { SefRecord } from "@sef/contract/record.js";
import type { OutboxEntry } from "./outbox-entry.js";
import { query } from "../store/sql.js";
import { MetaValues } from "../store/meta.js";
import { InternalError } from "@sef/errors/sef-error.js";

/** What became of one record sent to one sink (the drainer's view of a sink's per-record outcome). */
export type LedgerOutcome =
  | { readonly seq: number; readonly kind: "delivered" }
  | { readonly seq: number; readonly kind: "retry"; readonly reason: string; readonly nextAttemptMs: number }
  | { readonly seq: number; readonly kind: "rejected"; readonly reason: string };

export interface SinkLedgerStatus {
  readonly sink: string;
  readonly pending: number;
  readonly deadLettered: number;
  readonly delivered: number;
  readonly oldestPendingCreatedMs: number | null;
  readonly lastDeliveryMs: number | null;
}

export interface DeadLetterEntry {
  readonly sink: string;
  readonly seq: number;
  readonly recordId: string;
  readonly reason: string;
  readonly deadLetteredMs: number;
  readonly attempts: number;
  readonly json: string;
}

/** A record leaving the outbox over its cap, for one sink that had not taken it (its dead-letter line). */
export interface EvictedDelivery {
  readonly sink: string;
  readonly seq: number;
  readonly json: string;
  readonly reason: string;
}

/** Evicted records counted by sink and by what they were for that sink. */
export type EvictionCounts = Map<string, { pending: number; deadLettered: number }>;

export type ReplayFrom = { readonly seq: number } | { readonly sinceMs: number };

/** A sink the ledger holds deliveries for that the last registration did not configure: its rows wait for it. */
export interface ParkedSink {
  readonly sink: string;
  readonly pending: number;
  readonly deadLettered: number;
}

/** Past this many runs of consecutive seqs, a delivery is applied as one list instead of run by run. */
const maxRunsPerDelivery = 16;

/** `seqs` as runs [first, last] of consecutive values, in ascending order (duplicates ignored). */
function consecutiveRuns(seqs: readonly number[]): Array<[number, number]> {
  const sorted = [...seqs].sort((a, b) => a - b);
  const runs: Array<[number, number]> = [];
  for (const seq of sorted) {
    const run = runs.at(-1);
    if (run && seq <= run[1] + 1) run[1] = Math.max(run[1], seq);
    else runs.push([seq, seq]);
  }
  return runs;
}

export class DeliveryLedger {
  private readonly s;
  /** The meta rows the ledger owns: `configured_sinks` (the names the last registration configured), `outbox_bytes`. */
  private readonly meta: MetaValues;
  private bytes: number;
  private sinkNames: string[];

  constructor(private readonly db: DatabaseSync) {
    this.s = { ...deliveryStatements(db), ...sinkStatements(db), ...deadLetterAndEvictionStatements(db) };
    this.meta = new MetaValues(db);
    this.bytes = 0;
    this.sinkNames = [];
    this.reload();
  }

  get outboxBytes(): number {
    return this.bytes;
  }

  get registeredSinks(): readonly string[] {
    return this.sinkNames;
  }

  /** Appends records with one pending delivery per registered sink. Call inside a transaction. */
  appendRecords(records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    const entries: OutboxEntry[] = [];
    for (const record of records) {
      const json = JSON.stringify(record);
      const size = Buffer.byteLength(json);
      const info = this.s.insertRecord.run(record.RecordId, record.RecordType, json, nowMs, size);
      const seq = Number(info.lastInsertRowid);
      for (const sink of this.sinkNames) this.s.insertPending.run(seq, sink);
      this.bytes += size;
      entries.push({ seq, record, json });
    }
    for (const sink of this.sinkNames) this.s.addPending.run(entries.length, sink);
    this.saveBytes();
    return entries;
  }

  /** Pending records of `sink` after `afterSeq` whose next attempt is due at `nowMs`, oldest first. */
  due(sink: string, limit: number, nowMs: number, afterSeq = 0): OutboxEntry[] {
    return this.s.due
      .all(sink, afterSeq, nowMs, limit)
      .map((row) => ({ seq: row.seq, json: row.json, record: JSON.parse(row.json) as SefRecord }));
  }

  /** Earliest next attempt among the sink's pending records (null when none is pending). */
  nextAttemptMs(sink: string): number | null {
    return this.s.nextAttempt.get(sink)?.at ?? null;
  }

  /**
   * Applies the outcomes of one send. Call inside a transaction. Only pending rows change: an outcome for a record
   * already delivered or dead-lettered is ignored, so applying the same outcomes twice is harmless.
   */
  apply(
    sink: string,
    outcomes: readonly LedgerOutcome[],
    nowMs: number,
  ): { delivered: number; retried: number; rejected: number } {
    let retried = 0;
    let rejected = 0;
    const deliveredSeqs: number[] = [];
    for (const outcome of outcomes) {
      if (outcome.kind === "delivered") {
        deliveredSeqs.push(outcome.seq);
      } else if (outcome.kind === "retry") {
        retried += Number(this.s.retry.run(outcome.nextAttemptMs, outcome.reason, outcome.seq, sink).changes);
      } else {
        if (outcome.reason.trim() === "") throw new InternalError("a dead-letter needs a reason");
        rejected += Number(this.s.reject.run(outcome.reason, nowMs, outcome.seq, sink).changes);
      }
    }
    const delivered = this.deliver(sink, deliveredSeqs);
    this.s.settle.run(delivered + rejected, delivered, rejected, delivered > 0 ? nowMs : null, sink);
    this.saveBytes();
    return { delivered, retried, rejected };
  }

  /** Deletes the sink's pending rows of `seqs` and the records no sink needs any more; returns how many rows went. */
  private deliver(sink: string, seqs: number[]): number {
    const runs = consecutiveRuns(seqs);
    if (runs.length > maxRunsPerDelivery) {
      const removed = this.s.deliver.all(sink, JSON.stringify(seqs));
      for (const row of this.s.dropIfUnneeded.all(JSON.stringify(removed.map((r) => r.seq)))) this.bytes -= row.bytes;
      return removed.length;
    }
    let delivered = 0;
    for (const [first, last] of runs) {
      const removed = Number(this.s.deliverRun.run(sink, first, last).changes);
      delivered += removed;
      for (const row of this.s.dropRunIfUnneeded.all(first, last)) this.bytes -= row.bytes;
    }
    return delivered;
  }

  /**
   * Registers the configured sinks. A new sink starts at the head: it gets the records appended from now on. A sink
   * no longer configured is parked: its pending and dead-lettered rows stay (they hold their records in the outbox,
   * counted toward the cap) and it gets no new records; a sink of that name configured again resumes them. A parked
   * sink with no rows left is forgotten. Call inside a transaction. Returns the names that were new.
   */
  register(names: readonly string[], nowMs: number): string[] {
    const configured = new Set(names);
    for (const row of this.s.sinkCounts.all())
      if (!configured.has(row.sink) && row.pending === 0 && row.dead === 0) this.s.dropSink.run(row.sink);
    const added: string[] = [];
    for (const sink of names) if (Number(this.s.registerSink.run(sink, nowMs).changes) > 0) added.push(sink);
    this.meta.set("configured_sinks", [...configured].sort());
    this.reload();
    return added;
  }

  /** The sinks holding rows that the last registration did not configure (none before any registration), by name. */
  parked(): ParkedSink[] {
    const configured = this.configuredSinks();
    if (configured === undefined) return [];
    return this.s.sinkCounts
      .all()
      .filter((row) => !configured.has(row.sink))
      .map((row) => ({ sink: row.sink, pending: row.pending, deadLettered: row.dead }));
  }

  /**
   * Gives a sink up: its pending records go to `writeDeadLetters` with `reason` (which must make them durable before
   * it returns; if it throws, nothing is deleted), then all its rows and its counters go, and the records no sink
   * needs any more leave the outbox. Its dead-lettered rows already have their lines. Call inside a transaction.
   * Returns what it held, or undefined when the ledger knows no such sink.
   */
  dropSink(
    sink: string,
    reason: string,
    writeDeadLetters: (items: readonly EvictedDelivery[]) => void,
  ): ParkedSink | undefined {
    const row = this.s.sinkRow.get(sink);
    if (row === undefined) return undefined;
    const pending = this.s.pendingOf.all(sink).map((r) => ({ sink, seq: r.seq, json: r.json, reason }));
    writeDeadLetters(pending);
    this.s.dropSinkDeliveries.run(sink);
    this.s.dropSink.run(sink);
    for (const orphan of this.s.dropOrphans.all()) this.bytes -= orphan.bytes;
    this.saveBytes();
    this.reload();
    return { sink, pending: pending.length, deadLettered: row.dead };
  }

  /** The names the last registration configured (stored with the ledger), or undefined before any registration. */
  private configuredSinks(): Set<string> | undefined {
    const stored = this.meta.get<string[]>("configured_sinks");
    return stored === undefined ? undefined : new Set(stored);
  }

  /** Makes every record still held from `from` on pending for `sink` (except those it already has a row for). Call inside a transaction. */
  backfill(sink: string, from: ReplayFrom): number {
    const info =
      "seq" in from ? this.s.backfillFromSeq.run(sink, from.seq) : this.s.backfillSince.run(sink, from.sinceMs);
    const added = Number(info.changes);
    this.s.addPending.run(added, sink);
    return added;
  }

  count(sink: string): { pending: number; deadLettered: number; delivered: number; lastDeliveryMs: number | null } {
    const row = this.s.sinkRow.get(sink);
    return {
      pending: row?.pending ?? 0,
      deadLettered: row?.dead ?? 0,
      delivered: row?.delivered ?? 0,
      lastDeliveryMs: row?.last_delivery_ms ?? null,
    };
  }

  status(sink: string): SinkLedgerStatus {
    const c = this.count(sink);
    const oldest = this.s.oldestPending.get(sink)?.created_ms ?? null;
    return {
      sink,
      pending: c.pending,
      deadLettered: c.deadLettered,
      delivered: c.delivered,
      oldestPendingCreatedMs: oldest,
      lastDeliveryMs: c.lastDeliveryMs,
    };
  }

  headSeq(): number {
    return this.s.headSeq.get()?.seq ?? 0;
  }

  deadLetters(sink?: string): DeadLetterEntry[] {
    return this.s.deadLetters.all(sink ?? null).map((r) => ({
      sink: r.sink,
      seq: r.seq,
      recordId: r.record_id,
      reason: r.reason,
      deadLetteredMs: r.settled_ms,
      attempts: r.attempts,
      json: r.json,
    }));
  }

  /** Makes dead-lettered deliveries pending again (same record, same RecordId). Call inside a transaction. */
  replay(filter: { sink?: string; reasonContains?: string }): Map<string, number> {
    const bySink = new Map<string, number>();
    for (const row of this.s.replay.all(filter.sink ?? null, filter.reasonContains ?? null))
      bySink.set(row.sink, (bySink.get(row.sink) ?? 0) + 1);
    for (const [sink, n] of bySink) this.s.unpend.run(n, n, sink);
    return bySink;
  }

  /**
   * Forgets dead-lettered deliveries (their dead-letter file lines stay): a record no sink needs any more leaves the
   * outbox. `deadLetteredUpToMs`: only those dead-lettered at or before that time. Call inside a transaction.
   */
  purge(filter: { sink?: string; reasonContains?: string; deadLetteredUpToMs?: number }): Map<string, number> {
    const bySink = new Map<string, number>();
    const seqs: number[] = [];
    for (const row of this.s.purge.all(
      filter.sink ?? null,
      filter.reasonContains ?? null,
      filter.deadLetteredUpToMs ?? null,
    )) {
      bySink.set(row.sink, (bySink.get(row.sink) ?? 0) + 1);
      seqs.push(row.seq);
    }
    for (const [sink, n] of bySink) this.s.forget.run(0, n, sink);
    for (const row of this.s.dropIfUnneeded.all(JSON.stringify(seqs))) this.bytes -= row.bytes;
    this.saveBytes();
    return bySink;
  }

  /**
   * Removes the oldest records until the outbox holds at most `targetBytes`. The dead-letter lines of the deliveries
   * still pending are handed to `writeDeadLetters` (which must make them durable) before anything is deleted; if it
   * throws, nothing is deleted. Call inside a transaction.
   */
  evictDownTo(
    targetBytes: number,
    reason: string,
    writeDeadLetters: (items: readonly EvictedDelivery[]) => void,
  ): EvictionCounts {
    const counts: EvictionCounts = new Map();
    let remaining = this.bytes;
    const victims: { seq: number; json: string; bytes: number }[] = [];
    let after = 0;
    while (remaining > targetBytes) {
      const batch = this.s.recordsAfter.all(after);
      if (batch.length === 0) break;
      for (const row of batch) {
        if (remaining <= targetBytes) break;
        victims.push(row);
        remaining -= row.bytes;
      }
      after = batch[batch.length - 1]!.seq;
    }
    if (victims.length === 0) return counts;
    const first = victims[0]!.seq;
    const last = victims[victims.length - 1]!.seq;
    const jsonBySeq = new Map(victims.map((v) => [v.seq, v.json]));
    const lines: EvictedDelivery[] = [];
    for (const row of this.s.deliveriesOf.all(first, last)) {
      const c = counts.get(row.sink) ?? { pending: 0, deadLettered: 0 };
      if (row.state === "pending") {
        c.pending += 1;
        lines.push({ sink: row.sink, seq: row.seq, json: jsonBySeq.get(row.seq)!, reason });
      } else {
        c.deadLettered += 1;
      }
      counts.set(row.sink, c);
    }
    writeDeadLetters(lines);
    this.s.dropDeliveriesUpTo.run(last);
    this.s.dropRecordsUpTo.run(last);
    for (const [sink, c] of counts) this.s.forget.run(c.pending, c.deadLettered, sink);
    this.bytes = remaining;
    this.saveBytes();
    return counts;
  }

  /** Re-reads what is cached in memory (after a rolled-back transaction). The registered sinks are the configured ones. */
  reload(): void {
    this.bytes = this.meta.get<number>("outbox_bytes") ?? 0;
    const configured = this.configuredSinks();
    this.sinkNames = this.s.sinkRows
      .all()
      .map((r) => r.sink)
      .filter((sink) => configured === undefined || configured.has(sink));
  }

  private saveBytes(): void {
    this.meta.set("outbox_bytes", this.bytes);
  }
}

/** The statements of the delivery path: appending records, due reads, settling a send's outcomes. */
function deliveryStatements(db: DatabaseSync) {
  return {
    insertRecord: query<[string, string, string, number, number], never>(
      db,
      "INSERT INTO outbox(record_id, record_type, json, created_ms, bytes) VALUES (?, ?, ?, ?, ?)",
    ),
    insertPending: query<[number, string], never>(
      db,
      "INSERT OR IGNORE INTO deliveries(seq, sink, state) VALUES (?, ?, 'pending')",
    ),
    addPending: query<[number, string], never>(db, "UPDATE sinks SET pending = pending + ? WHERE sink = ?"),
    due: query<[string, number, number, number], { seq: number; json: string }>(
      db,
      "SELECT d.seq AS seq, o.json AS json FROM deliveries d JOIN outbox o ON o.seq = d.seq WHERE d.sink = ? AND d.state = 'pending' AND d.seq > ? AND d.next_attempt_ms <= ? ORDER BY d.seq LIMIT ?",
    ),
    nextAttempt: query<[string], { at: number | null }>(
      db,
      "SELECT MIN(next_attempt_ms) AS at FROM deliveries WHERE sink = ? AND state = 'pending'",
    ),
    // Delivered seqs travel as one JSON array: one statement per batch instead of one per record.
    deliver: query<[string, string], { seq: number }>(
      db,
      "DELETE FROM deliveries WHERE sink = ? AND state = 'pending' AND seq IN (SELECT value FROM json_each(?)) RETURNING seq",
    ),
    dropIfUnneeded: query<[string], { bytes: number }>(
      db,
      "DELETE FROM outbox WHERE seq IN (SELECT value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = outbox.seq) RETURNING bytes",
    ),
    // The same two for a run of consecutive seqs (a backlog drains in runs): a range scan instead of a list lookup.
    deliverRun: query<[string, number, number], never>(
      db,
      "DELETE FROM deliveries WHERE sink = ? AND state = 'pending' AND seq BETWEEN ? AND ?",
    ),
    dropRunIfUnneeded: query<[number, number], { bytes: number }>(
      db,
      "DELETE FROM outbox WHERE seq BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = outbox.seq) RETURNING bytes",
    ),
    retry: query<[number, string, number, string], never>(
      db,
      "UPDATE deliveries SET attempts = attempts + 1, next_attempt_ms = ?, reason = ? WHERE seq = ? AND sink = ? AND state = 'pending'",
    ),
    reject: query<[string, number, number, string], never>(
      db,
      "UPDATE deliveries SET state = 'dead', attempts = attempts + 1, reason = ?, settled_ms = ? WHERE seq = ? AND sink = ? AND state = 'pending'",
    ),
    settle: query<[number, number, number, number | null, string], never>(
      db,
      "UPDATE sinks SET pending = pending - ?, delivered = delivered + ?, dead = dead + ?, last_delivery_ms = COALESCE(?, last_delivery_ms) WHERE sink = ?",
    ),
  };
}

/** The statements of sink registration and status. */
function sinkStatements(db: DatabaseSync) {
  return {
    sinkRow: query<[string], { pending: number; dead: number; delivered: number; last_delivery_ms: number | null }>(
      db,
      "SELECT * FROM sinks WHERE sink = ?",
    ),
    sinkRows: query<[], { sink: string }>(db, "SELECT sink FROM sinks ORDER BY sink"),
    registerSink: query<[string, number], never>(db, "INSERT OR IGNORE INTO sinks(sink, registered_ms) VALUES (?, ?)"),
    dropSinkDeliveries: query<[string], never>(db, "DELETE FROM deliveries WHERE sink = ?"),
    sinkCounts: query<[], { sink: string; pending: number; dead: number }>(
      db,
      "SELECT sink, pending, dead FROM sinks ORDER BY sink",
    ),
    pendingOf: query<[string], { seq: number; json: string }>(
      db,
      "SELECT d.seq AS seq, o.json AS json FROM deliveries d JOIN outbox o ON o.seq = d.seq WHERE d.sink = ? AND d.state = 'pending' ORDER BY d.seq",
    ),
    dropSink: query<[string], never>(db, "DELETE FROM sinks WHERE sink = ?"),
    dropOrphans: query<[], { bytes: number }>(
      db,
      "DELETE FROM outbox WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = outbox.seq) RETURNING bytes",
    ),
    oldestPending: query<[string], { created_ms: number }>(
      db,
      "SELECT o.created_ms AS created_ms FROM outbox o WHERE o.seq = (SELECT MIN(seq) FROM deliveries WHERE sink = ? AND state = 'pending')",
    ),
  };
}

/** The statements of backfill, dead letters (list, replay, purge) and eviction. */
function deadLetterAndEvictionStatements(db: DatabaseSync) {
  return {
    headSeq: query<[], { seq: number | null }>(db, "SELECT MAX(seq) AS seq FROM outbox"),
    recordsAfter: query<[number], { seq: number; json: string; bytes: number }>(
      db,
      "SELECT seq, json, bytes FROM outbox WHERE seq > ? ORDER BY seq LIMIT 500",
    ),
    deliveriesOf: query<[number, number], { seq: number; sink: string; state: string }>(
      db,
      "SELECT seq, sink, state FROM deliveries WHERE seq BETWEEN ? AND ?",
    ),
    dropDeliveriesUpTo: query<[number], never>(db, "DELETE FROM deliveries WHERE seq <= ?"),
    dropRecordsUpTo: query<[number], never>(db, "DELETE FROM outbox WHERE seq <= ?"),
    forget: query<[number, number, string], never>(
      db,
      "UPDATE sinks SET pending = pending - ?, dead = dead - ? WHERE sink = ?",
    ),
    backfillFromSeq: query<[string, number], never>(
      db,
      "INSERT OR IGNORE INTO deliveries(seq, sink, state) SELECT seq, ?, 'pending' FROM outbox WHERE seq >= ?",
    ),
    backfillSince: query<[string, number], never>(
      db,
      "INSERT OR IGNORE INTO deliveries(seq, sink, state) SELECT seq, ?, 'pending' FROM outbox WHERE created_ms >= ?",
    ),
    deadLetters: query<
      [string | null],
      {
        sink: string;
        seq: number;
        reason: string;
        settled_ms: number;
        attempts: number;
        record_id: string;
        json: string;
      }
    >(
      db,
      "SELECT d.sink AS sink, d.seq AS seq, d.reason AS reason, d.settled_ms AS settled_ms, d.attempts AS attempts, o.record_id AS record_id, o.json AS json " +
        "FROM deliveries d JOIN outbox o ON o.seq = d.seq WHERE d.state = 'dead' AND (?1 IS NULL OR d.sink = ?1) ORDER BY d.sink, d.seq",
    ),
    replay: query<[string | null, string | null], { sink: string }>(
      db,
      "UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_ms = 0, reason = NULL, settled_ms = NULL " +
        "WHERE state = 'dead' AND (?1 IS NULL OR sink = ?1) AND (?2 IS NULL OR instr(reason, ?2) > 0) RETURNING sink",
    ),
    unpend: query<[number, number, string], never>(
      db,
      "UPDATE sinks SET pending = pending + ?, dead = dead - ? WHERE sink = ?",
    ),
    purge: query<[string | null, string | null, number | null], { sink: string; seq: number }>(
      db,
      "DELETE FROM deliveries WHERE state = 'dead' AND (?1 IS NULL OR sink = ?1) AND (?2 IS NULL OR instr(reason, ?2) > 0) AND (?3 IS NULL OR settled_ms <= ?3) RETURNING sink, seq",
    ),
  };
}
