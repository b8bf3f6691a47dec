// The action ledger (SQL only): one row per planned hook run or approval with its persisted state, so that
// actions survive restarts and kill -9. Shares the store's database; the state machine lives in src/actions/.
import type { DatabaseSync } from "node:sqlite";

/**
 * pending: planned, not started (or due again) · running: started; if found at start-up the process died mid-action ·
 * succeeded / failed / approved: finished · interrupted: a run was cut off and is not run again · skipped: not done, with the reason.
 */
export const actionStatuses = ["pending", "running", "succeeded", "failed", "approved", "interrupted", "skipped"] as const;
export type ActionStatus = (typeof actionStatuses)[number];
export type ActionKind = "hook" | "approval";

export interface ActionRow {
  actionKey: string;
  kind: ActionKind;
  /** Lower-cased EventId. */
  eventKey: string;
  eventStatus: string;
  /** Hook name, or "approval". */
  name: string;
  status: ActionStatus;
  reason: string;
  attempts: number;
  /** The Transition record (JSON) the action was planned for. */
  recordJson: string;
  createdMs: number;
  updatedMs: number;
}

export interface PlannedAction {
  actionKey: string;
  kind: ActionKind;
  eventKey: string;
  eventStatus: string;
  name: string;
  recordJson: string;
}

interface Row {
  action_key: string;
  kind: string;
  event_key: string;
  event_status: string;
  name: string;
  status: string;
  reason: string;
  attempts: number;
  record: string;
  created_ms: number;
  updated_ms: number;
}

/** Creates the tables (idempotent); called from the store's migration. */
export function migrateActionLedger(db: DatabaseSync): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS actions (
      action_key TEXT PRIMARY KEY, kind TEXT NOT NULL, event_key TEXT NOT NULL, event_status TEXT NOT NULL, name TEXT NOT NULL,
      status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0, record TEXT NOT NULL,
      created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS actions_by_status ON actions(status);
    CREATE TABLE IF NOT EXISTS action_progress (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
  `);
}

export class ActionLedger {
  private readonly statements;

  constructor(private readonly db: DatabaseSync) {
    this.statements = {
      insert: db.prepare(
        "INSERT OR IGNORE INTO actions(action_key, kind, event_key, event_status, name, status, record, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
      ),
      get: db.prepare("SELECT * FROM actions WHERE action_key = ?"),
      nextPending: db.prepare("SELECT * FROM actions WHERE status = 'pending' ORDER BY rowid LIMIT 1"),
      withStatus: db.prepare("SELECT * FROM actions WHERE status = ? ORDER BY rowid"),
      forEvent: db.prepare("SELECT * FROM actions WHERE event_key = ? AND event_status = ? AND kind = ? ORDER BY rowid"),
      setStatus: db.prepare("UPDATE actions SET status = ?, reason = ?, attempts = attempts + ?, updated_ms = ? WHERE action_key = ?"),
      getProgress: db.prepare("SELECT value FROM action_progress WHERE key = ?"),
      setProgress: db.prepare("INSERT INTO action_progress(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = MAX(value, excluded.value)"),
      eventStatus: db.prepare("SELECT status FROM events WHERE event_key = ?"),
      forget: db.prepare("DELETE FROM actions WHERE status NOT IN ('pending', 'running') AND updated_ms < ?"),
    };
  }

  /** Records planned actions (a key already known is left as it is). Returns how many were new. */
  plan(actions: readonly PlannedAction[], nowMs: number): number {
    let added = 0;
    for (const a of actions) {
      const info = this.statements.insert.run(a.actionKey, a.kind, a.eventKey, a.eventStatus, a.name, a.recordJson, nowMs, nowMs);
      added += Number(info.changes);
    }
    return added;
  }

  get(actionKey: string): ActionRow | undefined {
    const row = this.statements.get.get(actionKey) as Row | undefined;
    return row ? toAction(row) : undefined;
  }

  /** The oldest pending action (actions run in the order they were planned). */
  nextPending(): ActionRow | undefined {
    const row = this.statements.nextPending.get() as Row | undefined;
    return row ? toAction(row) : undefined;
  }

  withStatus(status: ActionStatus): ActionRow[] {
    return (this.statements.withStatus.all(status) as unknown as Row[]).map(toAction);
  }

  /** Actions of one kind planned for one (event, status), in plan order. */
  forEvent(eventKey: string, eventStatus: string, kind: ActionKind): ActionRow[] {
    return (this.statements.forEvent.all(eventKey, eventStatus, kind) as unknown as Row[]).map(toAction);
  }

  /** Moves an action to `status`; `countAttempt` adds one to its attempts (when a run or POST starts). */
  setStatus(actionKey: string, status: ActionStatus, reason: string, nowMs: number, countAttempt = false): void {
    this.statements.setStatus.run(status, reason, countAttempt ? 1 : 0, nowMs, actionKey);
  }

  /** Outbox position up to which every Transition record has been planned (undefined before the first start). */
  plannedThroughSeq(): number | undefined {
    const row = this.statements.getProgress.get("planned_through_seq") as { value: number } | undefined;
    return row?.value;
  }

  setPlannedThroughSeq(seq: number): void {
    this.statements.setProgress.run("planned_through_seq", seq);
  }

  /** The collector's last committed status of an event (absent once the event ended). */
  committedEventStatus(eventKey: string): string | undefined {
    return (this.statements.eventStatus.get(eventKey) as { status: string } | undefined)?.status;
  }

  /** Deletes finished actions last updated before `beforeMs`; returns how many. */
  forgetFinished(beforeMs: number): number {
    return Number(this.statements.forget.run(beforeMs).changes);
  }

  /** Runs `body` in one transaction, or inside the caller's if one is open (so state and outbox records commit together). */
  transaction<T>(body: () => T): T {
    if (this.db.isTransaction) return body();
    this.db.exec("BEGIN IMMEDIATE");
    try {
      const result = body();
      this.db.exec("COMMIT");
      return result;
    } catch (err) {
      if (this.db.isTransaction) this.db.exec("ROLLBACK");
      throw err;
    }
  }
}

function toAction(row: Row): ActionRow {
  return {
    actionKey: row.action_key,
    kind: row.kind as ActionKind,
    eventKey: row.event_key,
    eventStatus: row.event_status,
    name: row.name,
    status: row.status as ActionStatus,
    reason: row.reason,
    attempts: row.attempts,
    recordJson: row.record,
    createdMs: row.created_ms,
    updatedMs: row.updated_ms,
  };
}
