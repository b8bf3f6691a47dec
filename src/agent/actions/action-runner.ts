// Acts on durable transition records as a consumer of the action ledger, for every action the registry made: plans
// their rows the moment a transition commits (each action's holds first, then its rows), runs the rows of the actions
// that share the queue one at a time off the poll loop, lets the others run their own workers, and has each action
// settle the rows a dead process left `running`. It knows the actions only through action.ts.
import type { Logger } from "pino";
import type { SefRecord, TransitionRecord } from "@sef/contract/record.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { OutboxEntry } from "../delivery/outbox-entry.js";
import type { Action, QueuedAction } from "./action.js";
import type { ActionLedger, ActionRow, PlannedAction } from "./action-ledger.js";

/** Finished actions are kept this long (so a transition still in the outbox is never planned twice). */
export const finishedActionRetentionMs = 30 * 24 * 3600_000;
const idleWaitMs = 60_000;
const errorPauseMs = 5000;
const maxErrorsPerAction = 3;
const waitForPollMs = 100;
const catchUpBatch = 500;

export interface ActionRunnerOptions {
  /** The actions the registry made, in registry order (the order they plan and stop in). */
  actions: readonly Action[];
  /** The persisted action state (the store's action ledger). */
  ledger: ActionLedger;
  /** Outbox records after a position, oldest first (to plan transitions a crash left unplanned). */
  readAfter: (seq: number, limit: number) => Array<{ seq: number; record: SefRecord }>;
  headSeq: () => number;
  /** True once this process has read IMDS: the queue waits for a current view of the events. */
  hasPolled: () => boolean;
  clock: Clock;
  logger: Logger;
}

export class ActionRunner {
  private readonly stopping = new AbortController();
  private wakeUp = new AbortController();
  private readonly errorsByKey = new Map<string, number>();
  private loop: Promise<void> | undefined;
  /** The actions whose rows the shared queue runs, by kind. */
  private readonly queued: ReadonlyMap<string, QueuedAction>;

  constructor(private readonly options: ActionRunnerOptions) {
    this.queued = new Map(options.actions.flatMap((a) => (a.runsIn === "queue" ? [[a.kind, a] as const] : [])));
  }

  /**
   * Settles what the last run left behind (each action's rows found `running`), plans transitions committed but not
   * planned before a crash, then works through pending rows in the background and starts the actions' own workers.
   */
  start(): void {
    this.recoverInterrupted();
    this.catchUp();
    this.options.ledger.forgetFinished(this.options.clock.now() - finishedActionRetentionMs);
    if (this.queued.size > 0)
      this.loop = this.run().catch((err: unknown) => this.options.logger.error({ err }, "action runner failed"));
    for (const action of this.options.actions) if (action.runsIn === "worker") action.start();
  }

  /**
   * Called right after records committed: plans the actions of the transitions past the planned position
   * synchronously (read back from the outbox, so nothing is held only in memory and a plan that failed earlier, on a
   * store error, is made up here too), then wakes the queue and tells every action.
   */
  planCommitted(entries: readonly OutboxEntry[] = []): void {
    try {
      this.catchUp();
    } catch (err) {
      // Not lost: the records stay in the outbox past the planned position; the next commit or start plans them.
      this.options.logger.error(
        { err },
        "could not record planned actions; trying again at the next transition or start",
      );
    }
    this.wake();
    for (const action of this.options.actions) action.committed?.(entries);
  }

  /**
   * A document was read (after its transitions were planned): every action hears which EventIds IMDS lists now. A
   * failing action is logged; the others still hear of it.
   */
  documentRead(eventIds: readonly string[]): void {
    for (const action of this.options.actions) {
      try {
        action.documentRead?.(eventIds);
      } catch (err) {
        this.options.logger.error({ err, action: action.kind }, "an action failed to take a document read");
      }
    }
  }

  /** Wakes the queue (a row became due: planned, or its event's last hold was released). */
  wake(): void {
    this.wakeUp.abort();
  }

  /** Stops the queue (the row being run stops at its next safe point), then each action's worker. */
  async stop(): Promise<void> {
    this.stopping.abort(new Error("agent stopping"));
    await this.loop;
    for (const action of this.options.actions) if (action.runsIn === "worker") await action.stop();
  }

  /** Every action's holds on the transition's event, then every action's rows for it. */
  private planFor(record: TransitionRecord): PlannedAction[] {
    const { actions, ledger, clock } = this.options;
    const eventKey = record.EventId.toLowerCase();
    for (const action of actions)
      for (const hold of action.holdsFor?.(record) ?? []) ledger.hold(eventKey, hold, clock.now());
    return actions.flatMap((action) => action.plan(record));
  }

  /** Rows a dead process left `running`: the queued action of their kind settles each (a worker resumes its own). */
  private recoverInterrupted(): void {
    for (const row of this.options.ledger.withStatus("running")) this.queued.get(row.kind)?.recover(row);
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
        for (const record of transitions) planned += ledger.plan(this.planFor(record), clock.now());
        ledger.setPlannedThroughSeq(lastSeq);
      });
      seq = lastSeq;
    }
    if (planned > 0) logger.debug({ planned }, "planned actions");
  }

  private async run(): Promise<void> {
    const { clock, ledger } = this.options;
    const stop = this.stopping.signal;
    const kinds = [...this.queued.keys()];
    while (!stop.aborted && !this.options.hasPolled()) await clock.sleep(waitForPollMs, stop).catch(() => undefined);
    while (!stop.aborted) {
      this.wakeUp = new AbortController();
      const row = ledger.nextPending(kinds);
      if (!row) {
        await clock.sleep(idleWaitMs, AbortSignal.any([stop, this.wakeUp.signal])).catch(() => undefined);
        continue;
      }
      try {
        await this.queued.get(row.kind)!.run(row, stop);
        this.errorsByKey.delete(row.actionKey);
      } catch (err) {
        await this.afterError(row, err);
      }
    }
  }

  /** A store error (or a bad row): pause and try again; after a few tries in a row give the action up as failed. */
  private async afterError(row: ActionRow, err: unknown): Promise<void> {
    const { clock, ledger, logger } = this.options;
    const errors = (this.errorsByKey.get(row.actionKey) ?? 0) + 1;
    this.errorsByKey.set(row.actionKey, errors);
    logger.error({ err, action: row.actionKey, errors }, "action could not be carried out");
    if (errors >= maxErrorsPerAction) {
      try {
        if (ledger.get(row.actionKey)?.status === "pending")
          ledger.setStatus(row.actionKey, "failed", `internal error: ${(err as Error).message}`, clock.now());
        this.errorsByKey.delete(row.actionKey);
      } catch {
        // the store is still failing: the action stays pending
      }
    }
    await clock.sleep(errorPauseMs, this.stopping.signal).catch(() => undefined);
  }
}
