// The hooks action: plans one row per hook a committed transition selects, runs them in the runner's queue (one at a
// time, in plan order), and reports runs cut off by a stop or a crash as Interrupted (then re-run or left, per hook).
// A hook on Scheduled holds its event's approval until it finishes (`requirePrepareHookSuccess` reads the verdict).
import type { TransitionRecord } from "@sef/contract/record.js";
import type { QueuedAction, ActionContext, ActionRow, HoldRequest, PlannedAction } from "../action.js";
import { interruptedHookRecord, runHook, selectHooks, type HookConfig } from "./hooks.js";

/** A hook with `onInterrupted: "rerun"` is started at most this many times in all. */
export const maxHookRuns = 3;

const hookKey = (record: TransitionRecord, hookName: string): string =>
  `hook:${record.EventId.toLowerCase()}:${record.EventStatus}:${hookName}`;

export class HooksAction implements QueuedAction {
  readonly kind = "hook";
  readonly runsIn = "queue";

  constructor(
    private readonly hooks: readonly HookConfig[],
    private readonly context: ActionContext,
  ) {}

  /** Each hook on a Scheduled transition holds the event's approval until it finishes. */
  holdsFor(record: TransitionRecord): HoldRequest[] {
    if (record.EventStatus !== "Scheduled") return [];
    return selectHooks(this.hooks, record).map((hook) => ({ holder: hookKey(record, hook.name) }));
  }

  plan(record: TransitionRecord): PlannedAction[] {
    const eventKey = record.EventId.toLowerCase();
    const recordJson = JSON.stringify(record);
    return selectHooks(this.hooks, record).map((hook) => ({
      actionKey: hookKey(record, hook.name),
      kind: this.kind,
      eventKey,
      eventStatus: record.EventStatus,
      name: hook.name,
      recordJson,
    }));
  }

  /** A hook found `running`: reported once (Interrupted), then re-run or left per its `onInterrupted`. */
  recover(row: ActionRow): void {
    const { clock, logger, metrics } = this.context;
    const record = JSON.parse(row.recordJson) as TransitionRecord;
    const next = this.afterInterrupted(
      this.hooks.find((h) => h.name === row.name),
      row.attempts,
    );
    this.settleInterrupted(
      row.name,
      row,
      record,
      `interrupted: the agent ended while it ran (run ${row.attempts}); ${next.why}`,
      row.attempts,
      next,
      clock.now(),
    );
    metrics.hooks.inc({ outcome: "interrupted" });
    logger.warn(
      {
        hook: row.name,
        eventId: record.EventId,
        eventStatus: record.EventStatus,
        run: row.attempts,
        next: next.status,
      },
      "hook was interrupted by the last stop",
    );
  }

  async run(row: ActionRow, stopping: AbortSignal): Promise<void> {
    const { ledger, clock, logger, metrics, agentVersion } = this.context;
    const hook = this.hooks.find((h) => h.name === row.name);
    if (!hook) {
      ledger.setStatus(row.actionKey, "skipped", "the hook is no longer configured", clock.now());
      return;
    }
    const record = JSON.parse(row.recordJson) as TransitionRecord;
    const run = row.attempts + 1;
    ledger.setStatus(row.actionKey, "running", "", clock.now(), true); // durable before the process starts
    const result = await runHook(hook, record, { logger, metrics, clock, agentVersion, signal: stopping });
    const nowMs = clock.now();
    if (result.Outcome === "Interrupted") {
      const next = this.afterInterrupted(hook, run);
      this.settleInterrupted(
        hook.name,
        row,
        record,
        `interrupted: the agent stopped while it ran (run ${run}); ${next.why}`,
        run,
        next,
        nowMs,
      );
      return;
    }
    ledger.transaction(() => {
      this.context.append([result]);
      ledger.setStatus(
        row.actionKey,
        result.Outcome === "Succeeded" ? "succeeded" : "failed",
        result.Outcome === "Succeeded" ? "" : result.Detail,
        nowMs,
      );
    });
  }

  /** The Interrupted record of run `run` and the row's next status, in one transaction. */
  private settleInterrupted(
    name: string,
    row: ActionRow,
    record: TransitionRecord,
    detail: string,
    run: number,
    next: { status: "pending" | "interrupted"; why: string },
    nowMs: number,
  ): void {
    const { ledger, agentVersion } = this.context;
    ledger.transaction(() => {
      this.context.append([interruptedHookRecord(name, record, run, detail, nowMs, agentVersion)]);
      ledger.setStatus(row.actionKey, next.status, next.why, nowMs);
    });
  }

  private afterInterrupted(
    hook: HookConfig | undefined,
    runs: number,
  ): { status: "pending" | "interrupted"; why: string } {
    if (!hook) return { status: "interrupted", why: "the hook is no longer configured" };
    if (hook.onInterrupted === "skip") return { status: "interrupted", why: "not run again (onInterrupted: skip)" };
    if (runs >= maxHookRuns) return { status: "interrupted", why: `not run again: started ${runs} times (the most)` };
    return { status: "pending", why: "running it again (onInterrupted: rerun)" };
  }
}
