// Acts on durable transition records, one at a time and off the poll loop: runs the matching hooks, then
// asks the approval policy whether to start a Scheduled event early. Hook and approval records go to the outbox.
import type { Logger } from "pino";
import type { ApprovalRecord, HookRecord, RecordIdentity, TransitionRecord } from "../contract/record.js";
import type { Clock } from "../util/clock.js";
import type { AgentMetrics } from "../observability/metrics.js";
import { decideApproval, type ApprovalPolicy } from "./approval-policy.js";
import { approveEvents, type PostStartRequest } from "./approver.js";
import { runHook, selectHooks, type HookConfig } from "./hooks.js";

export interface ActionRunnerOptions {
  hooks: HookConfig[];
  approval: ApprovalPolicy;
  postStartRequest: PostStartRequest;
  vm: () => RecordIdentity;
  /** Appends records to the outbox (durably) and wakes the sinks. */
  append: (records: Array<HookRecord | ApprovalRecord>) => void;
  /** Events already approved (lower-cased EventId), persisted so a restart never approves twice. */
  approved: { has(eventKey: string): boolean; add(eventKey: string): void };
  clock: Clock;
  logger: Logger;
  metrics: AgentMetrics;
  agentVersion: string;
  /** Attempts for an approval IMDS refused or could not take (network, 5xx). */
  approvalAttempts?: number;
  approvalRetryDelayMs?: number;
}

export class ActionRunner {
  private queue: Promise<void> = Promise.resolve();
  private readonly stopping = new AbortController();

  constructor(private readonly options: ActionRunnerOptions) {}

  /** True when there is anything to do at all (no hooks and approval off: the runner is not needed). */
  static isNeeded(hooks: readonly HookConfig[], approval: ApprovalPolicy): boolean {
    return hooks.length > 0 || approval.mode !== "off";
  }

  /** Queues the records; they are handled in order, one after another. */
  enqueue(records: readonly TransitionRecord[]): void {
    for (const record of records) {
      this.queue = this.queue.then(() => this.handle(record)).catch((err: unknown) => this.options.logger.error({ err }, "action failed"));
    }
  }

  /** Stops running hooks (SIGTERM, then SIGKILL) and waits for the queue to settle. */
  async stop(): Promise<void> {
    this.stopping.abort(new Error("agent stopping"));
    await this.queue;
  }

  private async handle(record: TransitionRecord): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const { logger, metrics, agentVersion, clock } = this.options;
    const hookRecords: HookRecord[] = [];
    for (const hook of selectHooks(this.options.hooks, record)) {
      const result = await runHook(hook, record, { logger, metrics, clock, agentVersion, signal: this.stopping.signal });
      hookRecords.push(result);
      this.options.append([result]);
    }
    if (record.EventStatus === "Scheduled") await this.maybeApprove(record, hookRecords.every((r) => r.Outcome === "Succeeded"));
  }

  private async maybeApprove(record: TransitionRecord, prepareHooksSucceeded: boolean): Promise<void> {
    const { approval, approved, logger } = this.options;
    const key = record.EventId.toLowerCase();
    const vm = this.options.vm();
    const decision = decideApproval(record, vm.VmName, approval, approved.has(key), prepareHooksSucceeded);
    if (!decision.approve) {
      if (approval.mode !== "off") logger.info({ eventId: record.EventId, reason: decision.reason }, "not approving");
      return;
    }
    const attempts = this.options.approvalAttempts ?? 3;
    for (let attempt = 1; attempt <= attempts && !this.stopping.signal.aborted; attempt++) {
      const [result] = await approveEvents([{ ...record, reason: decision.reason }], {
        vm,
        mode: approval.mode === "dry-run" ? "dry-run" : "on",
        postStartRequest: this.options.postStartRequest,
        agentVersion: this.options.agentVersion,
        logger,
        metrics: this.options.metrics,
        clock: this.options.clock,
        signal: this.stopping.signal,
      });
      if (!result) return;
      this.options.append([result]);
      if (result.Outcome !== "Failed") {
        approved.add(key);
        return;
      }
      if (attempt < attempts) await this.options.clock.sleep((this.options.approvalRetryDelayMs ?? 2000) * attempt, this.stopping.signal).catch(() => undefined);
    }
  }
}
