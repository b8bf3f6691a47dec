// Every table of the store and every upgrade between schema versions, in one place, run once when a writable store
// opens (one transaction): the meta rows, the collector state, the outbox and its delivery ledger, the action ledger.
// The modules that use the tables never create or alter them.
import type { DatabaseSync } from "node:sqlite";
import { StoreError } from "./errors.js";
import { query } from "./sql.js";

/** The schema this agent writes: 1 had one cursor per sink, 2 has one delivery row per sink and record. */
export const schemaVersion = 2;

/** The tables of schema version 2, each as its owner uses it (idempotent: created only where missing). */
const tables = [
  // The store: meta rows by key (schema_version, vm, collector, imds-endpoint, outbox_bytes, configured_sinks, …).
  "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
  // The collector state (store/collector-state.ts).
  "CREATE TABLE IF NOT EXISTS events (event_key TEXT PRIMARY KEY, status TEXT NOT NULL, fields TEXT NOT NULL, last_seen_ms INTEGER NOT NULL)",
  "CREATE TABLE IF NOT EXISTS emitted (key TEXT PRIMARY KEY, emitted_ms INTEGER NOT NULL, ended_ms INTEGER)",
  "CREATE INDEX IF NOT EXISTS emitted_by_end ON emitted(ended_ms)",
  // The outbox and its delivery ledger (delivery/ledger.ts).
  "CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL, record_type TEXT NOT NULL, json TEXT NOT NULL, created_ms INTEGER NOT NULL, bytes INTEGER NOT NULL DEFAULT 0)",
  "CREATE TABLE IF NOT EXISTS sinks (sink TEXT PRIMARY KEY, pending INTEGER NOT NULL DEFAULT 0, dead INTEGER NOT NULL DEFAULT 0, delivered INTEGER NOT NULL DEFAULT 0, last_delivery_ms INTEGER, registered_ms INTEGER NOT NULL)",
  `CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER NOT NULL, sink TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('pending', 'dead')),
    attempts INTEGER NOT NULL DEFAULT 0, next_attempt_ms INTEGER NOT NULL DEFAULT 0, reason TEXT, settled_ms INTEGER,
    PRIMARY KEY (seq, sink), CHECK (state = 'pending' OR (reason IS NOT NULL AND reason <> ''))
  ) WITHOUT ROWID`,
  "CREATE INDEX IF NOT EXISTS deliveries_by_sink ON deliveries(sink, state, seq, next_attempt_ms)",
  // The action ledger (actions/action-ledger.ts).
  `CREATE TABLE IF NOT EXISTS actions (
      action_key TEXT PRIMARY KEY, kind TEXT NOT NULL, event_key TEXT NOT NULL, event_status TEXT NOT NULL, name TEXT NOT NULL,
      status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0, record TEXT NOT NULL,
      created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS actions_by_status ON actions(status)",
  "CREATE TABLE IF NOT EXISTS action_progress (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
  "CREATE TABLE IF NOT EXISTS action_steps (action_key TEXT PRIMARY KEY, state TEXT NOT NULL)",
];

/** Brings the database to `schemaVersion` (inside the caller's transaction); a newer store is refused. */
export function migrate(db: DatabaseSync): void {
  db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  const found = Number(
    query<[], { value: string }>(db, "SELECT value FROM meta WHERE key = 'schema_version'").get()?.value ?? 0,
  );
  if (found > schemaVersion) {
    throw new StoreError(
      `store schema version ${found} is newer than this agent understands (${schemaVersion})`,
      "",
      "schema",
    );
  }
  const cursorsOfVersion1 =
    query<[], { name: string }>(
      db,
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'cursors'",
    ).get() !== undefined;
  if (cursorsOfVersion1)
    db.exec(
      "ALTER TABLE outbox ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0; UPDATE outbox SET bytes = LENGTH(CAST(json AS BLOB));",
    );
  for (const sql of tables) db.exec(sql);
  if (cursorsOfVersion1) cursorsToDeliveries(db);
  query<[string], never>(
    db,
    "INSERT INTO meta(key, value) VALUES ('schema_version', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
  ).run(String(schemaVersion));
}

/**
 * Version 1 → 2: each record after a sink's cursor becomes a pending delivery for it, records no sink needs leave the
 * outbox, and its byte total is counted once.
 */
function cursorsToDeliveries(db: DatabaseSync): void {
  const nowMs = Date.now();
  for (const c of query<[], { sink: string; seq: number }>(db, "SELECT sink, seq FROM cursors").all()) {
    const info = query<[string, number], never>(
      db,
      "INSERT INTO deliveries(seq, sink, state) SELECT seq, ?, 'pending' FROM outbox WHERE seq > ?",
    ).run(c.sink, c.seq);
    query<[string, number, number], never>(db, "INSERT INTO sinks(sink, pending, registered_ms) VALUES (?, ?, ?)").run(
      c.sink,
      Number(info.changes),
      nowMs,
    );
  }
  db.exec(
    "DELETE FROM outbox WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = outbox.seq); DROP TABLE cursors;",
  );
  const bytes = query<[], { n: number | null }>(db, "SELECT SUM(bytes) AS n FROM outbox").get()?.n ?? 0;
  query<[string], never>(
    db,
    "INSERT INTO meta(key, value) VALUES ('outbox_bytes', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
  ).run(String(bytes));
}
