// Every table of the store and every change to one, in one place: a new store gets the tables of version 2, then each
// numbered migration after the store's version runs once, in order, when a writable store opens (one transaction).
// The modules that use the tables (the collector, the outbox, the action ledger) never create or alter them.
import type { DatabaseSync } from "node:sqlite";
import { StoreError } from "./errors.js";
import { query } from "./sql.js";

/** One change of the schema: `up` brings a store of `version - 1` to `version` (inside the open's transaction). */
export interface Migration {
  readonly version: number;
  /** What the version changed, in a line. */
  readonly change: string;
  readonly up: (db: DatabaseSync) => void;
}

/**
 * The tables of version 2, each as its owner uses it: what a new store starts from, and what a version-1 store is
 * brought to. Later versions change them only through `migrations`.
 */
const version2Tables = [
  // The store: meta rows by key (schema_version, vm, collector, imds-endpoint, outbox_bytes, configured_sinks, …).
  "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
  // The collector state (collector/state-tables.ts).
  "CREATE TABLE IF NOT EXISTS events (event_key TEXT PRIMARY KEY, status TEXT NOT NULL, fields TEXT NOT NULL, last_seen_ms INTEGER NOT NULL)",
  "CREATE TABLE IF NOT EXISTS emitted (key TEXT PRIMARY KEY, emitted_ms INTEGER NOT NULL, ended_ms INTEGER)",
  // The outbox and its delivery ledger (delivery/ledger.ts).
  "CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL, record_type TEXT NOT NULL, json TEXT NOT NULL, created_ms INTEGER NOT NULL, bytes INTEGER NOT NULL DEFAULT 0)",
  "CREATE TABLE IF NOT EXISTS sinks (sink TEXT PRIMARY KEY, pending INTEGER NOT NULL DEFAULT 0, dead INTEGER NOT NULL DEFAULT 0, delivered INTEGER NOT NULL DEFAULT 0, last_delivery_ms INTEGER, registered_ms INTEGER NOT NULL)",
  `CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER NOT NULL, sink TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('pending', 'dead')),
    attempts INTEGER NOT NULL DEFAULT 0, next_attempt_ms INTEGER NOT NULL DEFAULT 0, reason TEXT, settled_ms INTEGER,
    PRIMARY KEY (seq, sink), CHECK (state = 'pending' OR (reason IS NOT NULL AND reason <> ''))
  ) WITHOUT ROWID`,
  "CREATE INDEX IF NOT EXISTS deliveries_by_sink ON deliveries(sink, state, seq, next_attempt_ms)",
];

