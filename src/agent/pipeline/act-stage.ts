// Act stage: the actions (hooks, approvals) of committed transitions. Follows the records-committed signal and has the
// action runner (actions/action-runner.ts) plan and run them; the runner's own records go through the commit stage.
import type { AgentConfig } from "../config/schema.js";
import type { Store } from "../store/store.js";
import type { Outbox } from "../delivery/outbox.js";
import { ActionLedger } from "../actions/action-ledger.js";
import { ActionRunner, type ActionRunnerOptions } from "../actions/action-runner.js";
import type { CommitStage } from "./commit-stage.js";

export interface ActStageOptions extends Pick<ActionRunnerOptions, "postStartRequest" | "vm" | "hasPolled" | "clock" | "logger" | "metrics" | "agentVersion"> {
  config: Pick<AgentConfig, "hooks" | "approval">;
  store: Store;
  outbox: Outbox;
  commit: CommitStage;
}

export class ActStage {
  private readonly ledger: ActionLedger;
  /** Undefined when no hook and no approval is configured. */
  private readonly runner: ActionRunner | undefined;

  constructor(private readonly options: ActStageOptions) {
    const { config, outbox, commit } = options;
    this.ledger = ActionLedger.open(options.store);
    if (ActionRunner.isNeeded(config.hooks, config.approval)) {
      this.runner = new ActionRunner({
        hooks: config.hooks,
        approval: config.approval,
        postStartRequest: options.postStartRequest,
        vm: options.vm,
        ledger: this.ledger,
        append: (records) => {
          commit.append(records);
        },
        readAfter: (seq, limit) => outbox.readAfter(seq, limit),
        headSeq: () => outbox.headSeq(),
        hasPolled: options.hasPolled,
        clock: options.clock,
        logger: options.logger,
        metrics: options.metrics,
        agentVersion: options.agentVersion,
      });
    }
    commit.committed.follow((entries) => {
      if (entries.some((e) => e.record.RecordType === "Transition")) this.planCommitted();
    });
  }

  /** Settles what the last run left and starts working through pending actions. */
  start(): void {
    if (this.runner) this.runner.start();
    else this.planCommitted();
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
  }

  private planCommitted(): void {
    if (this.runner) this.runner.planCommitted();
    // No actions configured: keep the planned position at the head, so actions configured later start from then.
    else this.ledger.setPlannedThroughSeq(this.options.outbox.headSeq());
  }
}
