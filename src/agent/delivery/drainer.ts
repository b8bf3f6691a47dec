// The one drainer every sink shares (one loop per sink): reads the sink's due pending records from the ledger, sends,
// and applies the per-record outcomes in one transaction; it alone owns retry timing, backoff and dead-lettering.
// Slow or failing sinks only ever delay themselves.
import type { Logger } from "pino";
import type { Clock } from "../util/clock.js";
import type { AgentMetrics } from "../observability/metrics.js";
import {
  allOutcomes,
  isUrgent,
  retry,
  type OutboxEntry,
  type RecordOutcome,
  type SendOutcomes,
  type Sink,
} from "../sinks/sink.js";
import type { Outbox, LedgerOutcome } from "./outbox.js";
import { retryDelayMs, type RetryPolicy } from "@sef/retry/policy.js";
import type { DeadLetterFile } from "./dead-letter.js";
import { settlesWithin } from "../util/deadline.js";

/** How long a sink may take to close at shutdown (and to notice the flush deadline's abort). */
export const sinkCloseTimeoutMs = 1000;

export interface DrainerOptions {
  sink: Sink;
  outbox: Outbox;
  clock: Clock;
  retryPolicy: RetryPolicy;
  deadLetters: DeadLetterFile;
  logger: Logger;
  metrics: AgentMetrics;
  random?: () => number;
}

export interface DrainerStatus {
  name: string;
  /** Consecutive failed attempts (0 when the last attempt succeeded). */
  consecutiveFailures: number;
  /** Since when (monotonic ms) the sink has been failing without progress (null when healthy). */
  failingSinceMs: number | null;
  lastError: string | null;
  /** Monotonic time of the last delivery, or of the last moment nothing was waiting for this sink. */
  lastProgressMs: number;
  /** Records dead-lettered since the last record this sink delivered. */
  deadLetteredSinceDelivery: number;
  /** The last failure's reason when the sink said it needs an operator (auth, a missing destination); else null. */
  needsOperator: string | null;
}

export class Drainer {
  private stopRequested = false;
  private flushDeadlineMs = 0;
  /** Ends the current wait (set while one runs); `wakeOn` says which new records may end it. */
  private wake: (() => void) | undefined;
  private wakeOn: "any" | "urgent" | "stop" = "any";
  private readonly abort = new AbortController();
  private failures = 0;
  private failingSinceMs: number | null = null;
  private lastError: string | null = null;
  private lastProgressMs: number;
  private deadLetteredSinceDelivery = 0;
  private needsOperator: string | null = null;
  private loop: Promise<void> | undefined;
  /** Sends of full batches still in flight (pipelining, when the sink allows more than one send at a time). */
  private readonly inFlight = new Set<Promise<void>>();
  /** The last record handed to a send still in flight; the next batch is read after it. */
  private lastSeqInFlight = 0;
  /** The longest wait a pipelined send asked for before the next send (undefined: none asked). */
  private pipelinedRetryMs: number | undefined;
  private readonly random: () => number;

  constructor(private readonly options: DrainerOptions) {
    this.random = options.random ?? Math.random;
    this.lastProgressMs = options.clock.monotonicMs();
    options.metrics.sinkFailing.set({ sink: options.sink.name }, 0);
  }

  get name(): string {
    return this.options.sink.name;
  }

  start(): void {
    this.loop ??= this.run().catch((err: unknown) => {
      this.options.logger.error({ err, sink: this.name }, "drain loop stopped unexpectedly");
    });
  }

  /** New records are in the outbox; `urgent` ends a linger early. */
  notify(urgent = false): void {
    if (this.wakeOn === "any" || (urgent && this.wakeOn === "urgent")) this.wake?.();
  }

  status(): DrainerStatus {
    return {
      name: this.name,
      consecutiveFailures: this.failures,
      failingSinceMs: this.failingSinceMs,
      lastError: this.lastError,
      lastProgressMs: this.lastProgressMs,
      deadLetteredSinceDelivery: this.deadLetteredSinceDelivery,
      needsOperator: this.needsOperator,
    };
  }

