// The action runner as a ledger consumer, on a real store, real hook processes and the IMDS simulator:
// planning that survives a crash, approvals never sent twice, interrupted hooks re-run or left per their setting.
import { afterAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ActionRunner } from "../../src/agent/actions/action-runner.js";
import type { Action, ActionContext, PostStartRequest } from "../../src/agent/actions/action.js";
import { ApprovalAction, approvalStopGraceMs } from "../../src/agent/actions/approval/action.js";
import { approvalPolicySchema, type ApprovalPolicy } from "../../src/agent/actions/approval/policy.js";
import { HooksAction } from "../../src/agent/actions/hooks/action.js";
import { hookSchema, type HookConfig } from "../../src/agent/actions/hooks/hooks.js";
import { ActionLedger } from "../../src/agent/actions/action-ledger.js";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { emptyCollectorState } from "../../src/agent/collector/state.js";
import type { ApprovalRecord, HookRecord, TransitionRecord } from "../../src/contract/record.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { systemClock } from "../../src/runtime/clock.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { waitUntil } from "../helpers/agent-process.js";
import { startRequestPoster, transition, vm } from "./fixtures.js";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "sef-runner-"));
  dirs.push(dir);
  return dir;
};

const reboot = (id: string): TransitionRecord =>
  transition({ EventId: id, EventType: "Reboot", Resources: ["WestNO_0"], RecordId: "" });

type Status = "Scheduled" | "Started";

/** Commits the record as the collector would: the events' statuses in the state (this one and `others`), the record in the outbox. */
/** A store with its outbox (`store`) and its action ledger (`store.actions`). */
type Store = OpenOutbox & { actions: ActionLedger };
const openStore = (dataDir: string): Store => {
  const store = openOutbox({ dataDir, maxOutboxBytes: 1 << 30 });
  return Object.assign(store, { actions: ActionLedger.open(store.opened) });
};

function commit(
  store: Store,
  record: TransitionRecord,
  status: Status = "Scheduled",
  others: Array<[TransitionRecord, Status]> = [],
): void {
  const state = emptyCollectorState();
  for (const [r, st] of [[record, status] as [TransitionRecord, Status], ...others]) {
    state.events.set(r.EventId.toLowerCase(), { status: st, fields: r, lastSeenMs: Date.now() });
  }
  store.commitDocument(state, [record], Date.now());
}

interface RunnerSetup {
  hooks?: HookConfig[];
  approval?: ApprovalPolicy;
  postStartRequest?: PostStartRequest;
  hasPolled?: () => boolean;
  approvalAttempts?: number;
  /** More actions after approval and hooks (as the registry would list them). */
  extra?: Action[];
}

/** The runner with the registry's approval and hooks actions, as the act stage makes them. */
function runnerOn(store: Store, over: RunnerSetup): ActionRunner {
  const hasPolled = over.hasPolled ?? (() => true);
  const context: ActionContext = {
    ledger: store.actions,
    append: (records) => {
      store.append(records, Date.now());
    },
    release: (eventKey, holder, verdict, reason) => {
      store.actions.release(eventKey, holder, verdict, reason, Date.now());
      runner.wake();
    },
    wake: () => runner.wake(),
    vm: () => vm,
    hasPolled,
    postStartRequest: over.postStartRequest ?? (() => Promise.reject(new Error("no IMDS in this test"))),
    env: {},
    clock: systemClock,
    logger: silentLogger(),
    metrics: new AgentMetrics(),
    agentVersion: "9.9.9",
  };
  const approval = new ApprovalAction({
    policy: over.approval ?? approvalPolicySchema.parse({}),
    context,
    retryDelayMs: 20,
    ...(over.approvalAttempts === undefined ? {} : { attempts: over.approvalAttempts }),
  });
  const runner: ActionRunner = new ActionRunner({
    actions: [approval, new HooksAction(over.hooks ?? [], context), ...(over.extra ?? [])],
    ledger: store.actions,
    readAfter: (seq, limit) => store.readAfter(seq, limit),
    headSeq: () => store.headSeq(),
    hasPolled,
    clock: systemClock,
    logger: silentLogger(),
  });
  return runner;
}