/** Version 3's tables and index: made at open, without a version, by the agents that wrote version 2 after them. */
const version3Tables = [
  // The collector's expiry by end (collector/state-tables.ts).
  "CREATE INDEX IF NOT EXISTS emitted_by_end ON emitted(ended_ms)",
  // The action ledger (actions/action-ledger.ts).
  `CREATE TABLE IF NOT EXISTS actions (
      action_key TEXT PRIMARY KEY, kind TEXT NOT NULL, event_key TEXT NOT NULL, event_status TEXT NOT NULL, name TEXT NOT NULL,
      status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0, record TEXT NOT NULL,
      created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS actions_by_status ON actions(status)",
  "CREATE TABLE IF NOT EXISTS action_progress (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
  "CREATE TABLE IF NOT EXISTS action_steps (action_key TEXT PRIMARY KEY, state TEXT NOT NULL)",
];

/** Every change after version 2, in order: a new table, column or index is a new entry here (never an edit above). */
export const migrations: readonly Migration[] = [
  {
    version: 3,
    change: "the action ledger's tables and the emitted keys' index by end belong to the versioned schema",
    up: (db) => {
      for (const sql of version3Tables) db.exec(sql);
    },
  },
  {
    version: 4,
    change: "actions hold their event's approval: column actions.gated, table action_holds, older rows converted",
    up: (db) => {
      // The agents that wrote versions 2 and 3 made this change at open, unversioned: their stores may have it already.
      const columns = query<[], { name: string }>(db, "SELECT name FROM pragma_table_info('actions')").all();
      if (columns.some((c) => c.name === "gated")) return;
      db.exec(`
        ALTER TABLE actions ADD COLUMN gated INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE action_holds (
          event_key TEXT NOT NULL, holder TEXT NOT NULL, may_approve INTEGER NOT NULL, verdict TEXT NOT NULL DEFAULT '',
          reason TEXT NOT NULL DEFAULT '', updated_ms INTEGER NOT NULL, PRIMARY KEY (event_key, holder));
      `);
      actionsToHolds(db);
    },
  },
];

/** The schema this agent writes: the last migration's version (meta row `schema_migration`). */
export const schemaVersion = migrations[migrations.length - 1]!.version;

/**
 * The layout an agent must understand to open the store (meta row `schema_version`, the one agents before numbered
 * migrations read: they refuse a store above 2). Every migration since is one an older agent can ignore (new tables,
 * new columns with defaults), so it stays 2 and an agent rolled back to an older package still opens the store. A
 * migration older agents must not ignore raises it to its own version.
 */
export const layoutVersion = 2;

/** The layout (`schema_version`) and the last migration run (`schema_migration`) a store's meta rows say. */
export function storeVersions(db: DatabaseSync): { layout: number; migration: number } {
  const row = query<[string], { value: string }>(db, "SELECT value FROM meta WHERE key = ?");
  const layout = Number(row.get("schema_version")?.value ?? 0);
  return { layout, migration: Number(row.get("schema_migration")?.value ?? layout) };
}

/**
 * Brings the database to the last version of `steps` (`schemaVersion`; inside the caller's transaction): each step
 * after the store's last migration runs once, in order. A store of a newer layout is refused; one a newer agent
 * migrated further, in a layout this agent reads, is opened as it is.
 */
export function migrate(db: DatabaseSync, steps: readonly Migration[] = migrations): void {
  const target = steps[steps.length - 1]!.version;
  db.exec(version2Tables[0]!);
  const { layout, migration: found } = storeVersions(db);
  if (layout > layoutVersion) {
    throw new StoreError(
      `store schema version ${layout} is newer than this agent understands (${layoutVersion})`,
      "",
      "schema",
    );
  }
  // Version 1 → 2: the outbox counts its bytes, then gets its delivery ledger (a new store gets all of version 2).
  if (found === 1) db.exec("ALTER TABLE outbox ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0");
  for (const sql of version2Tables) db.exec(sql);
  if (found === 1) cursorsToDeliveries(db);
  for (const step of steps) if (step.version > found) step.up(db);
  const set = query<[string, string], never>(
    db,
    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
  );
  set.run("schema_version", String(layoutVersion));
  // A newer agent's migrations stay recorded: its tables are left as they are (this agent ignores them).
  set.run("schema_migration", String(Math.max(found, target)));
}

/**
 * Version 1 → 2: each record counts its bytes, each record after a sink's cursor becomes a pending delivery for it,
 * records no sink needs leave the outbox, and its byte total is counted once.
 */
function cursorsToDeliveries(db: DatabaseSync): void {
  db.exec("UPDATE outbox SET bytes = LENGTH(CAST(json AS BLOB))");
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

/**
 * Version 3 → 4, the rows of the action ledger before holds: a Scheduled hook ran before its event's approval (plan
 * order) and an approval required it to succeed; a node action (kind kubernetes) planned its event's approval itself
 * once its steps were over, named `after-kubernetes` when the drain asked for it. Now they hold the approval
 * (actions/action-ledger.ts): each becomes a hold, released or not as its row says, and approvals wait for them.
 */
function actionsToHolds(db: DatabaseSync): void {
  db.exec(`
    -- Scheduled hooks held their event's approval; finished ones released it (succeeded: done, else failed).
    INSERT OR IGNORE INTO action_holds(event_key, holder, may_approve, verdict, reason, updated_ms)
      SELECT event_key, action_key, 0,
        CASE status WHEN 'pending' THEN '' WHEN 'running' THEN '' WHEN 'succeeded' THEN 'done' ELSE 'failed' END, reason, updated_ms
      FROM actions WHERE kind = 'hook' AND event_status = 'Scheduled';

    -- A node action whose event's approval was planned has released its hold (asking for it when after-kubernetes).
    INSERT OR IGNORE INTO action_holds(event_key, holder, may_approve, verdict, reason, updated_ms)
      SELECT k.event_key, k.action_key, k.name = 'drain-then-approve',
        CASE a.name WHEN 'after-kubernetes' THEN 'approve' ELSE 'done' END,
        CASE a.name WHEN 'after-kubernetes' THEN 'the node is drained (kubernetes policy drain-then-approve)' ELSE '' END, k.updated_ms
      FROM actions k JOIN actions a ON a.action_key = 'approval:' || k.event_key
      WHERE k.kind = 'kubernetes';

    -- One whose steps were over without an approval (the rules declined) has released it; one still at its steps holds it.
    INSERT OR IGNORE INTO action_holds(event_key, holder, may_approve, verdict, reason, updated_ms)
      SELECT k.event_key, k.action_key, k.name = 'drain-then-approve',
        CASE WHEN k.status NOT IN ('pending', 'running') OR json_extract(s.state, '$.phase') IN ('settled', 'undoing', 'done') THEN 'done' ELSE '' END, '', k.updated_ms
      FROM actions k LEFT JOIN action_steps s ON s.action_key = k.action_key
      WHERE k.kind = 'kubernetes';

    -- The approval of an event still held waits for its holder, planned now as the holder would have planned it.
    INSERT OR IGNORE INTO actions(action_key, kind, event_key, event_status, name, status, record, gated, created_ms, updated_ms)
      SELECT 'approval:' || k.event_key, 'approval', k.event_key, 'Scheduled', 'approval', 'pending', k.record, 1, k.created_ms, k.updated_ms
      FROM actions k JOIN action_holds h ON h.event_key = k.event_key AND h.holder = k.action_key AND h.verdict = ''
      WHERE k.kind = 'kubernetes';

    -- Approvals wait for their event's holds.
    UPDATE actions SET gated = 1 WHERE kind = 'approval';
  `);
}
