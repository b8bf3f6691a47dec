// A store whose action ledger was written by the agent before holds existed (v1: no `gated` column, no `action_holds`;
// a node action planned its event's approval itself, named `after-kubernetes` after a drain) keeps working after the
// upgrade: its rows become holds and gated approvals, and the approval action, the IMDS simulator answering its POSTs,
// does with them what the old agent would have done.
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ActionLedger } from "../../src/agent/actions/action-ledger.js";
import { ActionRunner } from "../../src/agent/actions/action-runner.js";
import type { ActionContext } from "../../src/agent/actions/action.js";
import { ApprovalAction } from "../../src/agent/actions/approval/action.js";
import { approvalPolicySchema } from "../../src/agent/actions/approval/policy.js";
import { emptyCollectorState } from "../../src/agent/collector/state.js";
import type { ApprovalRecord, TransitionRecord } from "../../src/contract/record.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { systemClock } from "../../src/runtime/clock.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { waitUntil } from "../helpers/wait.js";
import { startRequestPoster, transition, vm } from "./fixtures.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The action ledger's tables as the agent before holds created them (its migrateActionLedger, verbatim). */
const v1Tables = `
  CREATE TABLE IF NOT EXISTS actions (
    action_key TEXT PRIMARY KEY, kind TEXT NOT NULL, event_key TEXT NOT NULL, event_status TEXT NOT NULL, name TEXT NOT NULL,
    status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0, record TEXT NOT NULL,
    created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
  CREATE INDEX IF NOT EXISTS actions_by_status ON actions(status);
  CREATE TABLE IF NOT EXISTS action_progress (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS action_steps (action_key TEXT PRIMARY KEY, state TEXT NOT NULL);`;

const reboot = (id: string): TransitionRecord =>
  transition({ EventId: id, EventType: "Reboot", Resources: ["WestNO_0"] });
const drained = reboot("AAAA0001-0000-4000-8000-000000000001"); // drained; its after-kubernetes approval pending
const draining = reboot("AAAA0001-0000-4000-8000-000000000002"); // mid-drain: no approval planned yet
const hookFailed = reboot("AAAA0001-0000-4000-8000-000000000003"); // its prepare hook failed; approval by the rules pending
const rulesDeclined = reboot("AAAA0001-0000-4000-8000-000000000004"); // node steps over, the rules planned nothing

/** A v1 store: the events Scheduled in the collector state, and the rows the v1 agent wrote for them. */
function writeV1Store(dataDir: string): void {
  const store = openOutbox({ dataDir });
  const state = emptyCollectorState();
  for (const r of [drained, draining, hookFailed, rulesDeclined])
    state.events.set(r.EventId.toLowerCase(), { status: "Scheduled", fields: r, lastSeenMs: Date.now() });
  store.commitDocument(state, [], Date.now());
  const db = store.opened.database;
  // Today's store has the ledger of schema version 4: put back the ledger of version 3 (as its agents made it).
  db.exec(`DROP TABLE action_holds; DROP TABLE actions; DROP TABLE action_steps; DROP TABLE action_progress;
    ${v1Tables}
    UPDATE meta SET value = '3' WHERE key = 'schema_migration';`);
  const insert = db.prepare(
    "INSERT INTO actions(action_key, kind, event_key, event_status, name, status, reason, attempts, record, created_ms, updated_ms) VALUES (?, ?, ?, 'Scheduled', ?, ?, ?, ?, ?, 1, 1)",
  );
  const row = (
    kind: string,
    record: TransitionRecord,
    name: string,
    status: string,
    key = `${kind}:${record.EventId.toLowerCase()}`,
    reason = "",
    attempts = 0,
  ): void => {
    insert.run(key, kind, record.EventId.toLowerCase(), name, status, reason, attempts, JSON.stringify(record));
  };
  const step = (record: TransitionRecord, phase: string): void => {
    db.prepare("INSERT INTO action_steps(action_key, state) VALUES (?, ?)").run(
      `kubernetes:${record.EventId.toLowerCase()}`,
      JSON.stringify({ phase }),
    );
  };
  row("kubernetes", drained, "drain-then-approve", "running", undefined, "", 1);
  step(drained, "settled");
  row("approval", drained, "after-kubernetes", "pending");
  row("kubernetes", draining, "drain-then-approve", "running", undefined, "", 1);
  step(draining, "draining");
  row(
    "hook",
    hookFailed,
    "drain",
    "failed",
    `hook:${hookFailed.EventId.toLowerCase()}:Scheduled:drain`,
    "drain: exit 3",
    1,
  );
  row("approval", hookFailed, "approval", "pending");
  row("kubernetes", rulesDeclined, "drain", "running", undefined, "", 1);
  step(rulesDeclined, "settled");
  db.prepare("INSERT INTO action_progress(key, value) VALUES ('planned_through_seq', ?)").run(store.headSeq());
  store.close();
}

