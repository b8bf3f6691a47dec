// The approval action: plans the StartRequests approval of a Scheduled event (when the rules approve it, or when an
// action holding the event may ask for it), waits for the event's holds, then decides and POSTs at most once per
// event (retried only when IMDS refused it or it never left), each attempt an Approval record in the same transaction.
import type { ApprovalRecord, TransitionRecord } from "@sef/contract/record.js";
import type { QueuedAction, ActionContext, ActionRow, PlannedAction } from "../action.js";
import type { Hold } from "../action-ledger.js";
import { decideApproval, type ApprovalDecision, type ApprovalPolicy } from "./policy.js";
import { attemptApproval, interruptedApprovalRecord } from "./approver.js";

/** At a clean stop, an approval POST already in flight gets this long to be answered before it is cut off. */
export const approvalStopGraceMs = 3000;

export interface ApprovalActionOptions {
  policy: ApprovalPolicy;
  context: ActionContext;
  /** POSTs for one approval that IMDS refused or that could not connect (a POST in doubt is never repeated); default 3. */
  attempts?: number;
  /** Wait before the n-th retry: n × this; default 2000. */
  retryDelayMs?: number;
}

export const approvalKey = (eventKey: string): string => `approval:${eventKey}`;

export class ApprovalAction implements QueuedAction {
  readonly kind = "approval";
  readonly runsIn = "queue";

  constructor(private readonly options: ApprovalActionOptions) {}

  /**
   * A Scheduled event gets one approval row, gated by the event's holds: planned when an action holding the event may
   * ask for it (drain-then-approve) or when everything the rules judge before the holds are released says approve.
   */
  plan(record: TransitionRecord): PlannedAction[] {
    if (record.EventStatus !== "Scheduled") return [];
    const { policy, context } = this.options;
    const eventKey = record.EventId.toLowerCase();
    const planned = [
      {
        actionKey: approvalKey(eventKey),
        kind: this.kind,
        eventKey,
        eventStatus: record.EventStatus,
        name: "approval",
        recordJson: JSON.stringify(record),
        gated: true,
      },
    ];
    if (context.ledger.holdsOn(eventKey).some((h) => h.mayApprove && h.verdict === undefined)) return planned;
    if (policy.mode === "off") return [];
    // Everything but the holders' outcome can be judged now; the rest is judged when the approval's turn comes.
    const decision = decideApproval(record, context.vm().VmName, policy, this.alreadyApproved(eventKey), true);
    if (decision.approve) return planned;
    context.logger.info({ eventId: record.EventId, reason: decision.reason }, "not approving");
    return [];
  }

  /** A POST in flight when the agent died: its outcome is unknown, so it is reported Interrupted and never sent again. */
  recover(row: ActionRow): void {
    const { ledger, clock, logger, metrics, agentVersion } = this.options.context;
    const record = JSON.parse(row.recordJson) as TransitionRecord;
    const why =
      "outcome unknown: the agent ended while the StartRequests POST was in flight; not sent again (the event starts at NotBefore at the latest)";
    const nowMs = clock.now();
    ledger.transaction(() => {
      this.options.context.append([
        interruptedApprovalRecord(record, this.options.context.vm(), why, nowMs, agentVersion),
      ]);
      ledger.setStatus(row.actionKey, "interrupted", why, nowMs);
    });
    metrics.approvals.inc({ outcome: "interrupted" });
    logger.warn(
      { eventId: record.EventId },
      "an approval was in flight when the agent last stopped; its outcome is unknown and it is not sent again",
    );
  }

  async run(row: ActionRow, stopping: AbortSignal): Promise<void> {
    const { ledger, clock, logger } = this.options.context;
    const record = JSON.parse(row.recordJson) as TransitionRecord;
    const skip = (reason: string): void => {
      ledger.setStatus(row.actionKey, "skipped", reason, clock.now());
      logger.info({ eventId: record.EventId, reason }, "not approving");
    };
    const holds = ledger.holdsOn(row.eventKey);
    const declined = holds.find((h) => h.verdict === "decline");
    if (declined) return skip(declined.reason || `declined by ${declined.holder}`);
    const asked = holds.find((h) => h.verdict === "approve");
    if (this.options.policy.mode === "off" && !asked) return skip("approval is off");
    const current = ledger.committedEventStatus(row.eventKey);
    if (current !== "Scheduled")
      return skip(current === undefined ? "the event has ended" : `the event is ${current} now`);
    const decision = asked ? this.askedDecision(row, asked, holds) : this.rulesDecision(row, record, holds);
    if (!decision.approve) return skip(decision.reason);
    const cutOff = cutOffAfterGrace(stopping, this.options.context);
    try {
      await this.post(row, record, decision.reason, stopping, cutOff.signal);
    } finally {
      cutOff.dispose();
    }
  }

