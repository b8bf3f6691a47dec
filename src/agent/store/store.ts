// The durable store (SQLite, WAL, synchronous=FULL) in the data directory: collector state, emitted keys, the outbox
// and its delivery ledger (ledger.ts). A document's state change and its records commit in one transaction.
import { DatabaseSync } from "node:sqlite";
import { mkdirSync, accessSync, constants, existsSync } from "node:fs";
import { join } from "node:path";
import type { SefRecord, VmIdentity } from "@sef/contract/record.js";
import type { OutboxEntry } from "./outbox-entry.js";
import type { CollectorState, TrackedEvent, EmittedKey } from "../collector/state.js";
import { emptyCollectorState } from "../collector/state.js";
import { StoreError } from "./errors.js";
import { ActionLedger, migrateActionLedger } from "./action-ledger.js";
import { query, transaction } from "./sql.js";
import { WalCheckpointer, safetyNetPages } from "./wal-checkpointer.js";
import {
  DeliveryLedger,
  ledgerSchemaSql,
  type DeadLetterEntry,
  type EvictedDelivery,
  type EvictionCounts,
  type LedgerOutcome,
  type ReplayFrom,
  type SinkLedgerStatus,
} from "./ledger.js";

export type { DeadLetterEntry, EvictedDelivery, EvictionCounts, LedgerOutcome, ReplayFrom, SinkLedgerStatus } from "./ledger.js";

export interface StoreOptions {
  dataDir: string;
  /** Cap on the JSON bytes held in the outbox; past it the oldest records are evicted (see `evictOverCap`). */
  maxOutboxBytes: number;
  /**
   * Extra schema steps of modules that keep their own tables in the same database (run after the store's own,
   * at every open; they must be idempotent, e.g. CREATE TABLE IF NOT EXISTS).
   */
  migrations?: ReadonlyArray<(db: DatabaseSync) => void>;
  /** Checkpoint the write-ahead log from a worker thread (default true; see wal-checkpointer.ts). */
  checkpointInWorker?: boolean;
  /** Told when the checkpoint worker fails (the store goes on; SQLite checkpoints by itself). */
  onCheckpointError?: (reason: string) => void;
}

export const storeDefaults = { maxOutboxBytes: 256 * 1024 * 1024 } as const;

/** Why records left the outbox unsent: the only eviction reason today. */
export const overCapReason = "evicted: the outbox was over maxOutboxBytes before this sink took the record";

const schemaVersion = 2;

export class Store {
  readonly path: string;
  private readonly db: DatabaseSync;
  private readonly statements;
  /** Persisted state of hooks and approvals (see src/actions/action-runner.ts). */
  readonly actions: ActionLedger;
  private readonly ledger: DeliveryLedger;
  private lastWriteFailed = false;
  private evictionBlocked = false;
  /** Writable stores only: checkpoints the log off the agent's thread. */
  private readonly checkpointer: WalCheckpointer | undefined;

  private constructor(
    path: string,
    db: DatabaseSync,
    private readonly options: StoreOptions,
    checkpointer?: WalCheckpointer,
  ) {
    this.path = path;
    this.db = db;
    this.statements = {
      getMeta: query<[string], { value: string }>(db, "SELECT value FROM meta WHERE key = ?"),
      deleteMeta: query<[string], never>(db, "DELETE FROM meta WHERE key = ?"),
      setMeta: query<[string, string], never>(db, "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"),
      allEvents: query<[], { event_key: string; status: string; fields: string; last_seen_ms: number }>(db, "SELECT * FROM events"),
      deleteEvents: query<[], never>(db, "DELETE FROM events"),
      insertEvent: query<[string, string, string, number], never>(db, "INSERT INTO events(event_key, status, fields, last_seen_ms) VALUES (?, ?, ?, ?)"),
      allEmitted: query<[], { key: string; emitted_ms: number; ended_ms: number | null }>(db, "SELECT * FROM emitted"),
      deleteEmitted: query<[], never>(db, "DELETE FROM emitted"),
      insertEmitted: query<[string, number, number | null], never>(db, "INSERT INTO emitted(key, emitted_ms, ended_ms) VALUES (?, ?, ?)"),
      readAfter: query<[number, number], { seq: number; json: string }>(db, "SELECT seq, json FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?"),
    };
    this.ledger = new DeliveryLedger(db);
    this.actions = new ActionLedger(db);
    this.checkpointer = checkpointer;
  }

