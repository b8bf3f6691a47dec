// The contract between the action runner and an action (as sinks/sink.ts is for sinks): an action plans rows of the
// action ledger from committed Transition records, runs them (in the runner's shared queue or its own worker), settles
// rows a dead process left `running`, and holds an event's approval until it releases it. The runner
// (action-runner.ts) owns planning, the queue, recovery order and shutdown; the registry (registry.ts) the entries.
import type { Logger } from "pino";
import type { RecordIdentity, SefRecord, TransitionRecord } from "@sef/contract/record.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { OutboxEntry } from "../delivery/outbox-entry.js";
import type { PluginEntry } from "../plugin-entry.js";
import type { ActionLedger, ActionRow, HoldRequest, HoldVerdict, PlannedAction } from "./action-ledger.js";

export type { ActionRow, HoldRequest, HoldVerdict, PlannedAction } from "./action-ledger.js";
export type { PluginRulesInput } from "../plugin-entry.js";

/** IMDS's answer to a StartRequests POST. */
export interface StartRequestResponse {
  status: number;
  body: string;
}

/** Sends `{"StartRequests":[{"EventId":…},…]}` to IMDS; resolves with the HTTP answer, rejects on network failure or timeout. */
export type PostStartRequest = (eventIds: readonly string[], signal?: AbortSignal) => Promise<StartRequestResponse>;

/** What an action gets from the agent when its entry creates it. */
export interface ActionContext {
  /** The action ledger: an action reads and writes the rows of its own kind, its steps and the holds it placed. */
  readonly ledger: ActionLedger;
  /** Appends records to the outbox (durable; the sinks are woken). Inside `ledger.transaction` the records commit with the new state. */
  readonly append: (records: readonly SefRecord[]) => void;
  /**
   * Releases the hold `holder` put on an event (see `Action.holdsFor`) and wakes the runner, so that an action waiting
   * for the event's holds (the approval) runs. Idempotent; joins a transaction the caller holds.
   */
  readonly release: (eventKey: string, holder: string, verdict: HoldVerdict, reason: string) => void;
  /** Wakes the runner's queue (it also wakes at every commit and when a row finishes). */
  readonly wake: () => void;
  /** The VM identity and AgentId, as records carry them. */
  readonly vm: () => RecordIdentity;
  /** True once this process has read IMDS: actions wait for a current view of the events. */
  readonly hasPolled: () => boolean;
  /** The agent's IMDS StartRequests POST (rate-limited, through its IMDS client). */
  readonly postStartRequest: PostStartRequest;
  /** The agent's environment (NODE_NAME, POD_NAME, …). */
  readonly env: NodeJS.ProcessEnv;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The agent's metrics; an action registers metrics of its own on `metrics.registry` when it is created. */
  readonly metrics: AgentMetrics;
  readonly agentVersion: string;
}

/** What every action does, whichever way its rows are run. */
interface ActionBase {
  /** The `kind` of its rows in the action ledger (its entry's `kind`). */
  readonly kind: string;
  /**
   * Holds this action puts on the event of a committed transition, placed before any action plans for it: the
   * event's approval waits until each holder releases its hold (`ActionContext.release`) with a verdict. Called inside
   * the planning transaction; a hold already placed for (event, holder) is left as it is.
   */
  holdsFor?(record: TransitionRecord): HoldRequest[];
  /**
   * Rows to plan for a committed transition (after every action's holds for it are placed; the ledger shows them).
   * Called inside the planning transaction, once per transition; a row whose key is already planned is left as it is.
   */
  plan(record: TransitionRecord): PlannedAction[];
  /**
   * Records committed: each durable batch that holds a Transition, after the runner planned it (a worker wakes up and
   * looks at its rows; a batch of the actions' own records is not announced).
   */
  committed?(entries: readonly OutboxEntry[]): void;
  /**
   * A document was read from IMDS (each successful poll, after its transitions were committed and planned; never for
   * a failed poll): the EventIds it lists, every status. An action that leaves marks in the world (the kubernetes
   * action's on its Node) compares them with it. Called on the poll's path: note it and wake a worker, never do I/O.
   */
  documentRead?(eventIds: readonly string[]): void;
}

/**
 * An action whose rows the runner's shared queue runs: one row at a time across all such actions, oldest planned
 * first, a `gated` row only once its event holds nothing (the hooks, the approval).
 */
export interface QueuedAction extends ActionBase {
  readonly runsIn: "queue";
  /**
   * Carries out one pending row of its kind. Sets the row's status (and writes its records, in one transaction).
   * `stopping` aborts when the agent stops: stop at the next safe point, leave the row resumable. A throw is a store
   * error: the row is tried again, and after three throws in a row marked failed.
   */
  run(row: ActionRow, stopping: AbortSignal): Promise<void>;
  /** A row of its kind found `running` at start-up (the agent died or stopped while it ran): settle it (its record, its next status). */
  recover(row: ActionRow): void;
}

/**
 * An action that works its rows in a worker of its own (the kubernetes action): it resumes rows a dead process left
 * `running` itself.
 */
export interface WorkerAction extends ActionBase {
  readonly runsIn: "worker";
  /** Starts its worker, after recovery and planning. */
  start(): void;
  /** Stops its worker (bounded; called once, after the queue stopped). */
  stop(): Promise<void>;
}

/**
 * One action, made by its entry when the agent has actions to run: one of two kinds, told apart by `runsIn`. Every
 * method is called by the runner; planning, recovery and the queue's `run` happen one at a time.
 */
export type Action = QueuedAction | WorkerAction;

/** An action's entry in the registry (actions/all.ts): the plug-in shape every sink and action shares, and how it is made. */
export interface ActionEntry<Settings = unknown> extends PluginEntry<Settings> {
  /** The `kind` of its rows in the action ledger (stored: never change it for an existing action). */
  readonly kind: string;
  /** Whether these settings ask for anything to be done (when no entry is on, the agent runs no actions at all). */
  isOn(settings: Settings): boolean;
  /**
   * Makes the action when the agent runs actions (some entry is on), or undefined when this one has nothing to do.
   * Called whether or not its own section is on, so that it can serve other actions (the approval approves what a
   * holder asks for). Light entries import their action's module here (`await import`), so an agent that does not
   * need it never loads it.
   */
  create(settings: Settings, context: ActionContext): Action | undefined | Promise<Action | undefined>;
}
