// Act stage: the actions of committed transitions, one per entry of the action registry (actions/all.ts). Follows the
// records-committed and document-read signals and has the action runner (actions/action-runner.ts) plan and run them; the actions'
// records go through the commit stage. The actions are made in `prepare`, and only when some entry's section is on:
// an entry loads its module only then (the kubernetes action's client only when its section is configured).
import type { AgentConfig } from "../config/schema.js";
import { actionSection } from "../config/schema.js";
import type { Store } from "../store/store.js";
import type { Outbox } from "../delivery/outbox.js";
import type { OutboxEntry } from "../delivery/outbox-entry.js";
import type { Action, ActionContext } from "../actions/action.js";
import { ActionLedger } from "../actions/action-ledger.js";
import { ActionRunner } from "../actions/action-runner.js";
import { actionEntryList } from "../actions/registry.js";
import type { CommitStage } from "./commit-stage.js";
import type { DocumentsRead } from "./documents-read.js";

export interface ActStageOptions extends Pick<
  ActionContext,
  "postStartRequest" | "vm" | "hasPolled" | "clock" | "logger" | "metrics" | "agentVersion"
> {
  /** The configuration: each action reads its own section. */
  config: AgentConfig;
  store: Store;
  outbox: Outbox;
  commit: CommitStage;
  /** The document-read signal (the EventIds of each document read): passed on to the actions. */
  documentsRead?: DocumentsRead;
  /** The environment actions read (the kubernetes action: NODE_NAME, POD_NAME, POD_NAMESPACE; default: process.env). */
  env?: NodeJS.ProcessEnv;
}

export class ActStage {
  private readonly ledger: ActionLedger;
  /** Some action's section asks for something: the actions are made in `prepare` and run. */
  private readonly actionsOn: boolean;
  /** Undefined when no action is on, and until `prepare`. */
  private runner: ActionRunner | undefined;

  constructor(private readonly options: ActStageOptions) {
    const { config, commit } = options;
    this.ledger = ActionLedger.open(options.store);
    this.actionsOn = actionEntryList.some((entry) => entry.isOn(actionSection(config, entry.section)));
    commit.committed.follow((entries) => {
      if (entries.some((e) => e.record.RecordType === "Transition")) this.planCommitted(entries);
    });
    options.documentsRead?.follow((eventIds) => this.runner?.documentRead(eventIds));
  }

  /** Makes the actions when some action is on (nothing is loaded otherwise); before `start`. */
  async prepare(): Promise<void> {
    if (!this.actionsOn || this.runner !== undefined) return;
    const { config, outbox, clock, logger } = this.options;
    const context = this.context();
    const made = await Promise.all(
      actionEntryList.map((entry) => entry.create(actionSection(config, entry.section), context)),
    );
    const actions = made.filter((action): action is Action => action !== undefined);
    this.runner = new ActionRunner({
      actions,
      ledger: this.ledger,
      readAfter: (seq, limit) => outbox.readAfter(seq, limit),
      headSeq: () => outbox.headSeq(),
      hasPolled: this.options.hasPolled,
      clock,
      logger,
    });
  }

  /** Settles what the last run left and starts working through pending actions. */
  start(): void {
    if (this.actionsOn && this.runner === undefined)
      throw new Error("the act stage starts after prepare() (the actions are not made yet)");
    if (this.runner) this.runner.start();
    else this.planCommitted([]);
  }

  async stop(): Promise<void> {
    await this.runner?.stop();
  }

  /** What every action gets from the agent. */
  private context(): ActionContext {
    const { commit, clock } = this.options;
    const ledger = this.ledger;
    return {
      ledger,
      append: (records) => {
        commit.append(records);
      },
      release: (eventKey, holder, verdict, reason) => {
        ledger.release(eventKey, holder, verdict, reason, clock.now());
        this.runner?.wake();
      },
      wake: () => this.runner?.wake(),
      vm: this.options.vm,
      hasPolled: this.options.hasPolled,
      postStartRequest: this.options.postStartRequest,
      env: this.options.env ?? process.env,
      clock,
      logger: this.options.logger,
      metrics: this.options.metrics,
      agentVersion: this.options.agentVersion,
    };
  }

  private planCommitted(entries: readonly OutboxEntry[]): void {
    if (this.runner) this.runner.planCommitted(entries);
    // No action on: keep the planned position at the head, so actions configured later start from then.
    else if (!this.actionsOn) this.ledger.setPlannedThroughSeq(this.options.outbox.headSeq());
  }
}