  /** Stops after sending what the sink takes before `deadlineMs` (monotonic); an unfinished send is aborted; the rest stays in the outbox. */
  async stop(deadlineMs: number): Promise<void> {
    this.stopRequested = true;
    this.flushDeadlineMs = deadlineMs;
    this.wake?.();
    const untilDeadlineMs = Math.max(0, deadlineMs - this.options.clock.monotonicMs());
    const timer = setTimeout(() => this.abort.abort(new Error("shutdown deadline reached")), untilDeadlineMs);
    try {
      // A sink that ignores the abort must not hold shutdown: give it a moment past the deadline, then move on.
      if (this.loop && !(await settlesWithin(this.loop, untilDeadlineMs + sinkCloseTimeoutMs))) {
        this.options.logger.warn({ sink: this.name }, "sink did not stop sending by the shutdown deadline; leaving it");
      }
    } finally {
      clearTimeout(timer);
      const close = this.options.sink
        .close()
        .catch((err: unknown) => this.options.logger.warn({ err, sink: this.name }, "sink close failed"));
      if (!(await settlesWithin(close, sinkCloseTimeoutMs)))
        this.options.logger.warn(
          { sink: this.name, timeoutMs: sinkCloseTimeoutMs },
          "sink did not close in time; leaving it",
        );
    }
  }

  private get pastDeadline(): boolean {
    return this.stopRequested && this.options.clock.monotonicMs() >= this.flushDeadlineMs;
  }

  private async run(): Promise<void> {
    try {
      await this.drain();
    } finally {
      // Stopping (or a deadline): sends still in flight finish or see the abort, and their outcomes are applied.
      await Promise.all(this.inFlight);
    }
  }