describe("an action ledger written before holds", () => {
  it("is upgraded once: node actions and prepare hooks become holds, approvals wait for them, and run as the old agent would have", async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), "sef-ledger-v1-")), "data");
    dirs.push(dataDir);
    writeV1Store(dataDir);
    const sim = await startSimulator({ scenario: "idle" });
    sim.setEvents(
      [drained, draining].map((r) => ({
        EventId: r.EventId,
        EventType: "Reboot",
        Resources: ["WestNO_0"],
        notBeforeInSeconds: 900,
        autoStart: false,
      })),
    );
    const post = startRequestPoster(sim.url);
    let store: OpenOutbox | undefined;
    try {
      store = openOutbox({ dataDir });
      const ledger = ActionLedger.open(store.opened);
      const key = (r: TransitionRecord): string => r.EventId.toLowerCase();
      expect(ledger.holdsOn(key(drained))).toMatchObject([
        {
          holder: `kubernetes:${key(drained)}`,
          mayApprove: true,
          verdict: "approve",
          reason: expect.stringContaining("drain-then-approve"),
        },
      ]);
      expect(ledger.holdsOn(key(draining))).toMatchObject([
        { holder: `kubernetes:${key(draining)}`, mayApprove: true, verdict: undefined },
      ]);
      expect(ledger.holdsOn(key(hookFailed))).toMatchObject([{ verdict: "failed" }]);
      expect(ledger.holdsOn(key(rulesDeclined))).toMatchObject([{ mayApprove: false, verdict: "done" }]);
      expect(ledger.get(`approval:${key(draining)}`)).toMatchObject({
        status: "pending",
        gated: true,
        name: "approval",
      });
      expect(ledger.get(`approval:${key(rulesDeclined)}`)).toBeUndefined();
      expect(ledger.nextPending(["approval"])?.actionKey).toBe(`approval:${key(drained)}`);
      ActionLedger.open(store.opened); // a second open changes nothing
      expect(ledger.holdsOn(key(draining))).toHaveLength(1);

      const outbox = store;
      const context: ActionContext = {
        ledger,
        append: (records) => void outbox.append(records, Date.now()),
        release: (eventKey, holder, verdict, reason) => {
          ledger.release(eventKey, holder, verdict, reason, Date.now());
          runner.wake();
        },
        wake: () => runner.wake(),
        vm: () => vm,
        hasPolled: () => true,
        postStartRequest: post,
        env: {},
        clock: systemClock,
        logger: silentLogger(),
        metrics: new AgentMetrics(),
        agentVersion: "9.9.9",
      };
      const policy = approvalPolicySchema.parse({
        mode: "on",
        rules: [{ eventType: ["Reboot"] }],
        requirePrepareHookSuccess: true,
      });
      const runner: ActionRunner = new ActionRunner({
        actions: [new ApprovalAction({ policy, context })],
        ledger,
        readAfter: (seq, limit) => outbox.readAfter(seq, limit),
        headSeq: () => outbox.headSeq(),
        hasPolled: () => true,
        clock: systemClock,
        logger: silentLogger(),
      });
      runner.start();
      try {
        await waitUntil(
          () =>
            ledger.get(`approval:${key(drained)}`)?.status === "approved" &&
            ledger.get(`approval:${key(hookFailed)}`)?.status === "skipped",
          15_000,
          "the pending approvals to be done",
        );
        expect(ledger.get(`approval:${key(hookFailed)}`)?.reason).toBe("a prepare hook failed");
        expect(ledger.get(`approval:${key(draining)}`)?.status).toBe("pending"); // held by the drain still going on
        context.release(
          key(draining),
          `kubernetes:${key(draining)}`,
          "approve",
          "the node is drained (kubernetes policy drain-then-approve)",
        );
        await waitUntil(
          () => ledger.get(`approval:${key(draining)}`)?.status === "approved",
          15_000,
          "the approval after the drain",
        );
      } finally {
        await runner.stop();
      }
      const approvals = outbox
        .readAfter(0, 100)
        .flatMap((e) => (e.record.RecordType === "Approval" ? [e.record as ApprovalRecord] : []));
      expect(approvals.map((r) => [r.EventId, r.Outcome])).toEqual([
        [drained.EventId, "Approved"],
        [draining.EventId, "Approved"],
      ]);
      expect(
        approvals.every((r) => r.Detail.endsWith("(the node is drained (kubernetes policy drain-then-approve))")),
      ).toBe(true);
      expect(sim.status().approvals.map((a) => [a.EventId, a.count])).toEqual([
        [drained.EventId, 1],
        [draining.EventId, 1],
      ]);
    } finally {
      store?.close();
      await post.close();
      await sim.close();
    }
  });
});
