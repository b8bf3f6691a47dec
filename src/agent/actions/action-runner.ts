// Acts on durable transition records as a consumer of the store's action ledger: plans hook runs and approvals
// the moment a transition commits, runs them one at a time off the poll loop, and persists each step, so a restart
// (even after kill -9) neither forgets an action nor repeats a finished one. Hook and approval records go to the outbox.
import type { Logger } from "pino";
import type { ApprovalRecord, HookRecord, RecordIdentity, SefRecord, TransitionRecord } from "@sef/contract/record.js";
import type { Clock } from "../util/clock.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { ActionLedger, ActionRow, PlannedAction } from "../store/action-ledger.js";
import { decideApproval, type ApprovalPolicy } from "./approval-policy.js";
import { attemptApproval, interruptedApprovalRecord, type PostStartRequest } from "./approver.js";
import { interruptedHookRecord, runHook, selectHooks, type HookConfig } from "./hooks.js";

/** Finished actions are kept this long (so a transition still in the outbox is never planned twice). */
export const finishedActionRetentionMs = 30 * 24 * 3600_000;
/** A hook with `onInterrupted: "rerun"` is started at most this many times in all. */
export const maxHookRuns = 3;
/** At a clean stop, an approval POST already in flight gets this long to be answered before it is cut off. */
export const approvalStopGraceMs = 3000;
const idleWaitMs = 60_000;
const errorPauseMs = 5000;
const maxErrorsPerAction = 3;
const waitForPollMs = 100;
const catchUpBatch = 500;

export interface ActionRunnerOptions {
  hooks: HookConfig[];
  approval: ApprovalPolicy;
  postStartRequest: PostStartRequest;
  vm: () => RecordIdentity;
  /** The persisted action state (the store's action ledger). */
  ledger: ActionLedger;
  /** Appends records to the outbox durably and wakes the sinks; called inside the ledger's transaction. */
  append: (records: Array<HookRecord | ApprovalRecord>) => void;
  /** Outbox records after a position, oldest first (to plan transitions a crash left unplanned). */
  readAfter: (seq: number, limit: number) => Array<{ seq: number; record: SefRecord }>;
  headSeq: () => number;
  /** True once this process has read IMDS: approvals wait for a current view of the events. */
  hasPolled: () => boolean;
  /** Approvals recorded by older versions (store meta). */
  legacyApproved?: { has(eventKey: string): boolean };
  clock: Clock;
  logger: Logger;
  metrics: AgentMetrics;
  agentVersion: string;
  /** POSTs for one approval that IMDS refused or that could not connect (a POST in doubt is never repeated). */
  approvalAttempts?: number;
  approvalRetryDelayMs?: number;
}

export class ActionRunner {
  private readonly stopping = new AbortController();
  /** Aborted `approvalStopGraceMs` after `stopping`: cuts off an approval POST still unanswered. */
  private readonly cutOff = new AbortController();
  private wakeUp = new AbortController();
  private readonly errorsByKey = new Map<string, number>();
  private loop: Promise<void> | undefined;

  constructor(private readonly options: ActionRunnerOptions) {}

  /** True when there is anything to do at all (no hooks and approval off: the runner is not needed). */
  static isNeeded(hooks: readonly HookConfig[], approval: ApprovalPolicy): boolean {
    return hooks.length > 0 || approval.mode !== "off";
  }

  /**
   * Settles what the last run left behind (actions found `running` are reported Interrupted), plans transitions
   * committed but not planned before a crash, then works through pending actions in the background.
   */
  start(): void {
    this.recoverInterrupted();
    this.catchUp();
    this.options.ledger.forgetFinished(this.options.clock.now() - finishedActionRetentionMs);
    this.loop = this.run().catch((err: unknown) => this.options.logger.error({ err }, "action runner failed"));
  }

  /**
   * Called right after transition records committed: plans their actions synchronously, so nothing is held only in
   * memory. The records are read back from the outbox past the planned position, so a plan that failed earlier
   * (store error) is made up here too.
   */
  enqueue(_records: readonly TransitionRecord[]): void {
    try {
      this.catchUp();
    } catch (err) {
      // Not lost: the records stay in the outbox past the planned position; the next commit or start plans them.
      this.options.logger.error({ err }, "could not record planned actions; trying again at the next transition or start");
    }
    this.wakeUp.abort();
  }

  /**
   * Stops running hooks (SIGTERM, then SIGKILL; reported Interrupted), lets an approval POST in flight be answered
   * for up to `approvalStopGraceMs` (so its outcome is known), and waits for the runner to settle.
   */
  async stop(): Promise<void> {
    this.stopping.abort(new Error("agent stopping"));
    const graceOver = new AbortController();
    void this.options.clock.sleep(approvalStopGraceMs, graceOver.signal).then(
      () => this.cutOff.abort(new Error("agent stopping")),
      () => undefined,
    );
    await this.loop;
    graceOver.abort();
  }