  private async drain(): Promise<void> {
    const { sink, outbox, clock } = this.options;
    const pipelineDepth = Math.max(1, Math.floor(sink.maxConcurrentSends ?? 1));
    while (!this.pastDeadline && !this.abort.signal.aborted) {
      if (this.pipelinedRetryMs !== undefined) {
        // A pipelined send asked for a retry: let the pipeline empty, then back off as after any failed send.
        await Promise.all(this.inFlight);
        const retryAfterMs = this.pipelinedRetryMs;
        this.pipelinedRetryMs = undefined;
        await this.waitForWake("stop", retryAfterMs);
        if (this.stopRequested) return;
        continue;
      }
      // While full batches are in flight, the next one is read past the last record they took (they are still pending).
      const afterSeq = this.inFlight.size > 0 ? this.lastSeqInFlight : 0;
      let batch = outbox.due(sink.name, sink.maxBatchRecords, clock.monotonicMs(), afterSeq);
      if (this.inFlight.size > 0 && (batch.length < sink.maxBatchRecords || this.stopRequested)) {
        // The backlog's tail (or a stop): let the pipeline empty, then carry on one send at a time.
        await Promise.all(this.inFlight);
        continue;
      }
      if (batch.length === 0) {
        if (this.stopRequested) return;
        // Nothing due: wait for new records, or for the earliest pending record's next attempt.
        const nextMs = outbox.nextAttemptMs(sink.name);
        if (nextMs === null) this.lastProgressMs = clock.monotonicMs(); // nothing waits: an idle sink is not a stalled one
        await this.waitForWake("any", nextMs === null ? undefined : Math.max(1, nextMs - clock.monotonicMs()));
        continue;
      }
      if (batch.length === sink.maxBatchRecords && !this.stopRequested) {
        // A backlog: full batches go out without waiting for the previous one's answer, up to the sink's depth.
        this.lastSeqInFlight = batch[batch.length - 1]!.seq;
        const sending: Promise<void> = this.sendAndApply(batch).then((retryAfterMs) => {
          this.inFlight.delete(sending);
          if (retryAfterMs !== undefined) this.pipelinedRetryMs = Math.max(this.pipelinedRetryMs ?? 0, retryAfterMs);
        });
        this.inFlight.add(sending);
        if (this.inFlight.size >= pipelineDepth) await Promise.race(this.inFlight);
        await new Promise<void>((resolve) => setImmediate(resolve));
        continue;
      }
      if (sink.lingerMs > 0 && batch.length < sink.maxBatchRecords && !batch.some((e) => isUrgent(e.record))) {
        await this.waitForWake("urgent", sink.lingerMs);
        batch = outbox.due(sink.name, sink.maxBatchRecords, clock.monotonicMs());
        if (batch.length === 0) continue;
      }
      const retryAfterMs = await this.sendAndApply(batch);
      // One turn of the event loop per batch: a sink that answers without I/O cannot starve timers or other loops.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (retryAfterMs !== undefined) {
        await this.waitForWake("stop", retryAfterMs);
        if (this.stopRequested) return; // a failing sink is not retried early just because we are stopping
      }
    }
  }

  /** Sends one batch and applies its outcomes; never throws. Returns the wait before the next send when a record is to be retried. */
  private async sendAndApply(batch: readonly OutboxEntry[]): Promise<number | undefined> {
    const outcomes = await this.sendSafely(batch);
    let retryAfterMs: number | undefined;
    try {
      retryAfterMs = await this.apply(batch, outcomes);
    } catch (err) {
      // The store could not be written (disk full?): the records stay pending; try again after a backoff.
      retryAfterMs = this.failed(`could not record the outcome of a send: ${(err as Error).message}`, undefined);
    }
    try {
      this.updateDepthMetrics();
    } catch (err) {
      this.options.logger.warn({ err, sink: this.name }, "could not read the outbox depth");
    }
    return retryAfterMs;
  }

  /** The sink's outcomes, one per record; a throw or a wrong count becomes `retry` (never `delivered`). */
  private async sendSafely(batch: readonly OutboxEntry[]): Promise<SendOutcomes> {
    let outcomes: SendOutcomes;
    try {
      outcomes = await this.options.sink.send(batch, this.abort.signal);
    } catch (err) {
      return allOutcomes(batch, retry(`sink threw: ${(err as Error).message}`));
    }
    if (outcomes.length !== batch.length) {
      return allOutcomes(batch, retry(`sink returned ${outcomes.length} outcomes for ${batch.length} records`));
    }
    return outcomes;
  }

  /**
   * Applies a send's outcomes to the ledger in one transaction, after the dead-letter lines of the rejected records
   * are on disk (if that file cannot be written they stay pending and are retried). Returns how long to wait before
   * the next send, when a record is to be retried.
   */
  private async apply(batch: readonly OutboxEntry[], outcomes: SendOutcomes): Promise<number | undefined> {
    const { sink, outbox, metrics, clock, deadLetters, logger } = this.options;
    // Next-attempt times are monotonic (a wall-clock step never delays a retry); the outbox resets them at open.
    const nowMs = clock.monotonicMs();
    const rejectedItems: Array<{ entry: OutboxEntry; reason: string }> = [];
    batch.forEach((entry, i) => {
      const o = outcomes[i]!;
      if (o.kind === "rejected")
        rejectedItems.push({ entry, reason: o.reason.trim() === "" ? "rejected without a reason" : o.reason });
    });
    let deadLetterError: string | undefined;
    try {
      await deadLetters.write(sink.name, rejectedItems, nowMs);
    } catch (err) {
      deadLetterError = `could not write the dead-letter file ${deadLetters.pathFor(sink.name)}: ${(err as Error).message}`;
    }
    const retries = outcomes.filter((o): o is Extract<RecordOutcome, { kind: "retry" }> => o.kind === "retry");
    const hintMs = retries.reduce<number | undefined>(
      (max, o) => (o.afterMs === undefined ? max : Math.max(max ?? 0, o.afterMs)),
      undefined,
    );
    const anyRetry = retries.length > 0 || deadLetterError !== undefined;
    this.needsOperator = retries.find((o) => o.needsOperator)?.reason ?? null;
    const delayMs = anyRetry ? this.failed(retries[0]?.reason ?? deadLetterError!, hintMs) : undefined;
    const ledgerOutcomes: LedgerOutcome[] = batch.map((entry, i) => {
      const o = outcomes[i]!;
      if (o.kind === "delivered") return { seq: entry.seq, kind: "delivered" };
      if (o.kind === "rejected") {
        if (deadLetterError !== undefined)
          return { seq: entry.seq, kind: "retry", reason: deadLetterError, nextAttemptMs: nowMs + delayMs! };
        return {
          seq: entry.seq,
          kind: "rejected",
          reason: o.reason.trim() === "" ? "rejected without a reason" : o.reason,
        };
      }
      const recordDelayMs =
        o.afterMs === undefined
          ? delayMs!
          : retryDelayMs(this.options.retryPolicy, this.failures, o.afterMs, this.random());
      return { seq: entry.seq, kind: "retry", reason: o.reason, nextAttemptMs: nowMs + recordDelayMs };
    });
    const applied = outbox.applyOutcomes(sink.name, ledgerOutcomes, clock.now());
    this.delivered(applied.delivered, applied.rejected);
    metrics.sent.inc({ sink: sink.name }, applied.delivered);
    if (applied.rejected > 0) {
      metrics.deadLetters.inc({ sink: sink.name }, applied.rejected);
      logger.error(
        {
          sink: sink.name,
          records: applied.rejected,
          reason: rejectedItems[0]!.reason,
          file: deadLetters.pathFor(sink.name),
        },
        "records dead-lettered",
      );
    }
    if (!anyRetry) this.recovered();
    return delayMs;
  }

  /** Counts a failed attempt and returns the backoff before the next one. */
  private failed(reason: string, retryAfterMs: number | undefined): number {
    const { sink, metrics, logger, clock } = this.options;
    this.failures += 1;
    this.failingSinceMs ??= clock.monotonicMs();
    metrics.sinkFailing.set({ sink: sink.name }, 1);
    this.lastError = reason;
    metrics.retries.inc({ sink: sink.name });
    const delayMs = retryDelayMs(this.options.retryPolicy, this.failures, retryAfterMs, this.random());
    if (retryAfterMs !== undefined) metrics.throttledSeconds.inc({ sink: sink.name }, delayMs / 1000);
    const log = this.failures === 1 || this.failures % 10 === 0 ? logger.warn.bind(logger) : logger.debug.bind(logger);
    log({ sink: sink.name, attempt: this.failures, delayMs, reason }, "send failed, will retry");
    return delayMs;
  }

  private recovered(): void {
    if (this.failures > 0)
      this.options.logger.info({ sink: this.name, afterAttempts: this.failures }, "sink recovered");
    this.failures = 0;
    this.failingSinceMs = null;
    this.lastError = null;
    this.needsOperator = null;
    this.options.metrics.sinkFailing.set({ sink: this.name }, 0);
  }

  /** Bookkeeping for readiness: deliveries are progress; dead-letters with no delivery in between add up. */
  private delivered(deliveredCount: number, deadLetteredCount: number): void {
    if (deliveredCount > 0) {
      this.lastProgressMs = this.options.clock.monotonicMs();
      this.deadLetteredSinceDelivery = 0;
    }
    this.deadLetteredSinceDelivery += deadLetteredCount;
  }

  private updateDepthMetrics(): void {
    const { sink, outbox, metrics, clock } = this.options;
    const depth = outbox.depth(sink.name);
    metrics.outboxDepth.set({ sink: sink.name }, depth.records);
    metrics.outboxOldestAge.set(
      { sink: sink.name },
      depth.oldestCreatedMs === null ? 0 : (clock.now() - depth.oldestCreatedMs) / 1000,
    );
  }

  /**
   * Waits until `timeoutMs` passes or stop is requested, and also, by `wakeOn`: any new record ("any"),
   * only an urgent one ("urgent", a linger), or nothing else ("stop", a retry backoff).
   */
  private async waitForWake(wakeOn: "any" | "urgent" | "stop", timeoutMs?: number): Promise<void> {
    if (this.stopRequested) return;
    const sleeper = new AbortController();
    const woken = new Promise<void>((resolve) => {
      this.wake = resolve;
    });
    this.wakeOn = wakeOn;
    const waits: Promise<unknown>[] = [woken];
    if (timeoutMs !== undefined) waits.push(this.options.clock.sleep(timeoutMs, sleeper.signal).catch(() => undefined));
    await Promise.race(waits);
    sleeper.abort();
    this.wake = undefined;
  }
}
