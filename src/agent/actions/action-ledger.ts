// The action ledger (SQL only): one row per planned action (a hook run, an approval, a node action, …) with its
// persisted state and, for actions that take steps, the JSON of their step; and the holds actions put on an event's
// approval. Actions survive restarts and kill -9 through it. It knows actions only by their `kind` (a string); the
// state machines are the actions' own (action.ts), the queue is action-runner.ts. Its tables, and any change to them,
// are store/migrations.ts's.
import type { DatabaseSync } from "node:sqlite";
import type { Store } from "../store/store.js";
import { transaction } from "../store/sql.js";

/**
 * pending: planned, not started (or due again) · running: started; if found at start-up the process died mid-action ·
 * succeeded / failed / approved: finished · interrupted: a run was cut off and is not run again · skipped: not done, with the reason.
 */
export const actionStatuses = [
  "pending",
  "running",
  "succeeded",
  "failed",
  "approved",
  "interrupted",
  "skipped",
] as const;
export type ActionStatus = (typeof actionStatuses)[number];
/** An action's kind, as its registry entry names it (`hook`, `approval`, `kubernetes`, …). */
export type ActionKind = string;

export interface ActionRow {
  actionKey: string;
  kind: ActionKind;
  /** Lower-cased EventId. */
  eventKey: string;
  eventStatus: string;
  /** What the action calls it: a hook's name, "approval", a node policy, … */
  name: string;
  status: ActionStatus;
  reason: string;
  attempts: number;
  /** The Transition record (JSON) the action was planned for. */
  recordJson: string;
  /** The row waits while its event holds anything (see `hold`). */
  gated: boolean;
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
  /** Run only once the event holds nothing (every hold released); default false. */
  gated?: boolean;
}

/**
 * How a holder releases its hold on an event's approval: `approve` asks for the event to be approved now, without a
 * rule (drain-then-approve); `done` leaves it to the approval rules; `failed` says the holder's step failed (an
 * approval that requires its prepare steps to succeed is skipped); `decline` says this VM must not approve the event
 * at all (another agent approves it, or nobody may: the approval is skipped whatever the rules say).
 */
export const holdVerdicts = ["approve", "done", "failed", "decline"] as const;
export type HoldVerdict = (typeof holdVerdicts)[number];

/** A hold an action puts on the event of a transition it plans for. */
export interface HoldRequest {
  /**
   * The key of the row that holds (one of the rows its action plans for this transition): the hold ends with that row
   * at the latest (see `setStatus`), so a row given up never keeps its event held.
   */
  holder: string;
  /** The holder may release it with `approve` (an approval is then planned even without a rule that matches). */
  mayApprove?: boolean;
}

export interface Hold {
  eventKey: string;
  holder: string;
  mayApprove: boolean;
  /** Undefined while held. */
  verdict: HoldVerdict | undefined;
  reason: string;
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
  gated: number;
  created_ms: number;
  updated_ms: number;
}

interface HoldRow {
  event_key: string;
  holder: string;
  may_approve: number;
  verdict: string;
  reason: string;
}

export class ActionLedger {
  private readonly statements;

  /** The action ledger of an open store (its tables are the store's: store/migrations.ts). */
  static open(store: Store): ActionLedger {
    return new ActionLedger(store.database);
  }

  constructor(private readonly db: DatabaseSync) {
    this.statements = {
      legacyApproved: db.prepare("SELECT 1 FROM meta WHERE key = ?"),
      insert: db.prepare(
        "INSERT OR IGNORE INTO actions(action_key, kind, event_key, event_status, name, status, record, gated, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
      ),
      get: db.prepare("SELECT * FROM actions WHERE action_key = ?"),
      // The oldest pending row of the given kinds; a gated row only when its event holds nothing.
      nextPending: db.prepare(`
        SELECT * FROM actions a WHERE a.status = 'pending' AND a.kind IN (SELECT value FROM json_each(?))
          AND NOT (a.gated = 1 AND EXISTS (SELECT 1 FROM action_holds h WHERE h.event_key = a.event_key AND h.verdict = ''))
        ORDER BY a.rowid LIMIT 1`),
      activeOfKind: db.prepare(
        "SELECT * FROM actions WHERE kind = ? AND status IN ('pending', 'running') ORDER BY rowid",
      ),
      getStep: db.prepare("SELECT state FROM action_steps WHERE action_key = ?"),
      setStep: db.prepare(
        "INSERT INTO action_steps(action_key, state) VALUES (?, ?) ON CONFLICT(action_key) DO UPDATE SET state = excluded.state",
      ),
      forgetSteps: db.prepare("DELETE FROM action_steps WHERE action_key NOT IN (SELECT action_key FROM actions)"),
      forgetHolds: db.prepare(
        "DELETE FROM action_holds WHERE verdict != '' AND event_key NOT IN (SELECT event_key FROM actions)",
      ),
      withStatus: db.prepare("SELECT * FROM actions WHERE status = ? ORDER BY rowid"),
      forEvent: db.prepare(
        "SELECT * FROM actions WHERE event_key = ? AND event_status = ? AND kind = ? ORDER BY rowid",
      ),
      setStatus: db.prepare(
        "UPDATE actions SET status = ?, reason = ?, attempts = attempts + ?, updated_ms = ? WHERE action_key = ?",
      ),
      hold: db.prepare(
        "INSERT OR IGNORE INTO action_holds(event_key, holder, may_approve, updated_ms) VALUES (?, ?, ?, ?)",
      ),
      release: db.prepare(
        "UPDATE action_holds SET verdict = ?, reason = ?, updated_ms = ? WHERE event_key = ? AND holder = ? AND verdict = ''",
      ),
      // A row's own hold (its holder is its key) ends with it at the latest.
      releaseOwn: db.prepare(
        "UPDATE action_holds SET verdict = ?, reason = ?, updated_ms = ? WHERE event_key = (SELECT event_key FROM actions WHERE action_key = ?) AND holder = ? AND verdict = ''",
      ),
      holdsOn: db.prepare("SELECT * FROM action_holds WHERE event_key = ? ORDER BY rowid"),
      getProgress: db.prepare("SELECT value FROM action_progress WHERE key = ?"),
      setProgress: db.prepare(
        "INSERT INTO action_progress(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = MAX(value, excluded.value)",
      ),
      eventStatus: db.prepare("SELECT status FROM events WHERE event_key = ?"),
      eventFields: db.prepare("SELECT fields FROM events WHERE event_key = ?"),
      forget: db.prepare("DELETE FROM actions WHERE status NOT IN ('pending', 'running') AND updated_ms < ?"),
    };
  }

