// The action ledger (SQL only): one row per planned hook run, approval or node action (kubernetes) with its persisted
// state (and, for node actions, the JSON of their step), so that actions survive restarts and kill -9. Keeps its
// tables in the store's database; the state machine is action-runner.ts.
import type { DatabaseSync } from "node:sqlite";
import type { Store } from "../store/store.js";
import { transaction } from "../store/sql.js";

/**
 * pending: planned, not started (or due again) · running: started; if found at start-up the process died mid-action ·
 * succeeded / failed / approved: finished · interrupted: a run was cut off and is not run again · skipped: not done, with the reason.
 */
export const actionStatuses = ["pending", "running", "succeeded", "failed", "approved", "interrupted", "skipped"] as const;
export type ActionStatus = (typeof actionStatuses)[number];
export type ActionKind = "hook" | "approval" | "kubernetes";

export interface ActionRow {
  actionKey: string;
  kind: ActionKind;
  /** Lower-cased EventId. */
  eventKey: string;
  eventStatus: string;
  /** Hook name, "approval" (or "after-kubernetes": planned by the node action), or the node policy. */
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

/** Creates the tables (idempotent); run by `ActionLedger.open`. */
export function migrateActionLedger(db: DatabaseSync): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS actions (
      action_key TEXT PRIMARY KEY, kind TEXT NOT NULL, event_key TEXT NOT NULL, event_status TEXT NOT NULL, name TEXT NOT NULL,
      status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0, record TEXT NOT NULL,
      created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS actions_by_status ON actions(status);
    CREATE TABLE IF NOT EXISTS action_progress (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS action_steps (action_key TEXT PRIMARY KEY, state TEXT NOT NULL);
  `);
}

export class ActionLedger {
  private readonly statements;

  /** The action ledger of an open, writable store (its tables are created first). */
  static open(store: Store): ActionLedger {
    store.write(() => migrateActionLedger(store.database));
    return new ActionLedger(store.database);
  }

  constructor(private readonly db: DatabaseSync) {
    this.statements = {
      legacyApproved: db.prepare("SELECT 1 FROM meta WHERE key = ?"),
      insert: db.prepare(
        "INSERT OR IGNORE INTO actions(action_key, kind, event_key, event_status, name, status, record, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
      ),
      get: db.prepare("SELECT * FROM actions WHERE action_key = ?"),
      // Node actions (kind kubernetes) have their own worker: the runner of hooks and approvals never picks them.
      nextPending: db.prepare("SELECT * FROM actions WHERE status = 'pending' AND kind != 'kubernetes' ORDER BY rowid LIMIT 1"),
      activeOfKind: db.prepare("SELECT * FROM actions WHERE kind = ? AND status IN ('pending', 'running') ORDER BY rowid"),
      getStep: db.prepare("SELECT state FROM action_steps WHERE action_key = ?"),
      setStep: db.prepare("INSERT INTO action_steps(action_key, state) VALUES (?, ?) ON CONFLICT(action_key) DO UPDATE SET state = excluded.state"),
      forgetSteps: db.prepare("DELETE FROM action_steps WHERE action_key NOT IN (SELECT action_key FROM actions)"),
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

  /** Pending or running actions of one kind, in plan order. */
  activeOfKind(kind: ActionKind): ActionRow[] {
    return (this.statements.activeOfKind.all(kind) as unknown as Row[]).map(toAction);
  }

  /** The persisted step of a node action (JSON), or undefined before its first step. */
  getStep(actionKey: string): string | undefined {
    return (this.statements.getStep.get(actionKey) as { state: string } | undefined)?.state;
  }

  /** Persists the step of a node action (written before the step is taken). */
  setStep(actionKey: string, stateJson: string): void {
    this.statements.setStep.run(actionKey, stateJson);
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
    const forgotten = Number(this.statements.forget.run(beforeMs).changes);
    if (forgotten > 0) this.statements.forgetSteps.run();
    return forgotten;
  }

  /** Approvals recorded by agents before the action ledger existed (store meta `approved:<eventKey>`; read-only). */
  legacyApproved(eventKey: string): boolean {
    return this.statements.legacyApproved.get(`approved:${eventKey}`) !== undefined;
  }

  /** Runs `body` in one transaction, or inside the caller's if one is open (so state and outbox records commit together). */
  transaction<T>(body: () => T): T {
    return transaction(this.db, body);
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
