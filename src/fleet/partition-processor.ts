// One owned partition: folds its records into fleet events, claims the notifications due and saves both (a second
// holder of the partition sees the claims and does not send them too; the checkpoint may then move), sends them with
// bounded retries while later batches are folded (then dead-letters with the reason), and saves each outcome.
import type { Logger } from "pino";
import { eventKeyOf, foldRecord, isEnded, type FleetEvent, type PagedField } from "./fleet-event.js";
import {
  afterDelivery,
  emptyNotificationState,
  nextSequence,
  notificationIdempotencyKey,
  planNotifications,
  type NotificationAction,
  type NotificationState,
} from "./notification-plan.js";
import {
  changesBetween,
  OwnershipLostError,
  ownEvent,
  ownPartitionState,
  workingCopy,
  type PartitionState,
  type PartitionStateStore,
} from "./partition-state.js";
import { quoted, readRecord, type FleetTransition, type RecordInput } from "./record-input.js";
import { partitionIndexForKey } from "@sef/contract/partition-hash.js";
import {
  defaultPartitionBounds,
  KnownReporters,
  PartitionBounds,
  type Admission,
  type PartitionBoundsSettings,
} from "./partition-bounds.js";
import { dictOf, own } from "./safe-dict.js";
import { selectTargets, type Rule } from "./rules.js";
import type { DeliveryOutcome } from "./targets/deliver.js";
import type { FleetMetrics, recordOutcomes } from "./metrics.js";
import type { RetryPolicy } from "@sef/retry/policy.js";
import { retryAttempts } from "@sef/retry/retry.js";

/** One received event, as much of it as the processor needs. */
export interface ReceivedEvent {
  readonly body: unknown;
  readonly sequenceNumber: number;
  readonly offset: string;
}

/** What identifies one notification to its target: the same for every attempt and every re-send of it. */
export interface NotificationIdentity {
  readonly action: NotificationAction;
  /** `Idempotency-Key` of the generic webhook: one per (event, target, action, sequence). */
  readonly idempotencyKey: string;
  /**
   * A VM that reported the event is a known reporter (`KnownReporters`): its trigger goes ahead of the triggers of events
   * only invented (new) reporters opened when a target's sends queue up (a flood).
   */
  readonly knownReporter: boolean;
}

/**
 * Sends one notification once (the processor owns retries). `requestSignal` cuts off a request already sent; `startSignal` only stops one that has not
 * started yet (waiting for a free slot to its target): it then answers a retry without sending anything.
 */
export type SendNotification = (
  target: string,
  notification: NotificationIdentity,
  event: FleetEvent,
  requestSignal: AbortSignal,
  startSignal: AbortSignal,
) => Promise<DeliveryOutcome>;