  private planFor(record: TransitionRecord): PlannedAction[] {
    const eventKey = record.EventId.toLowerCase();
    const recordJson = JSON.stringify(record);
    const base = { eventKey, eventStatus: record.EventStatus, recordJson };
    const planned: PlannedAction[] = selectHooks(this.options.hooks, record).map((hook) => ({
      ...base,
      actionKey: `hook:${eventKey}:${record.EventStatus}:${hook.name}`,
      kind: "hook",
      name: hook.name,
    }));
    const { approval, logger } = this.options;
    if (record.EventStatus === "Scheduled" && approval.mode !== "off") {
      // Everything but the prepare hooks' outcome can be judged now; the rest is judged when the approval's turn comes.
      const decision = decideApproval(record, this.options.vm().VmName, approval, this.alreadyApproved(eventKey), true);
      if (decision.approve) planned.push({ ...base, actionKey: `approval:${eventKey}`, kind: "approval", name: "approval" });
      else logger.info({ eventId: record.EventId, reason: decision.reason }, "not approving");
    }
    return planned;
  }

  private alreadyApproved(eventKey: string): boolean {
    return this.options.legacyApproved?.has(eventKey) === true || this.options.ledger.get(`approval:${eventKey}`)?.status === "approved";
  }

  /** Actions a dead process left `running`: each is reported once (Interrupted) and then re-run or left, per its policy. */
  private recoverInterrupted(): void {
    const { ledger, clock, logger, agentVersion } = this.options;
    for (const row of ledger.withStatus("running")) {
      const record = JSON.parse(row.recordJson) as TransitionRecord;
      const nowMs = clock.now();
      if (row.kind === "hook") {
        const hook = this.options.hooks.find((h) => h.name === row.name);
        const next = this.afterHookInterrupted(hook, row);
        ledger.transaction(() => {
          this.options.append([interruptedHookRecord(row.name, record, row.attempts, `interrupted: the agent ended while it ran (run ${row.attempts}); ${next.why}`, nowMs, agentVersion)]);
          ledger.setStatus(row.actionKey, next.status, next.why, nowMs);
        });
        this.options.metrics.hooks.inc({ outcome: "interrupted" });
        logger.warn({ hook: row.name, eventId: record.EventId, eventStatus: record.EventStatus, run: row.attempts, next: next.status }, "hook was interrupted by the last stop");
      } else {
        const why = "outcome unknown: the agent ended while the StartRequests POST was in flight; not sent again (the event starts at NotBefore at the latest)";
        ledger.transaction(() => {
          this.options.append([interruptedApprovalRecord(record, this.options.vm(), why, nowMs, agentVersion)]);
          ledger.setStatus(row.actionKey, "interrupted", why, nowMs);
        });
        this.options.metrics.approvals.inc({ outcome: "interrupted" });
        logger.warn({ eventId: record.EventId }, "an approval was in flight when the agent last stopped; its outcome is unknown and it is not sent again");
      }
    }
  }

  private afterHookInterrupted(hook: HookConfig | undefined, row: ActionRow): { status: "pending" | "interrupted"; why: string } {
    if (!hook) return { status: "interrupted", why: "the hook is no longer configured" };
    if (hook.onInterrupted === "skip") return { status: "interrupted", why: "not run again (onInterrupted: skip)" };
    if (row.attempts >= maxHookRuns) return { status: "interrupted", why: `not run again: started ${row.attempts} times (the most)` };
    return { status: "pending", why: "running it again (onInterrupted: rerun)" };
  }

  /** Plans transitions committed after the last planned position (a crash between commit and plan). */
  private catchUp(): void {
    const { ledger, clock, logger } = this.options;
    let seq = ledger.plannedThroughSeq();
    if (seq === undefined) {
      // First start with actions on this data dir: act on what happens from now on, not on the retained backlog.
      ledger.setPlannedThroughSeq(this.options.headSeq());
      return;
    }
    let planned = 0;
    for (;;) {
      const batch = this.options.readAfter(seq, catchUpBatch);
      if (batch.length === 0) break;
      const transitions = batch.flatMap((e) => (e.record.RecordType === "Transition" ? [e.record] : []));
      const lastSeq = batch[batch.length - 1]!.seq;
      ledger.transaction(() => {
        planned += ledger.plan(transitions.flatMap((r) => this.planFor(r)), clock.now());
        ledger.setPlannedThroughSeq(lastSeq);
      });
      seq = lastSeq;
    }
    if (planned > 0) logger.debug({ planned }, "planned actions");
  }

  private async run(): Promise<void> {
    const { clock, ledger, logger } = this.options;
    const stop = this.stopping.signal;
    while (!stop.aborted && !this.options.hasPolled()) await clock.sleep(waitForPollMs, stop).catch(() => undefined);
    while (!stop.aborted) {
      this.wakeUp = new AbortController();
      const row = ledger.nextPending();
      if (!row) {
        await clock.sleep(idleWaitMs, AbortSignal.any([stop, this.wakeUp.signal])).catch(() => undefined);
        continue;
      }
      try {
        if (row.kind === "hook") await this.runHookAction(row);
        else await this.runApprovalAction(row);
        this.errorsByKey.delete(row.actionKey);
      } catch (err) {
        // A store error (or a bad row): pause and try again; after a few tries in a row give the action up as failed.
        const errors = (this.errorsByKey.get(row.actionKey) ?? 0) + 1;
        this.errorsByKey.set(row.actionKey, errors);
        logger.error({ err, action: row.actionKey, errors }, "action could not be carried out");
        if (errors >= maxErrorsPerAction) {
          try {
            if (ledger.get(row.actionKey)?.status === "pending") ledger.setStatus(row.actionKey, "failed", `internal error: ${(err as Error).message}`, clock.now());
            this.errorsByKey.delete(row.actionKey);
          } catch {
            // the store is still failing: the action stays pending
          }
        }
        await clock.sleep(errorPauseMs, stop).catch(() => undefined);
      }
    }
  }