const outbox = (store: Store) => store.readAfter(0, 10_000).map((e) => e.record);
const hookRecords = (store: Store) => outbox(store).filter((r): r is HookRecord => r.RecordType === "Hook");
const approvalRecords = (store: Store) => outbox(store).filter((r): r is ApprovalRecord => r.RecordType === "Approval");
/**
 * The runner has nothing left to do: every transition in the outbox is planned (its own Hook and Approval records come
 * after the planned position), and no action is pending or running
 * (a hook's effects and records are in place before its row leaves `running`). What a test waits for before it
 * asserts that something did not happen.
 */
const actionsSettled = (store: Store): boolean =>
  store.readAfter(store.actions.plannedThroughSeq() ?? 0, 10_000).every((e) => e.record.RecordType !== "Transition") &&
  store.actions.withStatus("pending").length === 0 &&
  store.actions.withStatus("running").length === 0;
const countLines = (path: string): number =>
  existsSync(path)
    ? readFileSync(path, "utf8")
        .split("\n")
        .filter((l) => l !== "").length
    : 0;

describe("ActionRunner", () => {
  it("plans a transition committed just before a crash (past the planned position) at the next start, and runs its hook once", async () => {
    const dir = tempDir();
    const runs = join(dir, "runs.log");
    const hooks = [
      hookSchema.parse({
        name: "note",
        on: ["Scheduled"],
        command: [process.execPath, "-e", `require("fs").appendFileSync(${JSON.stringify(runs)},"x\\n")`],
      }),
    ];
    const store = openStore(join(dir, "data"));
    try {
      store.actions.setPlannedThroughSeq(store.headSeq()); // an earlier run had planned everything so far
      commit(store, reboot("11110000-0000-4000-8000-000000000001")); // ...then died before planning this one
      const first = runnerOn(store, { hooks });
      first.start();
      await waitUntil(() => hookRecords(store).length === 1, 10_000, "the hook record");
      await first.stop();
      const second = runnerOn(store, { hooks });
      second.start();
      await waitUntil(() => actionsSettled(store), 10_000, "the second runner to settle");
      await second.stop();
      expect(countLines(runs)).toBe(1);
      expect(hookRecords(store)).toMatchObject([
        { Outcome: "Succeeded", EventId: "11110000-0000-4000-8000-000000000001" },
      ]);
    } finally {
      store.close();
    }
  });

  it("acts only on what happens from its first start on a data dir, not on transitions already in the outbox", async () => {
    const dir = tempDir();
    const runs = join(dir, "runs.log");
    const hooks = [
      hookSchema.parse({
        name: "note",
        on: ["Scheduled"],
        command: [process.execPath, "-e", `require("fs").appendFileSync(${JSON.stringify(runs)},"x\\n")`],
      }),
    ];
    const store = openStore(join(dir, "data"));
    try {
      commit(store, reboot("22220000-0000-4000-8000-000000000001"));
      const runner = runnerOn(store, { hooks });
      runner.start();
      const fresh = reboot("22220000-0000-4000-8000-000000000002");
      commit(store, fresh);
      runner.planCommitted();
      await waitUntil(
        () => hookRecords(store).length === 1 && actionsSettled(store),
        10_000,
        "the hook record, and nothing else to do",
      );
      await runner.stop();
      expect(countLines(runs)).toBe(1);
      expect(hookRecords(store).map((r) => r.EventId)).toEqual([fresh.EventId]);
    } finally {
      store.close();
    }
  });

  it("a hook stopped at shutdown is reported Interrupted and, with onInterrupted rerun, runs again at the next start", async () => {
    const dir = tempDir();
    const runs = join(dir, "runs.log");
    const script = `const fs=require("fs");const f=${JSON.stringify(runs)};const n=fs.existsSync(f)?1:0;fs.appendFileSync(f,"x\\n");if(n===0)setTimeout(()=>{},60000);`;
    const hooks = [
      hookSchema.parse({
        name: "drain",
        on: ["Scheduled"],
        command: [process.execPath, "-e", script],
        killGraceMs: 200,
        onInterrupted: "rerun",
      }),
    ];
    const store = openStore(join(dir, "data"));
    try {
      const first = runnerOn(store, { hooks });
      first.start();
      const record = reboot("33330000-0000-4000-8000-000000000001");
      commit(store, record);
      first.planCommitted();
      await waitUntil(() => countLines(runs) === 1, 10_000, "the hook to start");
      await first.stop();
      expect(hookRecords(store)).toMatchObject([{ Outcome: "Interrupted", ExitCode: -1 }]);
      expect(store.actions.get(`hook:${record.EventId.toLowerCase()}:Scheduled:drain`)).toMatchObject({
        status: "pending",
        attempts: 1,
      });
      const second = runnerOn(store, { hooks });
      second.start();
      await waitUntil(() => hookRecords(store).length === 2, 10_000, "the re-run's record");
      await second.stop();
      expect(hookRecords(store).map((r) => r.Outcome)).toEqual(["Interrupted", "Succeeded"]);
      expect(new Set(hookRecords(store).map((r) => r.RecordId)).size).toBe(2);
      expect(countLines(runs)).toBe(2);
    } finally {
      store.close();
    }
  });

  it("a hold released with decline skips the approval whatever the rules say; every action hears of each document read", async () => {
    const store = openStore(join(tempDir(), "data"));
    const posted: string[][] = [];
    const heard: string[][] = [];
    // An action that holds each Scheduled event and may ask for its approval (as a node action does), and hears documents.
    const gate: Action = {
      kind: "gate",
      runsIn: "worker",
      start: () => undefined,
      stop: async () => undefined,
      holdsFor: (record) => [{ holder: `gate:${record.EventId.toLowerCase()}`, mayApprove: true }],
      plan: () => [],
      documentRead: (eventIds) => heard.push([...eventIds]),
    };
    try {
      const approval = approvalPolicySchema.parse({
        mode: "on",
        approver: "this-vm",
        rules: [{ eventType: ["Reboot"] }],
      });
      const postStartRequest: PostStartRequest = (ids) => {
        posted.push([...ids]);
        return Promise.resolve({ status: 200, body: "" });
      };
      const runner = runnerOn(store, { approval, postStartRequest, extra: [gate] });
      runner.start();
      const record = reboot("33330000-0000-4000-8000-000000000009");
      const eventKey = record.EventId.toLowerCase();
      commit(store, record);
      runner.planCommitted();
      runner.documentRead([record.EventId, "other-event"]);
      expect(heard).toEqual([[record.EventId, "other-event"]]);
      expect(store.actions.get(`approval:${eventKey}`)).toMatchObject({ status: "pending", gated: true });
      store.actions.release(
        eventKey,
        `gate:${eventKey}`,
        "decline",
        "node-a approves it once all have drained",
        Date.now(),
      );
      runner.wake();
      await waitUntil(() => actionsSettled(store), 10_000, "the approval to be decided");
      await runner.stop();
      expect(store.actions.get(`approval:${eventKey}`)).toMatchObject({
        status: "skipped",
        reason: "node-a approves it once all have drained",
      });
      expect(posted).toEqual([]);
      expect(approvalRecords(store)).toEqual([]);
    } finally {
      store.close();
    }
  });

  it("an approval POST whose outcome is unknown (timeout) is recorded Failed and never sent again", async () => {
    const sim = await startSimulator({ scenario: "idle", approvalDelayMs: 3000 });
    const post = startRequestPoster(sim.url, { firstCallTimeoutMs: 300 });
    const store = openStore(join(tempDir(), "data"));
    try {
      const approval = approvalPolicySchema.parse({ mode: "on", rules: [{ eventType: ["Reboot"] }] });
      const runner = runnerOn(store, { approval, postStartRequest: post, approvalAttempts: 3 });
      runner.start();
      const record = reboot("44440000-0000-4000-8000-000000000001");
      commit(store, record);
      runner.planCommitted();
      await waitUntil(
        () =>
          store.actions.get(`approval:${record.EventId.toLowerCase()}`)?.status === "failed" && actionsSettled(store),
        10_000,
        "the approval to fail, and nothing left to retry",
      );
      expect(sim.status().approvalsHeld + sim.status().approvals.length).toBe(1);
      await runner.stop();
      expect(approvalRecords(store)).toMatchObject([{ Outcome: "Failed", HttpStatus: 0 }]);
      expect(approvalRecords(store)[0]!.Detail).toContain("not sent again");
    } finally {
      store.close();
      await post.close();
      await sim.close();
    }
    expect(sim.status().approvalsHeld).toBe(0);
  });

  it("a refused approval is retried up to approvalAttempts; one whose event is no longer Scheduled is skipped without a POST", async () => {
    const sim = await startSimulator({ scenario: "idle" }); // knows no event: every StartRequests POST is refused (400)
    const post = startRequestPoster(sim.url);
    const store = openStore(join(tempDir(), "data"));
    let polled = false;
    try {
      const approval = approvalPolicySchema.parse({ mode: "on", rules: [{ eventType: ["Reboot"] }] });
      const runner = runnerOn(store, {
        approval,
        postStartRequest: post,
        approvalAttempts: 2,
        hasPolled: () => polled,
      });
      runner.start();
      const refused = reboot("55550000-0000-4000-8000-000000000001");
      const started = reboot("55550000-0000-4000-8000-000000000002");
      commit(store, started);
      runner.planCommitted();
      commit(store, refused, "Scheduled", [[started, "Started"]]); // `started` started before the runner got to it
      runner.planCommitted();
      polled = true;
      await waitUntil(
        () => store.actions.get(`approval:${refused.EventId.toLowerCase()}`)?.status === "failed",
        10_000,
        "the approval to fail",
      );
      await runner.stop();
      expect(store.actions.get(`approval:${started.EventId.toLowerCase()}`)).toMatchObject({
        status: "skipped",
        reason: "the event is Started now",
      });
      expect(sim.status().approvals.map((a) => [a.EventId, a.count])).toEqual([
        [refused.EventId, 1],
        [refused.EventId, 2],
      ]);
      expect(
        approvalRecords(store).every(
          (r) => r.EventId === refused.EventId && r.Outcome === "Failed" && r.HttpStatus === 400,
        ),
      ).toBe(true);
    } finally {
      store.close();
      await post.close();
      await sim.close();
    }
  });

  it("at a clean stop, an approval POST in flight is waited for (up to approvalStopGraceMs), then cut off and reported Interrupted", async () => {
    const approval = approvalPolicySchema.parse({ mode: "on", rules: [{ eventType: ["Reboot"] }] });
    const outcomeAtStop = async (approvalDelayMs: number, id: string) => {
      const sim = await startSimulator({ scenario: "idle", approvalDelayMs });
      const post = startRequestPoster(sim.url);
      const store = openStore(join(tempDir(), "data"));
      try {
        sim.setEvents([
          { EventId: id, EventType: "Reboot", Resources: ["WestNO_0"], notBeforeInSeconds: 900, autoStart: false },
        ]);
        const runner = runnerOn(store, { approval, postStartRequest: post });
        runner.start();
        const record = reboot(id);
        commit(store, record);
        runner.planCommitted();
        await waitUntil(() => sim.status().approvalsHeld === 1, 10_000, "the POST to be in flight");
        const stoppedAtMs = Date.now();
        await runner.stop();
        const stopMs = Date.now() - stoppedAtMs;
        const restarted = runnerOn(store, { approval, postStartRequest: post });
        restarted.start();
        await waitUntil(() => actionsSettled(store), 10_000, "the restarted runner to settle");
        await restarted.stop();
        return {
          stopMs,
          status: store.actions.get(`approval:${id.toLowerCase()}`)?.status,
          records: approvalRecords(store),
          posts: sim.status().approvals.length + sim.status().approvalsHeld,
        };
      } finally {
        store.close();
        await post.close();
        await sim.close();
      }
    };
    const [answered, cutOff] = await Promise.all([
      outcomeAtStop(500, "66660000-0000-4000-8000-000000000001"),
      outcomeAtStop(60_000, "66660000-0000-4000-8000-000000000002"),
    ]);
    expect(answered).toMatchObject({
      status: "approved",
      records: [{ Outcome: "Approved", HttpStatus: 200 }],
      posts: 1,
    });
    expect(cutOff).toMatchObject({
      status: "interrupted",
      records: [{ Outcome: "Interrupted", HttpStatus: 0 }],
      posts: 1,
    });
    expect(cutOff.stopMs).toBeGreaterThanOrEqual(approvalStopGraceMs - 100);
    expect(cutOff.stopMs).toBeLessThan(approvalStopGraceMs + 3000);
  });
});
