// The store's meta table as JSON values by key: the store keeps the table, each key belongs to the module that uses it
// (`vm`: the store's VM identity; `imds-endpoint`: discovery's endpoint memory; `collector`: collector/state-tables.ts;
// `configured_sinks`, `outbox_bytes`: delivery/ledger.ts; `schema_*`: migrations.ts, which reads them before this can).
import type { DatabaseSync } from "node:sqlite";
import { query } from "./sql.js";

export class MetaValues {
  private readonly statements;

  constructor(db: DatabaseSync) {
    this.statements = {
      get: query<[string], { value: string }>(db, "SELECT value FROM meta WHERE key = ?"),
      set: query<[string, string], never>(
        db,
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      ),
    };
  }

  /** The value kept under `key`, or undefined when there is none. */
  get<T>(key: string): T | undefined {
    const row = this.statements.get.get(key);
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  /** Keeps `value` under `key` (in the caller's transaction when one is open). */
  set(key: string, value: unknown): void {
    this.statements.set.run(key, JSON.stringify(value));
  }
}