  /** Opens (or creates) the store; a corrupt, locked or unwritable store is a StoreError naming the path and the way out. */
  static open(options: StoreOptions): Store {
    const path = join(options.dataDir, "sef.db");
    try {
      mkdirSync(options.dataDir, { recursive: true });
      accessSync(options.dataDir, constants.W_OK);
    } catch (err) {
      throw new StoreError(`data directory ${options.dataDir} is not writable: ${(err as Error).message}`, options.dataDir, "unwritable");
    }
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(path, { timeout: 2000 });
      db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;");
      const check = Object.values(db.prepare("PRAGMA quick_check").get() ?? {})[0];
      if (check !== "ok") throw new StoreError(`store ${path} is corrupt (${String(check)})`, path, "corrupt");
      const opened = db;
      transaction(opened, () => {
        migrate(opened);
        for (const step of options.migrations ?? []) step(opened);
        // Next-attempt times are monotonic, meaningful only within one process: every pending record is due at start.
        opened.exec("UPDATE deliveries SET next_attempt_ms = 0 WHERE state = 'pending' AND next_attempt_ms <> 0");
      });
      probeWritable(db);
      if (options.checkpointInWorker === false) return new Store(path, db, options);
      db.exec(`PRAGMA wal_autocheckpoint = ${safetyNetPages}`);
      return new Store(path, db, options, new WalCheckpointer({ path, ...(options.onCheckpointError ? { onError: options.onCheckpointError } : {}) }));
    } catch (err) {
      if (db?.isOpen) db.close();
      throw translateOpenError(err, path);
    }
  }

  /**
   * Opens an existing store for reading only (status and listing commands beside a running agent). Never creates,
   * migrates or writes anything.
   */
  static openReadOnly(dataDir: string): Store {
    const path = join(dataDir, "sef.db");
    if (!existsSync(path)) throw new StoreError(`no store at ${path} (has the agent run with --data-dir ${dataDir}?)`, path, "unwritable");
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(path, { readOnly: true, timeout: 2000 });
      const version = query<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'schema_version'").get();
      if (Number(version?.value ?? 0) !== schemaVersion) {
        throw new StoreError(`store ${path} has schema version ${version?.value ?? "none"}; start the agent once to upgrade it to ${schemaVersion}`, path, "schema");
      }
      return new Store(path, db, { dataDir, maxOutboxBytes: Number.MAX_SAFE_INTEGER });
    } catch (err) {
      if (db?.isOpen) db.close();
      throw translateOpenError(err, path);
    }
  }

  /** The open database, for modules that keep their own tables beside the store's (see `StoreOptions.migrations`). */
  get database(): DatabaseSync {
    return this.db;
  }

  close(): void {
    this.checkpointer?.close();
    this.db.close();
  }

  /** What the checkpoint worker did (undefined for a read-only store or with `checkpointInWorker: false`). */
  get checkpoints(): WalCheckpointer["counts"] | undefined {
    return this.checkpointer?.counts;
  }

  loadCollectorState(): CollectorState {
    const state = emptyCollectorState();
    const meta = this.getMetaJson<{ lastIncarnation: number | null; lastDocumentHash: string | null; lastSuccessMs: number | null }>("collector");
    if (meta) Object.assign(state, meta);
    for (const row of this.statements.allEvents.all()) {
      state.events.set(row.event_key, { status: row.status as TrackedEvent["status"], fields: JSON.parse(row.fields), lastSeenMs: row.last_seen_ms });
    }
    for (const row of this.statements.allEmitted.all()) {
      state.emitted.set(row.key, { emittedMs: row.emitted_ms, endedMs: row.ended_ms });
    }
    return state;
  }

  /**
   * Saves the collector state and appends the records (pending for every registered sink) in one transaction:
   * either both are durable or neither is. Returns the appended entries (with their outbox positions).
   */
  commitDocument(state: CollectorState, records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    return this.write(() => {
      this.setMetaJson("collector", { lastIncarnation: state.lastIncarnation, lastDocumentHash: state.lastDocumentHash, lastSuccessMs: state.lastSuccessMs });
      this.statements.deleteEvents.run();
      for (const [key, e] of state.events) this.statements.insertEvent.run(key, e.status, JSON.stringify(e.fields), e.lastSeenMs);
      this.statements.deleteEmitted.run();
      for (const [key, e] of state.emitted as Map<string, EmittedKey>) this.statements.insertEmitted.run(key, e.emittedMs, e.endedMs);
      return this.ledger.appendRecords(records, nowMs);
    });
  }

  /** Appends records that do not change the collector state (heartbeats, approvals, hooks). */
  append(records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    return this.write(() => this.ledger.appendRecords(records, nowMs));
  }

  /** Records held in the outbox after `seq`, oldest first (whatever their delivery state). */
  readAfter(seq: number, limit: number): OutboxEntry[] {
    return this.statements.readAfter.all(seq, limit).map((row) => ({ seq: row.seq, json: row.json, record: JSON.parse(row.json) as SefRecord }));
  }

  /**
   * Registers the configured sinks: a new one starts at the head (it gets records appended from now on; see
   * `backfill`); a sink no longer configured loses its pending and dead-lettered rows. Returns the new names.
   */
  registerSinks(names: readonly string[], nowMs: number = Date.now()): string[] {
    return this.write(() => this.ledger.register(names, nowMs));
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
  applyOutcomes(sink: string, outcomes: readonly LedgerOutcome[], nowMs: number): { delivered: number; retried: number; rejected: number } {
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
  purgeDeadLetters(filter: { sink?: string; reasonContains?: string; deadLetteredUpToMs?: number }): Map<string, number> {
    return this.write(() => this.ledger.purge(filter));
  }

  /**
   * Size cap policy: when the outbox holds more than `maxOutboxBytes`, the oldest records are removed (down to 90 %
   * of the cap). The dead-letter lines of the deliveries still pending go to `writeDeadLetters`, which must make them
   * durable (fsync) before it returns; if it throws, nothing is deleted, the store reports not writable (readiness)
   * and the error is rethrown. Returns the evicted counts by sink.
   */
  evictOverCap(writeDeadLetters: (items: readonly EvictedDelivery[]) => void): EvictionCounts {
    if (this.ledger.outboxBytes <= this.options.maxOutboxBytes) {
      this.evictionBlocked = false;
      return new Map();
    }
    const target = Math.floor(this.options.maxOutboxBytes * 0.9);
    try {
      const counts = this.write(() => this.ledger.evictDownTo(target, overCapReason, writeDeadLetters));
      this.evictionBlocked = false;
      return counts;
    } catch (err) {
      this.evictionBlocked = true;
      throw err;
    }
  }

  headSeq(): number {
    return this.ledger.headSeq();
  }

  get bytesInOutbox(): number {
    return this.ledger.outboxBytes;
  }

  /** Approvals recorded by agents before the action ledger (read-only: new ones live in the `actions` table). */
  isApproved(eventKey: string): boolean {
    return this.statements.getMeta.get(`approved:${eventKey}`) !== undefined;
  }

  /** Records which process runs the agent on this store; cleared by `markAgentStopped`. */
  markAgentRunning(pid: number, nowMs: number): void {
    this.write(() => this.setMetaJson("agent", { pid, startedMs: nowMs }));
  }

  markAgentStopped(): void {
    this.write(() => this.statements.deleteMeta.run("agent"));
  }

  saveVmIdentity(vm: VmIdentity): void {
    this.write(() => this.setMetaJson("vm", vm));
  }

  loadVmIdentity(): VmIdentity | undefined {
    const vm = this.getMetaJson<VmIdentity>("vm");
    // Saved by an agent that did not read tags yet: none until instance metadata answers again.
    return vm === undefined ? undefined : { ...vm, Tags: vm.Tags ?? {} };
  }

  /** The IMDS endpoint that last answered and where it was found, reused after a restart while it answers. */
  saveImdsEndpoint(endpoint: { url: string; source: string }): void {
    this.setMetaJson("imds-endpoint", endpoint);
  }

  loadImdsEndpoint(): { url: string; source: string } | undefined {
    return this.getMetaJson<{ url: string; source: string }>("imds-endpoint");
  }

  /**
   * Readiness: the last write committed and no eviction is blocked on its dead-letter file. Never writes (a probe
   * must not cost a transaction); the next real write tells.
   */
  isWritable(): boolean {
    return !this.lastWriteFailed && !this.evictionBlocked;
  }

  /** Runs `body` in one transaction, remembering whether writes succeed (readiness) and re-reading cached totals on rollback. */
  private write<T>(body: () => T): T {
    const bytesBefore = this.ledger.outboxBytes;
    try {
      const result = transaction(this.db, body);
      this.lastWriteFailed = false;
      this.checkpointer?.noteWritten(Math.abs(this.ledger.outboxBytes - bytesBefore));
      return result;
    } catch (err) {
      this.lastWriteFailed = true;
      if (this.db.isOpen) this.ledger.reload();
      throw err;
    }
  }

  private getMetaJson<T>(key: string): T | undefined {
    const row = this.statements.getMeta.get(key);
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  private setMetaJson(key: string, value: unknown): void {
    this.statements.setMeta.run(key, JSON.stringify(value));
  }
}

function migrate(db: DatabaseSync): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS events (event_key TEXT PRIMARY KEY, status TEXT NOT NULL, fields TEXT NOT NULL, last_seen_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS emitted (key TEXT PRIMARY KEY, emitted_ms INTEGER NOT NULL, ended_ms INTEGER);
  `);
  migrateActionLedger(db);
  const row = query<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'schema_version'").get();
  const found = row ? Number(row.value) : 0;
  if (found > schemaVersion) {
    throw new StoreError(`store schema version ${found} is newer than this agent understands (${schemaVersion})`, "", "schema");
  }
  if (found === 1) migrateCursorsToLedger(db);
  db.exec(ledgerSchemaSql);
  query<[string], never>(db, "INSERT INTO meta(key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(String(schemaVersion));
}

/** Version 1 kept one cursor per sink: every record after a sink's cursor becomes a pending delivery for it. */
function migrateCursorsToLedger(db: DatabaseSync): void {
  db.exec("ALTER TABLE outbox ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0; UPDATE outbox SET bytes = LENGTH(CAST(json AS BLOB));");
  db.exec(ledgerSchemaSql);
  const nowMs = Date.now();
  for (const c of query<[], { sink: string; seq: number }>(db, "SELECT sink, seq FROM cursors").all()) {
    const info = query<[string, number], never>(db, "INSERT INTO deliveries(seq, sink, state) SELECT seq, ?, 'pending' FROM outbox WHERE seq > ?").run(c.sink, c.seq);
    query<[string, number, number], never>(db, "INSERT INTO sinks(sink, pending, registered_ms) VALUES (?, ?, ?)").run(c.sink, Number(info.changes), nowMs);
  }
  db.exec("DELETE FROM outbox WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = outbox.seq); DROP TABLE cursors;");
  const bytes = query<[], { n: number | null }>(db, "SELECT SUM(bytes) AS n FROM outbox").get()?.n ?? 0;
  query<[string], never>(db, "INSERT INTO meta(key, value) VALUES ('outbox_bytes', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(String(bytes));
}

function translateOpenError(err: unknown, path: string): unknown {
  if (err instanceof StoreError) return withAdvice(err);
  const code = sqliteCode(err);
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
    return withAdvice(new StoreError(`store ${path} is corrupt: ${(err as Error).message}`, path, "corrupt"));
  }
  if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
    return new StoreError(`store ${path} is locked by another process (is another sef running with this data directory?)`, path, "locked");
  }
  if (code === "SQLITE_READONLY" || code === "SQLITE_CANTOPEN" || code === "SQLITE_PERM" || code === "SQLITE_IOERR") {
    return new StoreError(
      `store ${path} cannot be written: ${(err as Error).message} (check the owner and mode of the data directory and the files in it: the service user must be able to write them)`,
      path,
      "unwritable",
    );
  }
  return err;
}

/** A database file the process may open but not write (e.g. owned by root after a run as root) fails here, at start. */
function probeWritable(db: DatabaseSync): void {
  db.exec("UPDATE meta SET value = value WHERE key = 'schema_version'");
}

function withAdvice(err: StoreError): StoreError {
  if (err.reason !== "corrupt") return err;
  return new StoreError(
    `${err.message}. Move it aside (e.g. mv ${err.path} ${err.path}.corrupt) and start again: sef will rebuild its state; ` +
      "records still in the old outbox are not sent, and RecordIds stay the same so consumers can dedupe any repeats.",
    err.path,
    "corrupt",
  );
}

/** The SQLite result-code name of a node:sqlite error (e.g. `SQLITE_BUSY`), or "". */
function sqliteCode(err: unknown): string {
  const e = err as { code?: string; errcode?: number; errstr?: string };
  if (e.code && e.code !== "ERR_SQLITE_ERROR") return e.code;
  const primary = (e.errcode ?? 0) & 0xff;
  return sqlitePrimaryCodes[primary] ?? "";
}

const sqlitePrimaryCodes: Record<number, string> = {
  3: "SQLITE_PERM",
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  8: "SQLITE_READONLY",
  10: "SQLITE_IOERR",
  11: "SQLITE_CORRUPT",
  14: "SQLITE_CANTOPEN",
  26: "SQLITE_NOTADB",
};
