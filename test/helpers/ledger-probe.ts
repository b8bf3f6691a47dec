// Reads a running agent's store (sef.db, read-only, beside the agent's own connection) for what a process test waits on
// before asserting that something did not happen: the action ledger has settled — every Transition in the outbox is
// planned and no action is pending or running but node actions waiting for their event's end — and the delivery ledger
// holds nothing pending for any sink; and the node actions' persisted steps.
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

/**
 * True once the agent's actions have nothing left to do: every Transition planned, and nothing pending or running but
 * node actions whose steps are over and that wait only for their event to end (phase "settled", no end seen yet).
 */
export function actionsSettled(dataDir: string): boolean {
  return (
    query(dataDir, (db) => {
      const planned = (
        db.prepare("SELECT value FROM action_progress WHERE key = 'planned_through_seq'").get() as
          { value: number } | undefined
      )?.value;
      if (planned === undefined) return false;
      const unplanned = (
        db.prepare("SELECT count(*) AS n FROM outbox WHERE seq > ? AND record_type = 'Transition'").get(planned) as {
          n: number;
        }
      ).n;
      const open = db
        .prepare(
          "SELECT a.kind, s.state FROM actions a LEFT JOIN action_steps s ON s.action_key = a.action_key WHERE a.status IN ('pending', 'running')",
        )
        .all() as Array<{ kind: string; state: string | null }>;
      const waitingForTheEnd = (row: { kind: string; state: string | null }): boolean => {
        if (row.kind !== "kubernetes" || row.state === null) return false;
        const step = JSON.parse(row.state) as { phase?: string; endedStatus?: string | null };
        return step.phase === "settled" && (step.endedStatus ?? null) === null;
      };
      return unplanned === 0 && open.every(waitingForTheEnd);
    }) ?? false
  );
}

/** The persisted steps of the node actions (their state JSON, parsed), in no particular order. */
export function actionSteps(dataDir: string): unknown[] {
  return (
    query(dataDir, (db) =>
      (db.prepare("SELECT state FROM action_steps").all() as Array<{ state: string }>).map(
        (r) => JSON.parse(r.state) as unknown,
      ),
    ) ?? []
  );
}

/** True once no sink has a record pending delivery. */
export function deliveriesSettled(dataDir: string): boolean {
  return (
    query(
      dataDir,
      (db) => (db.prepare("SELECT coalesce(sum(pending), 0) AS n FROM sinks").get() as { n: number }).n === 0,
    ) ?? false
  );
}

/** Both ledgers settled: the agent has acted on everything it recorded, and delivered every record it wrote. */
export function ledgersSettled(dataDir: string): boolean {
  return actionsSettled(dataDir) && deliveriesSettled(dataDir);
}
