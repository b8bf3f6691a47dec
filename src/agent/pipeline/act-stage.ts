// Act stage: the actions (hooks, approvals, the kubernetes node action) of committed transitions. Follows the
// records-committed signal and has the action runner (actions/action-runner.ts) plan and run them; the runner's and
// the node action's own records go through the commit stage. The kubernetes action's module (and its client) is
// loaded only when its section is configured, in `prepare`.
import type { AgentConfig } from "../config/schema.js";
import type { Store } from "../store/store.js";
import type { Outbox } from "../delivery/outbox.js";
import { ActionLedger } from "../actions/action-ledger.js";
import { ActionRunner, type ActionRunnerOptions, type NodeActionPlanner } from "../actions/action-runner.js";
import type { CommitStage } from "./commit-stage.js";

export interface ActStageOptions extends Pick<ActionRunnerOptions, "postStartRequest" | "vm" | "hasPolled" | "clock" | "logger" | "metrics" | "agentVersion"> {
  config: Pick<AgentConfig, "hooks" | "approval" | "kubernetes">;
  store: Store;
  outbox: Outbox;
  commit: CommitStage;
  /** Where the kubernetes action reads NODE_NAME, POD_NAME and POD_NAMESPACE (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

/** The node action as the act stage drives it: planned by the runner, started and stopped with the stage. */
type NodeActions = NodeActionPlanner & { start(): void; stop(): Promise<void> };

export class ActStage {
  private readonly ledger: ActionLedger;
  /** Undefined when nothing is configured (or, with the kubernetes action, until `prepare`). */
  private runner: ActionRunner | undefined;
  private nodeActions: NodeActions | undefined;

  constructor(private readonly options: ActStageOptions) {
    const { config, commit } = options;
    this.ledger = ActionLedger.open(options.store);
    if (config.kubernetes === undefined && ActionRunner.isNeeded(config.hooks, config.approval)) this.runner = this.createRunner();
    commit.committed.follow((entries) => {
      if (entries.some((e) => e.record.RecordType === "Transition")) this.planCommitted();
    });
  }

  /** Loads the kubernetes action when its section is configured (nothing otherwise); before `start`. */
  async prepare(): Promise<void> {
    const { config, commit, metrics } = this.options;
    if (config.kubernetes === undefined || this.nodeActions !== undefined) return;
    const { createNodeActions } = await import("../actions/kubernetes/start.js");
    this.nodeActions = createNodeActions(config.kubernetes, {
      env: this.options.env ?? process.env,
      ledger: this.ledger,
      append: (records) => {
        commit.append(records);
      },
      vm: this.options.vm,
      planApproval: (record, how) => this.runner?.planApproval(record, how),
      hasPolled: this.options.hasPolled,
      registry: metrics.registry,
      clock: this.options.clock,
      logger: this.options.logger,
      agentVersion: this.options.agentVersion,
    });
    this.runner = this.createRunner(this.nodeActions);
  }

  /** Settles what the last run left and starts working through pending actions. */
  start(): void {
    if (this.options.config.kubernetes !== undefined && this.nodeActions === undefined) throw new Error("the act stage starts after prepare() (the kubernetes action is not loaded)");
    if (this.runner) this.runner.start();
    else this.planCommitted();
    this.nodeActions?.start();
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
    await this.nodeActions?.stop();
  }

  private createRunner(kubernetes?: NodeActionPlanner): ActionRunner {
    const { config, outbox, commit } = this.options;
    return new ActionRunner({
      hooks: config.hooks,
      approval: config.approval,
      postStartRequest: this.options.postStartRequest,
      vm: this.options.vm,
      ledger: this.ledger,
      append: (records) => {
        commit.append(records);
      },
      readAfter: (seq, limit) => outbox.readAfter(seq, limit),
      headSeq: () => outbox.headSeq(),
      hasPolled: this.options.hasPolled,
      clock: this.options.clock,
      logger: this.options.logger,
      metrics: this.options.metrics,
      agentVersion: this.options.agentVersion,
      ...(kubernetes ? { kubernetes } : {}),
    });
  }

  private planCommitted(): void {
    if (this.runner) this.runner.planCommitted();
    // No actions configured: keep the planned position at the head, so actions configured later start from then.
    else this.ledger.setPlannedThroughSeq(this.options.outbox.headSeq());
  }
}
