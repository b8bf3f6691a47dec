// The durable store (SQLite, WAL, synchronous=FULL) in the data directory: collector state, emitted keys,
// the outbox of records and one cursor per sink. A document's state change and its records commit in one transaction.
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { mkdirSync, accessSync, constants } from "node:fs";
import { join } from "node:path";
import type { SefRecord, VmIdentity } from "../contract/record.js";
import type { OutboxEntry } from "./outbox-entry.js";
import type { CollectorState, TrackedEvent, EmittedKey } from "../collector/state.js";
import { emptyCollectorState } from "../collector/state.js";
import { StoreError } from "./errors.js";
import { ActionLedger, migrateActionLedger } from "./action-ledger.js";

export interface StoreOptions {
  dataDir: string;
  /** Cap on the JSON bytes held in the outbox; past it the oldest records are evicted (see `evictOverCap`). */
  maxOutboxBytes: number;
}

export const storeDefaults = { maxOutboxBytes: 256 * 1024 * 1024 } as const;

export interface EvictedRecord {
  seq: number;
  json: string;
}

const schemaVersion = 1;

export class Store {
  readonly path: string;
  private readonly db: DatabaseSync;
  private outboxBytes: number;
  private readonly statements;
  /** Persisted state of hooks and approvals (see src/actions/action-runner.ts). */
  readonly actions: ActionLedger;