  /** Records planned actions (a key already known is left as it is). Returns how many were new. */
  plan(actions: readonly PlannedAction[], nowMs: number): number {
    let added = 0;
    for (const a of actions) {
      const info = this.statements.insert.run(
        a.actionKey,
        a.kind,
        a.eventKey,
        a.eventStatus,
        a.name,
        a.recordJson,
        a.gated ? 1 : 0,
        nowMs,
        nowMs,
      );
      added += Number(info.changes);
    }
    return added;
  }

  get(actionKey: string): ActionRow | undefined {
    const row = this.statements.get.get(actionKey) as Row | undefined;
    return row ? toAction(row) : undefined;
  }

  /**
   * The oldest pending action of one of `kinds` that may run now (actions run in the order they were planned; a gated
   * one waits while its event holds anything).
   */
  nextPending(kinds: readonly ActionKind[]): ActionRow | undefined {
    const row = this.statements.nextPending.get(JSON.stringify(kinds)) as Row | undefined;
    return row ? toAction(row) : undefined;
  }

  /** Pending or running actions of one kind, in plan order. */
  activeOfKind(kind: ActionKind): ActionRow[] {
    return (this.statements.activeOfKind.all(kind) as unknown as Row[]).map(toAction);
  }

  /** The persisted step of an action that takes steps (JSON), or undefined before its first step. */
  getStep(actionKey: string): string | undefined {
    return (this.statements.getStep.get(actionKey) as { state: string } | undefined)?.state;
  }

  /** Persists the step of an action (written before the step is taken). */
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

  /**
   * Moves an action to `status`; `countAttempt` adds one to its attempts (when a run or POST starts). A finished
   * action's own hold, if it still holds, is released with it: `done` when it succeeded or approved, else `failed`.
   */
  setStatus(actionKey: string, status: ActionStatus, reason: string, nowMs: number, countAttempt = false): void {
    this.statements.setStatus.run(status, reason, countAttempt ? 1 : 0, nowMs, actionKey);
    if (status === "pending" || status === "running") return;
    const verdict: HoldVerdict = status === "succeeded" || status === "approved" ? "done" : "failed";
    this.statements.releaseOwn.run(verdict, reason, nowMs, actionKey, actionKey);
  }

  /** Puts `holder`'s hold on the event's approval (a hold already placed, held or released, is left as it is). */
  hold(eventKey: string, request: HoldRequest, nowMs: number): void {
    this.statements.hold.run(eventKey, request.holder, request.mayApprove ? 1 : 0, nowMs);
  }

  /** Releases `holder`'s hold with a verdict; a hold already released (or never placed) is left as it is. */
  release(eventKey: string, holder: string, verdict: HoldVerdict, reason: string, nowMs: number): void {
    this.statements.release.run(verdict, reason, nowMs, eventKey, holder);
  }

  /** Every hold placed on the event, held or released, in the order they were placed. */
  holdsOn(eventKey: string): Hold[] {
    return (this.statements.holdsOn.all(eventKey) as unknown as HoldRow[]).map((h) => ({
      eventKey: h.event_key,
      holder: h.holder,
      mayApprove: h.may_approve === 1,
      verdict: h.verdict === "" ? undefined : (h.verdict as HoldVerdict),
      reason: h.reason,
    }));
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

  /**
   * The event's NotBefore as the last document listed it (IMDS may move it without a transition), or undefined when
   * the event is not tracked or the document gave none.
   */
  committedEventNotBefore(eventKey: string): string | undefined {
    const row = this.statements.eventFields.get(eventKey) as { fields: string } | undefined;
    if (row === undefined) return undefined;
    const notBefore = (JSON.parse(row.fields) as { NotBefore?: unknown }).NotBefore;
    return typeof notBefore === "string" && notBefore !== "" ? notBefore : undefined;
  }

  /** Deletes finished actions last updated before `beforeMs` (with their steps, and the released holds of events left without rows); returns how many. */
  forgetFinished(beforeMs: number): number {
    const forgotten = Number(this.statements.forget.run(beforeMs).changes);
    this.statements.forgetSteps.run();
    this.statements.forgetHolds.run();
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
    kind: row.kind,
    eventKey: row.event_key,
    eventStatus: row.event_status,
    name: row.name,
    status: row.status as ActionStatus,
    reason: row.reason,
    attempts: row.attempts,
    recordJson: row.record,
    gated: row.gated === 1,
    createdMs: row.created_ms,
    updatedMs: row.updated_ms,
  };
}