  private alreadyApproved(eventKey: string): boolean {
    return (
      this.options.context.ledger.legacyApproved(eventKey) ||
      this.options.context.ledger.get(approvalKey(eventKey))?.status === "approved"
    );
  }

  /** By the rules; with `requirePrepareHookSuccess`, every hold (the prepare hooks) must have been released without failing. */
  private rulesDecision(row: ActionRow, record: TransitionRecord, holds: readonly Hold[]): ApprovalDecision {
    const { ledger, vm } = this.options.context;
    const prepareSucceeded = holds.every((h) => h.verdict !== "failed");
    return decideApproval(
      record,
      vm().VmName,
      this.options.policy,
      ledger.legacyApproved(row.eventKey),
      prepareSucceeded,
    );
  }

  /** A holder asked for the approval (drain-then-approve): no rule is needed, even with approval off. */
  private askedDecision(row: ActionRow, asked: Hold, holds: readonly Hold[]): ApprovalDecision {
    if (this.options.context.ledger.legacyApproved(row.eventKey)) return { approve: false, reason: "already approved" };
    if (this.options.policy.requirePrepareHookSuccess && holds.some((h) => h.verdict === "failed")) {
      return {
        approve: false,
        reason: `${asked.reason || "asked for"}, but a prepare hook did not succeed (requirePrepareHookSuccess)`,
      };
    }
    return { approve: true, reason: asked.reason || `asked for by ${asked.holder}` };
  }

  /** The POST, its Approval record and the row's new state; the intent is durable before anything is sent. */
  private async post(
    row: ActionRow,
    record: TransitionRecord,
    reason: string,
    stopping: AbortSignal,
    cutOff: AbortSignal,
  ): Promise<void> {
    const { ledger, clock, logger, metrics, agentVersion, postStartRequest } = this.options.context;
    const attempts = this.options.attempts ?? 3;
    const target = { ...record, reason };
    const vm = this.options.context.vm();
    for (let attempt = row.attempts + 1; !stopping.aborted; attempt++) {
      const mode = this.options.policy.mode === "dry-run" ? "dry-run" : "on"; // asked for with approval off: still approves
      // A POST found `running` at start-up is never repeated.
      if (mode === "on") ledger.setStatus(row.actionKey, "running", "", clock.now(), true);
      const result = await attemptApproval([target], {
        vm,
        mode,
        postStartRequest,
        agentVersion,
        logger,
        metrics,
        clock,
        signal: cutOff,
      });
      const nowMs = clock.now();
      const settle = (records: ApprovalRecord[], status: ActionRow["status"], why: string): void =>
        ledger.transaction(() => {
          this.options.context.append(records);
          ledger.setStatus(row.actionKey, status, why, nowMs);
        });
      switch (result.delivery) {
        case "approved":
          return settle(result.records, "approved", "");
        case "dry-run":
          return settle(result.records, "succeeded", "dry-run: would approve");
        case "unknown":
          if (cutOff.aborted) {
            const why = "outcome unknown: the agent stopped while the StartRequests POST was in flight; not sent again";
            return settle([interruptedApprovalRecord(record, vm, why, nowMs, agentVersion)], "interrupted", why);
          }
          return settle(result.records, "failed", result.records[0]?.Detail ?? "outcome unknown");
        case "refused":
        case "not-sent": {
          const last = attempt >= attempts;
          settle(result.records, last ? "failed" : "pending", result.records[0]?.Detail ?? result.delivery);
          if (last) return;
          await clock.sleep((this.options.retryDelayMs ?? 2000) * attempt, stopping).catch(() => undefined);
          if (ledger.committedEventStatus(row.eventKey) !== "Scheduled") {
            const why = "the event is no longer Scheduled";
            ledger.setStatus(row.actionKey, "skipped", why, clock.now());
            logger.info({ eventId: record.EventId, reason: why }, "not approving");
            return;
          }
        }
      }
    }
  }
}

/** A signal that aborts `approvalStopGraceMs` after `stopping` does (a POST in flight gets that long to be answered). */
function cutOffAfterGrace(
  stopping: AbortSignal,
  { clock }: Pick<ActionContext, "clock">,
): { signal: AbortSignal; dispose(): void } {
  const cutOff = new AbortController();
  const disposed = new AbortController();
  const onStop = (): void => {
    clock.sleep(approvalStopGraceMs, disposed.signal).then(
      () => cutOff.abort(new Error("agent stopping")),
      () => undefined,
    );
  };
  if (stopping.aborted) onStop();
  else stopping.addEventListener("abort", onStop, { once: true });
  return {
    signal: cutOff.signal,
    dispose: () => {
      disposed.abort();
      stopping.removeEventListener("abort", onStop);
    },
  };
}