  private constructor(path: string, db: DatabaseSync, private readonly options: StoreOptions) {
    this.path = path;
    this.db = db;
    this.statements = {
      getMeta: query<[string], { value: string }>(db, "SELECT value FROM meta WHERE key = ?"),
      setMeta: command<[string, string]>(db, "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"),
      allEvents: query<[], { event_key: string; status: string; fields: string; last_seen_ms: number }>(db, "SELECT * FROM events"),
      deleteEvents: command<[]>(db, "DELETE FROM events"),
      insertEvent: command<[string, string, string, number]>(db, "INSERT INTO events(event_key, status, fields, last_seen_ms) VALUES (?, ?, ?, ?)"),
      allEmitted: query<[], { key: string; emitted_ms: number; ended_ms: number | null }>(db, "SELECT * FROM emitted"),
      deleteEmitted: command<[]>(db, "DELETE FROM emitted"),
      insertEmitted: command<[string, number, number | null]>(db, "INSERT INTO emitted(key, emitted_ms, ended_ms) VALUES (?, ?, ?)"),
      append: command<[string, string, string, number]>(db, "INSERT INTO outbox(record_id, record_type, json, created_ms) VALUES (?, ?, ?, ?)"),
      readAfter: query<[number, number], { seq: number; json: string }>(db, "SELECT seq, json FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?"),
      getCursor: query<[string], { seq: number }>(db, "SELECT seq FROM cursors WHERE sink = ?"),
      setCursor: command<[string, number]>(db, "INSERT INTO cursors(sink, seq) VALUES (?, ?) ON CONFLICT(sink) DO UPDATE SET seq = MAX(seq, excluded.seq)"),
      cursors: query<[], { sink: string; seq: number }>(db, "SELECT sink, seq FROM cursors"),
      deleteCursor: command<[string]>(db, "DELETE FROM cursors WHERE sink = ?"),
      depthAfter: query<[number], { n: number; oldest: number | null }>(db, "SELECT COUNT(*) AS n, MIN(created_ms) AS oldest FROM outbox WHERE seq > ?"),
      headSeq: query<[], { seq: number | null }>(db, "SELECT MAX(seq) AS seq FROM outbox"),
      prune: command<[number]>(db, "DELETE FROM outbox WHERE seq <= ?"),
      bytes: query<[], { bytes: number | null }>(db, "SELECT SUM(LENGTH(CAST(json AS BLOB))) AS bytes FROM outbox"),
      bytesUpTo: query<[number], { bytes: number | null }>(db, "SELECT SUM(LENGTH(CAST(json AS BLOB))) AS bytes FROM outbox WHERE seq <= ?"),
      oldest: query<[number], { seq: number; json: string }>(db, "SELECT seq, json FROM outbox ORDER BY seq LIMIT ?"),
    };
    this.outboxBytes = this.statements.bytes.get()?.bytes ?? 0;
    this.actions = new ActionLedger(db);
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
      migrate(db);
      probeWritable(db);
      return new Store(path, db, options);
    } catch (err) {
      if (db?.isOpen) db.close();
      if (err instanceof StoreError) throw withAdvice(err);
      const code = sqliteCode(err);
      if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
        throw withAdvice(new StoreError(`store ${path} is corrupt: ${(err as Error).message}`, path, "corrupt"));
      }
      if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
        throw new StoreError(`store ${path} is locked by another process (is another sef running with this data directory?)`, path, "locked");
      }
      if (code === "SQLITE_READONLY" || code === "SQLITE_CANTOPEN" || code === "SQLITE_PERM" || code === "SQLITE_IOERR") {
        throw new StoreError(
          `store ${path} cannot be written: ${(err as Error).message} (check the owner and mode of ${options.dataDir} and the files in it: the service user must be able to write them)`,
          path,
          "unwritable",
        );
      }
      throw err;
    }
  }

  close(): void {
    this.db.close();
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
   * Saves the collector state and appends the records in one transaction: either both are durable or neither is.
   * Returns the appended entries (with their outbox positions).
   */
  commitDocument(state: CollectorState, records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    return transaction(this.db, () => {
      this.setMetaJson("collector", { lastIncarnation: state.lastIncarnation, lastDocumentHash: state.lastDocumentHash, lastSuccessMs: state.lastSuccessMs });
      this.statements.deleteEvents.run();
      for (const [key, e] of state.events) this.statements.insertEvent.run(key, e.status, JSON.stringify(e.fields), e.lastSeenMs);
      this.statements.deleteEmitted.run();
      for (const [key, e] of state.emitted as Map<string, EmittedKey>) this.statements.insertEmitted.run(key, e.emittedMs, e.endedMs);
      return this.appendRecords(records, nowMs);
    });
  }

  /** Appends records that do not change the collector state (heartbeats, approvals, hooks). */
  append(records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    return transaction(this.db, () => this.appendRecords(records, nowMs));
  }

  private appendRecords(records: readonly SefRecord[], nowMs: number): OutboxEntry[] {
    const entries: OutboxEntry[] = [];
    for (const record of records) {
      const json = JSON.stringify(record);
      const info = this.statements.append.run(record.RecordId, record.RecordType, json, nowMs);
      this.outboxBytes += Buffer.byteLength(json);
      entries.push({ seq: Number(info.lastInsertRowid), record, json });
    }
    return entries;
  }

  /** Records after `seq`, oldest first. */
  readAfter(seq: number, limit: number): OutboxEntry[] {
    return this.statements.readAfter.all(seq, limit).map((row) => ({ seq: row.seq, json: row.json, record: JSON.parse(row.json) as SefRecord }));
  }

  cursor(sink: string): number {
    return this.statements.getCursor.get(sink)?.seq ?? 0;
  }

  /** Moves a sink's cursor forward (never backward), then prunes what every sink has. */
  advanceCursor(sink: string, seq: number): void {
    this.statements.setCursor.run(sink, seq);
  }

  /** Registers the configured sinks: new ones start at the oldest retained record; cursors of removed sinks are dropped. */
  registerSinks(names: readonly string[]): void {
    transaction(this.db, () => {
      for (const row of this.statements.cursors.all()) if (!names.includes(row.sink)) this.statements.deleteCursor.run(row.sink);
      for (const name of names) if (!this.statements.getCursor.get(name)) this.statements.setCursor.run(name, 0);
    });
  }

  /** Deletes records every registered sink has taken. */
  prune(): number {
    const cursors = this.statements.cursors.all();
    if (cursors.length === 0) return 0;
    const minSeq = Math.min(...cursors.map((c) => c.seq));
    const bytes = this.statements.bytesUpTo.get(minSeq)?.bytes ?? 0;
    const info = this.statements.prune.run(minSeq);
    this.outboxBytes = Math.max(0, this.outboxBytes - bytes);
    return Number(info.changes);
  }

  /**
   * Size cap policy: when the outbox holds more than `maxOutboxBytes` of JSON, the oldest records are removed
   * (down to 90 % of the cap) and returned, so the caller can dead-letter them with a reason and count them.
   */
  evictOverCap(): EvictedRecord[] {
    if (this.outboxBytes <= this.options.maxOutboxBytes) return [];
    const target = Math.floor(this.options.maxOutboxBytes * 0.9);
    const evicted: EvictedRecord[] = [];
    transaction(this.db, () => {
      while (this.outboxBytes > target) {
        const batch = this.statements.oldest.all(500);
        if (batch.length === 0) break;
        for (const row of batch) {
          if (this.outboxBytes <= target) break;
          evicted.push(row);
          this.outboxBytes -= Buffer.byteLength(row.json);
        }
        this.statements.prune.run(evicted[evicted.length - 1]!.seq);
      }
    });
    return evicted;
  }

  /** Undelivered records of a sink and the creation time of the oldest. */
  depth(sink: string): { records: number; oldestCreatedMs: number | null } {
    const row = this.statements.depthAfter.get(this.cursor(sink));
    return { records: row?.n ?? 0, oldestCreatedMs: row?.oldest ?? null };
  }

  headSeq(): number {
    return this.statements.headSeq.get()?.seq ?? 0;
  }

  get bytesInOutbox(): number {
    return this.outboxBytes;
  }

  isApproved(eventKey: string): boolean {
    return this.statements.getMeta.get(`approved:${eventKey}`) !== undefined;
  }

  markApproved(eventKey: string, nowMs: number): void {
    this.statements.setMeta.run(`approved:${eventKey}`, String(nowMs));
  }

  saveVmIdentity(vm: VmIdentity): void {
    this.setMetaJson("vm", vm);
  }

  loadVmIdentity(): VmIdentity | undefined {
    return this.getMetaJson<VmIdentity>("vm");
  }

  /** The IMDS endpoint that last answered and where it was found, reused after a restart while it answers. */
  saveImdsEndpoint(endpoint: { url: string; source: string }): void {
    this.setMetaJson("imds-endpoint", endpoint);
  }

  loadImdsEndpoint(): { url: string; source: string } | undefined {
    return this.getMetaJson<{ url: string; source: string }>("imds-endpoint");
  }

  /** Proves the store can still commit (readiness). */
  isWritable(): boolean {
    try {
      this.statements.setMeta.run("probe", String(Date.now()));
      return true;
    } catch {
      return false;
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
    CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL, record_type TEXT NOT NULL, json TEXT NOT NULL, created_ms INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS cursors (sink TEXT PRIMARY KEY, seq INTEGER NOT NULL);
  `);
  migrateActionLedger(db);
  const row = query<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'schema_version'").get();
  if (!row) {
    command<[string]>(db, "INSERT INTO meta(key, value) VALUES ('schema_version', ?)").run(String(schemaVersion));
  } else if (Number(row.value) > schemaVersion) {
    throw new StoreError(`store schema version ${row.value} is newer than this agent understands (${schemaVersion})`, "", "schema");
  }
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

/** A prepared statement that returns rows of type R for parameters P. */
interface Query<P extends unknown[], R> {
  get(...params: P): R | undefined;
  all(...params: P): R[];
  run(...params: P): { changes: number | bigint; lastInsertRowid: number | bigint };
}

function query<P extends unknown[], R>(db: DatabaseSync, sql: string): Query<P, R> {
  return db.prepare(sql) as unknown as Query<P, R>;
}

function command<P extends unknown[]>(db: DatabaseSync, sql: string): Query<P, never> {
  return db.prepare(sql) as StatementSync as unknown as Query<P, never>;
}

/** Runs `body` in one IMMEDIATE transaction: committed if it returns, rolled back if it throws. Inside an open transaction (the action ledger's), it joins it. */
function transaction<T>(db: DatabaseSync, body: () => T): T {
  if (db.isTransaction) return body();
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = body();
    db.exec("COMMIT");
    return result;
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
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