export interface ProcessorClock {
  /** Wall clock, for stamps and NotBefore arithmetic. */
  nowMs(): number;
  /** Monotonic clock, for backoff and give-up deadlines. */
  monotonicMs(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export interface ProcessorOptions {
  readonly partitionId: string;
  /**
   * Where this partition sits among the hub's: a record whose EventId (its partition key) hashes to another partition
   * was placed there by its sender, not by Event Hubs, and is dropped. Absent: not checked.
   */
  readonly placement?: { readonly index: number; readonly count: number };
  readonly rules: readonly Rule[];
  readonly updateIntervalMs: number;
  /** A claim older than this was left by a dead instance and is sent again (use the ownership expiry). */
  readonly staleClaimMs: number;
  /** Events that ended before anyone was told are still reported if they ended at most this long ago. */
  readonly lateNoticeMs: number;
  readonly retry: { readonly minDelayMs: number; readonly maxDelayMs: number; readonly giveUpAfterMs: number };
  readonly retainEndedMs: number;
  /** What one partition takes in (default `defaultPartitionBounds`). */
  readonly bounds?: PartitionBoundsSettings;
  /** The instance's known reporters, shared by its partitions (default: this partition's own). */
  readonly knownReporters?: KnownReporters;
  readonly store: PartitionStateStore;
  readonly send: SendNotification;
  readonly onDeadLetter?: (
    target: string,
    action: NotificationAction,
    event: FleetEvent,
    reason: string,
  ) => Promise<void>;
  readonly clock: ProcessorClock;
  readonly logger: Logger;
  readonly metrics: FleetMetrics;
  /**
   * Aborted when the partition is closed (ownership lost or shutdown): no new attempt starts and retry waits end. A
   * request already sent is not cut off by it — its answer is awaited (within the request deadline) and saved, so the
   * next owner finds the notification done instead of a claim it must re-send in doubt.
   */
  readonly signal: AbortSignal;
  /** Aborts requests already sent: only when the service gives up waiting for them (its stop deadline). */
  readonly requestSignal?: AbortSignal;
}

/** The retry policy of notifications (@sef/retry's formula) with the fleet's min and max. */
export function notificationRetryPolicy(retry: ProcessorOptions["retry"]): RetryPolicy {
  return { initialDelayMs: retry.minDelayMs, maxDelayMs: retry.maxDelayMs, multiplier: 2 };
}

interface Claim {
  readonly key: string;
  readonly target: string;
  readonly action: NotificationAction;
  /** Stable for this notification across re-sends: (event, target, action, sequence). */
  readonly idempotencyKey: string;
  /** Set when the claim was another (stopped) holder's: the target may already have this notification. */
  readonly takenOver?: { readonly claimAgeMs: number };
  /** A reporter of the event was known when it was claimed (see `NotificationIdentity.knownReporter`). */
  readonly knownReporter: boolean;
}

/** What a batch's fold leaves running: its notifications, answered and their outcomes saved when `notified` resolves. */
export interface FoldedBatch {
  readonly notified: Promise<void>;
}

/** The key of one notification in flight: the event's key and the target's name. */
const flightKey = (claim: Pick<Claim, "key" | "target">): string => `${claim.key}\u0000${claim.target}`;

type ClaimResult =
  | { readonly claim: Claim; readonly outcome: "delivered" | "aborted" }
  | { readonly claim: Claim; readonly outcome: "dead"; readonly reason: string };

/** How many times a save is retried after finding another instance's write (reload, redo, save again). */
const maxSaveConflicts = 5;

/** Errors the state store threw: the only failures of a batch worth retrying (the service's `untilStored`). */
const storageFailures = new WeakSet<object>();

/** Whether `err` came from the partition's state store (a Blob error, a lost ownership), not from the records. */
export function isStorageFailure(err: unknown): boolean {
  return storageFailures.has(err as object); // false for a primitive: a WeakSet holds only objects
}

async function fromStore<T>(operation: Promise<T>): Promise<T> {
  try {
    return await operation;
  } catch (err) {
    if (typeof err === "object" && err !== null) storageFailures.add(err);
    throw err;
  }
}

/** A record whose reading or folding threw: the batch is folded again without it. */
class UnfoldableRecord {
  constructor(
    readonly received: ReceivedEvent,
    readonly eventId: string | undefined,
    readonly error: unknown,
  ) {}
}

/** One batch's fold: the partition's events so far, and the records each bound dropped (with the first EventId). */
interface BatchTally {
  eventCount: number;
  readonly dropped: Map<Exclude<Admission, "admit">, { count: number; eventId: string | undefined }>;
  /** Records skipped one by one (not valid, or on a wrong partition), per outcome: only the first few are logged. */
  readonly skipped: Map<string, number>;
}

/** Records of one outcome a batch logs one by one; one line counts the rest (each record is counted in the metric). */
export const skippedLoggedPerBatch = 10;

/** What a fold leaves to do once its state is saved (metrics and logs, once however often the fold was redone). */
type AfterSave = Array<() => void>;

export class PartitionProcessor {
  private chain: Promise<unknown> = Promise.resolve();
  /** Outcomes whose answers are in but not yet saved (in order); saved together by the next write. */
  private unsaved: ClaimResult[] = [];
  /** The write loop saving `unsaved`, while one runs. */
  private flushing: Promise<void> | null = null;
  /** Saves take turns: a batch's fold and the outcomes answered meanwhile never write against the same version. */
  private saving: Promise<unknown> = Promise.resolve();
  /** Notifications being sent, until their outcomes are saved: never claimed again meanwhile, however long they queue. */
  private readonly inFlight = new Set<string>();
  /** The sends of batches and re-plans, until answered and saved (`settled` waits for them). */
  private readonly sending = new Set<Promise<unknown>>();

  private readonly bounds: PartitionBounds;

  private constructor(
    private readonly options: ProcessorOptions,
    private state: PartitionState,
    /** The version of the state blob `state` was read or written as: saves must match it. */
    private etag: string | undefined,
  ) {
    const bounds = options.bounds ?? defaultPartitionBounds;
    this.bounds = new PartitionBounds(
      bounds,
      options.knownReporters ?? new KnownReporters(bounds.reporterKnownAfterMs),
    );
  }

  static async open(options: ProcessorOptions): Promise<PartitionProcessor> {
    const { state, etag } = await fromStore(options.store.load(options.partitionId));
    const processor = new PartitionProcessor(options, ownPartitionState(state), etag);
    processor.bounds.knowReporters(Object.values(processor.state.events));
    return processor;
  }

  get lastSequenceNumber(): number {
    return this.state.sequenceNumber;
  }

  get activeEvents(): number {
    return Object.values(this.state.events).filter((e) => !isEnded(e)).length;
  }

  /**
   * Resolves once every batch and re-plan queued so far has finished — its requests answered and their outcomes saved
   * (or given up) — or after `timeoutMs`, whichever comes first. Call after aborting `signal` (partition closed).
   */
  async settled(timeoutMs: number): Promise<void> {
    const bound = new AbortController();
    await Promise.race([this.idle(), this.options.clock.sleep(timeoutMs, bound.signal).catch(() => undefined)]);
    bound.abort();
  }

  /** Resolves once no batch or re-plan is queued and no send of theirs is unanswered or unsaved. */
  private async idle(): Promise<void> {
    await this.chain;
    while (this.sending.size > 0) {
      await Promise.allSettled([...this.sending]);
      await this.chain;
    }
  }

  /** Folds a batch, notifies, saves; resolves once its notifications are answered and their outcomes saved. */
  async processBatch(events: readonly ReceivedEvent[]): Promise<void> {
    await (
      await this.foldBatch(events)
    ).notified;
  }

  /**
   * Folds a batch and saves it with the notifications it claimed: resolves once that is durable (the caller may then
   * checkpoint: a claim saved and not answered is sent again by the partition's next owner). Its notifications go out
   * meanwhile (`notified`), so the next batch is folded while a slow target (or a queue of them) still answers.
   */
  foldBatch(events: readonly ReceivedEvent[]): Promise<FoldedBatch> {
    return this.serialized(() => this.run(events));
  }

  /** Re-plans every remembered event (notice windows reached, quiet hours over, stale claims); prunes ended ones. */
  async tick(): Promise<void> {
    await (
      await this.serialized(() => this.run([]))
    ).notified;
  }

  private serialized<T>(task: () => Promise<T>): Promise<T> {
    const next = this.chain.then(task);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Runs `task` once the saves before it are done (see `saving`). */
  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const next = this.saving.then(task);
    this.saving = next.catch(() => undefined);
    return next;
  }

  private async run(events: readonly ReceivedEvent[]): Promise<FoldedBatch> {
    const claims = await this.exclusive(() => this.foldAndClaim(events));
    for (const claim of claims) this.inFlight.add(flightKey(claim));
    const notified = this.notify(claims);
    const tracked = notified.catch(() => undefined);
    this.sending.add(tracked);
    void tracked.finally(() => this.sending.delete(tracked));
    return { notified };
  }

  /** Sends `claims` and saves each outcome; rejects with the first failure once every claim is done. */
  private async notify(claims: readonly Claim[]): Promise<void> {
    for (const claim of claims) {
      if (claim.takenOver === undefined) continue;
      this.options.metrics.inDoubt.inc({ target: claim.target, action: claim.action, cause: "claim_taken_over" });
      this.options.logger.warn(
        {
          target: claim.target,
          action: claim.action,
          eventId: own(this.state.events, claim.key)?.eventId,
          claimAgeMs: claim.takenOver.claimAgeMs,
          idempotencyKey: claim.idempotencyKey,
        },
        "re-sending a claim left by an instance that stopped mid-send (in doubt: the target may already have it)",
      );
    }
    // Each outcome is queued for saving as soon as its answer is in; the queue is written as one blob write whenever
    // none is in flight. A dead instance's delivered-but-unsaved notifications are those answered during the last
    // write (and those still in flight), not a queue of one-by-one writes that grows under load.
    const saved = claims.map(async (claim) => {
      try {
        const result = await this.sendWithRetry(claim);
        if (result.outcome === "aborted") return;
        await this.saveOutcome(result);
      } finally {
        // Saved, or queued in `unsaved` (a failed save): the next fold applies it before it plans anything.
        this.inFlight.delete(flightKey(claim));
      }
    });
    const failures = (await Promise.allSettled(saved)).filter((r) => r.status === "rejected");
    if (failures.length > 0) throw (failures[0] as PromiseRejectedResult).reason;
  }

  /**
   * Folds `events`, claims what is due and saves both. A record whose reading or folding throws is counted, logged
   * with its EventId and left out: the batch is folded again from the saved state without it, so no record can make
   * the batch fail for good.
   */
  private async foldAndClaim(events: readonly ReceivedEvent[]): Promise<Claim[]> {
    const unsaved = [...this.unsaved];
    const skipped = new Set<number>();
    for (;;) {
      const afterSave: AfterSave = [];
      try {
        const claims = await this.saveWithRetry((working) => {
          // Outcomes a failed save left behind go first: their notifications were answered and must not be sent again.
          for (const result of unsaved) this.applyResult(working, result);
          const { changed, folded } = this.fold(working, events, skipped, afterSave);
          const pruned = events.length === 0 && this.prune(working);
          const keys = events.length === 0 ? Object.keys(working.events) : [...changed];
          const claimed = this.claim(working, keys, afterSave);
          return { result: claimed, dirty: unsaved.length > 0 || folded || pruned || claimed.length > 0 };
        });
        for (const effect of afterSave) effect();
        this.unsaved = this.unsaved.slice(unsaved.length);
        return claims;
      } catch (err) {
        if (!(err instanceof UnfoldableRecord)) throw err;
        skipped.add(err.received.sequenceNumber);
        this.options.metrics.records.inc({ outcome: "unfoldable" });
        this.options.logger.error(
          {
            partitionId: this.options.partitionId,
            offset: err.received.offset,
            sequenceNumber: err.received.sequenceNumber,
            eventId: err.eventId,
            error: describeError(err.error),
          },
          "skipped a record that could not be folded",
        );
      }
    }
  }

  /** Queues an outcome and resolves once it is durable (it may share the blob write with outcomes queued meanwhile). */
  private saveOutcome(result: ClaimResult): Promise<void> {
    this.unsaved.push(result);
    this.flushing ??= this.flushOutcomes().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /**
   * Writes every queued outcome, one blob write per round, until the queue is empty (a fold saved meanwhile takes
   * those queued before it). On failure they stay queued.
   */
  private async flushOutcomes(): Promise<void> {
    while (this.unsaved.length > 0) {
      await this.exclusive(async () => {
        const batch = [...this.unsaved];
        if (batch.length === 0) return;
        await this.saveWithRetry((working) => {
          for (const result of batch) this.applyResult(working, result);
          return { result: undefined, dirty: true };
        });
        this.options.metrics.outcomeSaves.inc();
        this.options.metrics.outcomesSaved.inc(batch.length);
        this.unsaved = this.unsaved.slice(batch.length);
      });
    }
  }

  /**
   * Applies `change` to a working copy of the state and saves it (the store is told which events the change replaced,
   * so it may write only those); on a conflicting write by another instance, reloads the
   * partition's state and applies the change again. Returns what the successful application returned.
   */
  private async saveWithRetry<T>(change: (working: PartitionState) => { result: T; dirty: boolean }): Promise<T> {
    for (let conflict = 0; ; conflict++) {
      const working = workingCopy(this.state);
      const { result, dirty } = change(working);
      if (!dirty) return result;
      const changes = changesBetween(this.state, working);
      try {
        this.etag = await fromStore(this.options.store.save(this.options.partitionId, working, this.etag, changes));
        this.state = working;
        return result;
      } catch (err) {
        if (!(err instanceof OwnershipLostError) || conflict >= maxSaveConflicts) throw err;
        this.options.logger.warn(
          { partitionId: this.options.partitionId },
          "fleet state was written by another instance; reloading",
        );
        const reloaded = await fromStore(this.options.store.load(this.options.partitionId));
        this.state = ownPartitionState(reloaded.state);
        this.etag = reloaded.etag;
      }
    }
  }

  private fold(
    working: PartitionState,
    events: readonly ReceivedEvent[],
    skipped: ReadonlySet<number>,
    afterSave: AfterSave,
  ): { changed: Set<string>; folded: boolean } {
    const changed = new Set<string>();
    let folded = false;
    const batch: BatchTally = {
      eventCount: Object.keys(working.events).length,
      dropped: new Map(),
      skipped: new Map(),
    };
    for (const received of events) {
      if (received.sequenceNumber <= working.sequenceNumber) continue;
      working.sequenceNumber = received.sequenceNumber;
      folded = true;
      if (skipped.has(received.sequenceNumber)) continue;
      const key = this.foldOne(working, received, afterSave, batch);
      if (key !== undefined) changed.add(key);
    }
    afterSave.push(() => this.noteDropped(batch.dropped));
    afterSave.push(() => this.noteSkippedUnlogged(batch.skipped));
    return { changed, folded };
  }

  /** Reads and folds one event; returns the key of the fleet event it changed (none: not a transition). */
  private foldOne(
    working: PartitionState,
    received: ReceivedEvent,
    afterSave: AfterSave,
    batch: BatchTally,
  ): string | undefined {
    const { metrics, logger, partitionId } = this.options;
    let eventId: string | undefined;
    try {
      const input = readRecord(received.body);
      if (input.kind === "rejected") {
        afterSave.push(this.skippedOne(batch, input.reason, this.noteRejected(working, received, input)));
        return undefined;
      }
      if (input.kind === "other") {
        afterSave.push(() => metrics.records.inc({ outcome: "other" }));
        return undefined;
      }
      eventId = input.record.EventId;
      if (!this.placedByKey(eventId)) {
        const record = input.record;
        afterSave.push(this.skippedOne(batch, "wrong-partition", () => this.noteWrongPartition(received, record)));
        return undefined;
      }
      const key = eventKeyOf(eventId);
      const nowMs = this.options.clock.nowMs();
      const record = this.bounds.clampTime(input.record, nowMs);
      const previous = own(working.events, key);
      const admission = this.bounds.admit(previous, record, batch.eventCount, nowMs);
      if (admission !== "admit") {
        const tally = batch.dropped.get(admission) ?? { count: 0, eventId };
        batch.dropped.set(admission, { count: tally.count + 1, eventId: tally.eventId });
        return undefined;
      }
      if (previous === undefined) batch.eventCount++;
      const onKept = (field: PagedField, kept: string | null, offered: string | null): void => {
        afterSave.push(() => {
          metrics.changesIgnored.inc({ field });
          logger.warn(
            { partitionId, eventId: record.EventId, field, kept, offered: offered === null ? null : quoted(offered) },
            "a record would change a paged event: noted, not applied",
          );
        });
      };
      const paged = Object.values(own(working.notifications, key) ?? {}).some(
        (n) => n.triggeredAt !== null || n.pending !== null,
      );
      // A copy: the saved state shares its events with the working one, and the store writes only what was replaced.
      working.events[key] = foldRecord(previous === undefined ? undefined : ownEvent(previous), record, {
        paged,
        onKept,
      });
      afterSave.push(() => metrics.records.inc({ outcome: "folded" }));
      return key;
    } catch (err) {
      throw new UnfoldableRecord(received, eventId, err);
    }
  }

  /**
   * What to log and count for a record that is not read: its EventId when it has one, and whether that event is open
   * (a rejected record of an open event may be the end it waits for; it is named so it can be found).
   */
  private noteRejected(
    working: PartitionState,
    received: ReceivedEvent,
    input: Extract<RecordInput, { kind: "rejected" }>,
  ): () => void {
    const openEvent = input.eventId === undefined ? undefined : own(working.events, eventKeyOf(input.eventId));
    const open = openEvent !== undefined && !isEnded(openEvent);
    return () => {
      this.options.logger.warn(
        {
          partitionId: this.options.partitionId,
          offset: received.offset,
          sequenceNumber: received.sequenceNumber,
          reason: input.reason,
          detail: input.detail,
          ...(input.eventId === undefined ? {} : { eventId: input.eventId.slice(0, 80) }),
          ...(open ? { openEvent: true } : {}),
        },
        open ? "skipped an invalid record of an open event" : "skipped an event that is not a valid record",
      );
    };
  }

  /** Counts the records a bound dropped, and logs each kind once per batch with the first EventId it dropped. */
  private noteDropped(dropped: BatchTally["dropped"]): void {
    for (const [outcome, { count, eventId }] of dropped) {
      this.options.metrics.records.inc({ outcome }, count);
      this.options.logger.warn(
        { partitionId: this.options.partitionId, outcome, count, firstEventId: eventId },
        "dropped records past the partition's bounds",
      );
    }
  }

  /** Whether Event Hubs itself would have put a record with this partition key here (always, when not checked). */
  private placedByKey(eventId: string): boolean {
    const placement = this.options.placement;
    return placement === undefined || partitionIndexForKey(eventId, placement.count) === placement.index;
  }

  /**
   * What to do for one record skipped with `outcome` once the batch is saved: count it, and log it (`log`) when it is
   * among the batch's first `skippedLoggedPerBatch` of that outcome — a flood of them is not a flood of log lines.
   */
  private skippedOne(batch: BatchTally, outcome: (typeof recordOutcomes)[number], log: () => void): () => void {
    const nth = (batch.skipped.get(outcome) ?? 0) + 1;
    batch.skipped.set(outcome, nth);
    return () => {
      this.options.metrics.records.inc({ outcome });
      if (nth <= skippedLoggedPerBatch) log();
    };
  }

  /** One line per outcome of which the batch skipped more records than it logged one by one. */
  private noteSkippedUnlogged(skipped: BatchTally["skipped"]): void {
    for (const [outcome, count] of skipped) {
      if (count <= skippedLoggedPerBatch) continue;
      this.options.logger.warn(
        { partitionId: this.options.partitionId, outcome, count: count - skippedLoggedPerBatch },
        "skipped more records of this kind in one batch than are logged one by one (each is counted)",
      );
    }
  }

  private noteWrongPartition(received: ReceivedEvent, record: FleetTransition): void {
    this.options.logger.warn(
      {
        partitionId: this.options.partitionId,
        offset: received.offset,
        sequenceNumber: received.sequenceNumber,
        eventId: record.EventId,
        eventStatus: record.EventStatus,
        vmName: quoted(record.VmName),
      },
      "dropped a record sent to a partition its EventId does not hash to (not the agent's placement)",
    );
  }

  /** Forgets ended events after `retainEndedMs`, and events nobody mentioned for `retainOpenMs` (ended or not). */
  private prune(working: PartitionState): boolean {
    const nowMs = this.options.clock.nowMs();
    const endedCutoff = nowMs - this.options.retainEndedMs;
    const openCutoff = nowMs - this.bounds.settings.retainOpenMs;
    let pruned = false;
    for (const [key, event] of Object.entries(working.events)) {
      const pending = Object.values(own(working.notifications, key) ?? {}).some((n) => n.pending !== null);
      const lastSeenMs = Date.parse(event.lastSeen);
      if (!pending && (lastSeenMs < openCutoff || (isEnded(event) && lastSeenMs < endedCutoff))) {
        delete working.events[key];
        delete working.notifications[key];
        pruned = true;
      }
    }
    return pruned;
  }

  /**
   * Marks the notifications due now as claimed in `working` and returns them. An event whose plan throws is logged and
   * left unclaimed: the other events of the partition are still notified.
   */
  private claim(working: PartitionState, keys: readonly string[], afterSave: AfterSave): Claim[] {
    const nowMs = this.options.clock.nowMs();
    const claims: Claim[] = [];
    for (const key of keys) {
      const event = own(working.events, key);
      if (!event) continue;
      const states = dictOf<NotificationState>(own(working.notifications, key));
      let planned: ReturnType<typeof planNotifications>;
      try {
        planned = planNotifications(event, selectTargets(this.options.rules, event, nowMs), states, nowMs, {
          updateIntervalMs: this.options.updateIntervalMs,
          staleClaimMs: this.options.staleClaimMs,
          lateNoticeMs: this.options.lateNoticeMs,
        });
      } catch (err) {
        afterSave.push(() => {
          this.options.metrics.records.inc({ outcome: "unplannable" });
          this.options.logger.error(
            { partitionId: this.options.partitionId, eventId: event.eventId, error: describeError(err) },
            "could not plan the notifications of an event; left unnotified",
          );
        });
        continue;
      }
      for (const { target, action } of planned) {
        // Ours and still queued or unanswered (not a claim a stopped instance left): it goes out once.
        if (this.inFlight.has(flightKey({ key, target }))) continue;
        const previous = own(states, target) ?? emptyNotificationState;
        states[target] = { ...previous, pending: { action, claimedAtMs: nowMs } };
        working.notifications[key] = states;
        const idempotencyKey = notificationIdempotencyKey(key, target, action, nextSequence(previous));
        const takenOver = previous.pending !== null ? { claimAgeMs: nowMs - previous.pending.claimedAtMs } : undefined;
        const knownReporter = this.bounds.reportedByKnown(event, nowMs); // the sender puts such triggers first
        claims.push({ key, target, action, idempotencyKey, knownReporter, takenOver });
      }
    }
    return claims;
  }

  private applyResult(working: PartitionState, r: ClaimResult): void {
    const { key, target, action } = r.claim;
    const event = own(working.events, key);
    const states = dictOf<NotificationState>(own(working.notifications, key));
    const previous: NotificationState = own(states, target) ?? emptyNotificationState;
    if (!event || previous.pending?.action !== action) return;
    let next: NotificationState;
    if (r.outcome === "delivered")
      next = afterDelivery(previous, action, event, new Date(this.options.clock.nowMs()).toISOString());
    else if (r.outcome === "dead") next = { ...previous, pending: null, deadLettered: r.reason };
    else return; // aborted: the claim stays; a later owner sends it once it is stale
    states[target] = next;
    working.notifications[key] = states;
  }

  /** Sends one claim with @sef/retry's loop (the notification's only retry owner), until delivered, refused or given up. */
  private async sendWithRetry(claim: Claim): Promise<ClaimResult> {
    const { clock, retry, metrics, logger, signal } = this.options;
    const { target, action } = claim;
    const event = own(this.state.events, claim.key)!;
    const started = clock.monotonicMs();
    const requestSignal = this.options.requestSignal ?? new AbortController().signal;
    const sent = await retryAttempts(
      () =>
        this.options.send(
          target,
          { action, idempotencyKey: claim.idempotencyKey, knownReporter: claim.knownReporter },
          event,
          requestSignal,
          signal,
        ),
      {
        policy: notificationRetryPolicy(retry),
        clock,
        signal, // the partition closed: its next owner retries
        deadlineMs: started + retry.giveUpAfterMs,
        verdict: (settled) =>
          settled.ok && settled.value.kind === "retry"
            ? { retry: true, afterMs: settled.value.retryAfterMs }
            : { retry: false },
        onRetry: (settled, attempt, delayMs) => {
          const outcome = settled.ok ? settled.value : undefined;
          if (outcome?.kind !== "retry") return;
          metrics.notifications.inc({ target, action, outcome: "retried" });
          logger.warn(
            { target, action, eventId: event.eventId, reason: outcome.reason, attempt, delayMs },
            "notification failed; retrying",
          );
          if (outcome.inDoubt === true) {
            // The next attempt may repeat it: the target may have taken this one (a timeout, a connection lost mid-request).
            metrics.inDoubt.inc({ target, action, cause: "attempt_unanswered" });
            logger.warn(
              {
                target,
                action,
                eventId: event.eventId,
                reason: outcome.reason,
                attempt,
                idempotencyKey: claim.idempotencyKey,
              },
              "re-sending a notification whose unanswered attempt may have reached the target (in doubt)",
            );
          }
        },
      },
    );
    if (sent.last?.ok === false) throw sent.last.error; // a bug in the sender: not a delivery outcome
    const outcome = sent.last?.value;
    if (sent.end === "aborted" || outcome === undefined) return { claim, outcome: "aborted" };
    if (outcome.kind === "delivered") {
      metrics.notifications.inc({ target, action, outcome: "sent" });
      logger.info(
        { target, action, eventId: event.eventId, status: event.status, attempt: sent.attempts },
        "notification sent",
      );
      return { claim, outcome: "delivered" };
    }
    const elapsedS = Math.round((clock.monotonicMs() - started) / 1000);
    const reason =
      outcome.kind === "rejected"
        ? outcome.reason
        : `gave up after ${sent.attempts} attempts in ${elapsedS} s: ${outcome.reason}`;
    metrics.notifications.inc({ target, action, outcome: "dead_lettered" });
    logger.error({ target, action, eventId: event.eventId, reason }, "notification dead-lettered");
    await this.options
      .onDeadLetter?.(target, action, event, reason)
      .catch((err: Error) => logger.error({ err }, "could not write the dead-letter entry"));
    return { claim, outcome: "dead", reason };
  }
}

/**
 * An error as a log line carries it (`error`: pino's `err` serializer would read this object's own type): its type and
 * message, never its stack or fields, which may hold record text.
 */
function describeError(err: unknown): { type: string; message: string } {
  return err instanceof Error ? { type: err.name, message: err.message } : { type: typeof err, message: String(err) };
}
