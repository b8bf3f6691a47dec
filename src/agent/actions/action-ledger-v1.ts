// The one place that knows the actions of the first action ledger (before holds): it converts the rows an older agent
// wrote, once, when the ledger is upgraded. Then a Scheduled hook ran before its event's approval (plan order) and
// an approval required it to succeed; a node action (kind kubernetes) planned its event's approval itself once its
// steps were over, named `after-kubernetes` when the drain asked for it. Now they hold the approval (action-ledger.ts).
import type { DatabaseSync } from "node:sqlite";

/** Rewrites rows of a v1 ledger as holds and gated approvals; runs inside the migration's transaction. */
export function upgradeFromV1(db: DatabaseSync): void {
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