  private async runHookAction(row: ActionRow): Promise<void> {
    const { ledger, clock, logger, metrics, agentVersion } = this.options;
    const hook = this.options.hooks.find((h) => h.name === row.name);
    if (!hook) {
      ledger.setStatus(row.actionKey, "skipped", "the hook is no longer configured", clock.now());
      return;
    }
    const record = JSON.parse(row.recordJson) as TransitionRecord;
    const run = row.attempts + 1;
    ledger.setStatus(row.actionKey, "running", "", clock.now(), true); // durable before the process starts
    const result = await runHook(hook, record, { logger, metrics, clock, agentVersion, signal: this.stopping.signal });
    const nowMs = clock.now();
    if (result.Outcome === "Interrupted") {
      const next = this.afterHookInterrupted(hook, { ...row, attempts: run });
      ledger.transaction(() => {
        this.options.append([interruptedHookRecord(hook.name, record, run, `interrupted: the agent stopped while it ran (run ${run}); ${next.why}`, nowMs, agentVersion)]);
        ledger.setStatus(row.actionKey, next.status, next.why, nowMs);
      });
      return;
    }
    ledger.transaction(() => {
      this.options.append([result]);
      ledger.setStatus(row.actionKey, result.Outcome === "Succeeded" ? "succeeded" : "failed", result.Outcome === "Succeeded" ? "" : result.Detail, nowMs);
    });
  }

  private async runApprovalAction(row: ActionRow): Promise<void> {
    const { ledger, clock, logger, approval } = this.options;
    const record = JSON.parse(row.recordJson) as TransitionRecord;
    const skip = (reason: string): void => {
      ledger.setStatus(row.actionKey, "skipped", reason, clock.now());
      logger.info({ eventId: record.EventId, reason }, "not approving");
    };
    if (approval.mode === "off") return skip("approval is off");
    const current = ledger.committedEventStatus(row.eventKey);
    if (current !== "Scheduled") return skip(current === undefined ? "the event has ended" : `the event is ${current} now`);
    const prepareHooks = ledger.forEvent(row.eventKey, "Scheduled", "hook");
    const prepareHooksSucceeded = prepareHooks.every((h) => h.status === "succeeded");
    const vm = this.options.vm();
    const decision = decideApproval(record, vm.VmName, approval, this.options.legacyApproved?.has(row.eventKey) === true, prepareHooksSucceeded);
    if (!decision.approve) return skip(decision.reason);

    const attempts = this.options.approvalAttempts ?? 3;
    const target = { ...record, reason: decision.reason };
    for (let attempt = row.attempts + 1; !this.stopping.signal.aborted; attempt++) {
      const mode = approval.mode === "dry-run" ? "dry-run" : "on";
      // The intent is durable before anything is sent: a POST found `running` at start-up is never repeated.
      if (mode === "on") ledger.setStatus(row.actionKey, "running", "", clock.now(), true);
      const result = await attemptApproval([target], {
        vm,
        mode,
        postStartRequest: this.options.postStartRequest,
        agentVersion: this.options.agentVersion,
        logger,
        metrics: this.options.metrics,
        clock,
        signal: this.cutOff.signal,
      });
      const nowMs = clock.now();
      const settle = (records: ApprovalRecord[], status: ActionRow["status"], reason: string): void =>
        ledger.transaction(() => {
          this.options.append(records);
          ledger.setStatus(row.actionKey, status, reason, nowMs);
        });
      switch (result.delivery) {
        case "approved":
          return settle(result.records, "approved", "");
        case "dry-run":
          return settle(result.records, "succeeded", "dry-run: would approve");
        case "unknown":
          if (this.cutOff.signal.aborted) {
            const why = "outcome unknown: the agent stopped while the StartRequests POST was in flight; not sent again";
            return settle([interruptedApprovalRecord(record, vm, why, nowMs, this.options.agentVersion)], "interrupted", why);
          }
          return settle(result.records, "failed", result.records[0]?.Detail ?? "outcome unknown");
        case "refused":
        case "not-sent": {
          const last = attempt >= attempts;
          settle(result.records, last ? "failed" : "pending", result.records[0]?.Detail ?? result.delivery);
          if (last) return;
          await clock.sleep((this.options.approvalRetryDelayMs ?? 2000) * attempt, this.stopping.signal).catch(() => undefined);
          if (ledger.committedEventStatus(row.eventKey) !== "Scheduled") return skip("the event is no longer Scheduled");
        }
      }
    }
  }
}
