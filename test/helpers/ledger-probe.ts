// Reads a running agent's store (sef.db, read-only, beside the agent's own connection) for what a process test waits on
// before asserting that something did not happen: the action ledger has settled — every Transition in the outbox is
// planned and no action is pending or running — and the delivery ledger holds nothing pending for any sink.
import { DatabaseSync } from "node:sqlite";
import { existsSync } from "node:fs";
import { join } from "node:path";

function query<T>(dataDir: string, body: (db: DatabaseSync) => T): T | undefined {
  const path = join(dataDir, "sef.db");
  if (!existsSync(path)) return undefined;
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return body(db);
  } catch {
    return undefined; // tables not created yet
  } finally {
    db.close();
  }
}

/** True once the agent's action runner has nothing left to do (planned everything, nothing pending or running). */
export function actionsSettled(dataDir: string): boolean {
  return (
    query(dataDir, (db) => {
      const planned = (db.prepare("SELECT value FROM action_progress WHERE key = 'planned_through_seq'").get() as { value: number } | undefined)?.value;
      if (planned === undefined) return false;
      const unplanned = (db.prepare("SELECT count(*) AS n FROM outbox WHERE seq > ? AND record_type = 'Transition'").get(planned) as { n: number }).n;
      const open = (db.prepare("SELECT count(*) AS n FROM actions WHERE status IN ('pending', 'running')").get() as { n: number }).n;
      return unplanned === 0 && open === 0;
    }) ?? false
  );
}

/** True once no sink has a record pending delivery. */
export function deliveriesSettled(dataDir: string): boolean {
  return query(dataDir, (db) => (db.prepare("SELECT coalesce(sum(pending), 0) AS n FROM sinks").get() as { n: number }).n === 0) ?? false;
}

/** Both ledgers settled: the agent has acted on everything it recorded, and delivered every record it wrote. */
export function ledgersSettled(dataDir: string): boolean {
  return actionsSettled(dataDir) && deliveriesSettled(dataDir);
}
