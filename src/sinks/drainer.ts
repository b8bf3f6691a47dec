// The drain loop of one sink: reads the outbox after the sink's cursor, sends, and acts on the classified result
// (advance, retry with the shared policy, or dead-letter). Slow or failing sinks only ever delay themselves.
import type { Logger } from "pino";
import type { Clock } from "../util/clock.js";
import type { Store } from "../store/store.js";
import type { AgentMetrics } from "../observability/metrics.js";
import { isUrgent, type OutboxEntry, type SendResult, type Sink } from "./sink.js";
import { retryDelayMs, type RetryPolicy } from "./retry-policy.js";
import type { DeadLetterFile } from "./dead-letter.js";
import { settlesWithin } from "../util/deadline.js";

/** How long a sink may take to close at shutdown (and to notice the flush deadline's abort). */
export const sinkCloseTimeoutMs = 1000;

export interface DrainerOptions {
  sink: Sink;
  store: Store;
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
  private wake: ((urgent: boolean) => void) | undefined;
  private pendingWake = false;
  private readonly abort = new AbortController();
  private failures = 0;
  private failingSinceMs: number | null = null;
  private lastError: string | null = null;
  private lastProgressMs: number;
  private deadLetteredSinceDelivery = 0;
  private needsOperator: string | null = null;
  private loop: Promise<void> | undefined;
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
    this.pendingWake = true;
    this.wake?.(urgent);
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
    this.wake?.(true);
    const untilDeadlineMs = Math.max(0, deadlineMs - this.options.clock.monotonicMs());
    const timer = setTimeout(() => this.abort.abort(new Error("shutdown deadline reached")), untilDeadlineMs);
    try {
      // A sink that ignores the abort must not hold shutdown: give it a moment past the deadline, then move on.
      if (this.loop && !(await settlesWithin(this.loop, untilDeadlineMs + sinkCloseTimeoutMs))) {
        this.options.logger.warn({ sink: this.name }, "sink did not stop sending by the shutdown deadline; leaving it");
      }
    } finally {
      clearTimeout(timer);
      const close = this.options.sink.close().catch((err: unknown) => this.options.logger.warn({ err, sink: this.name }, "sink close failed"));
      if (!(await settlesWithin(close, sinkCloseTimeoutMs))) this.options.logger.warn({ sink: this.name, timeoutMs: sinkCloseTimeoutMs }, "sink did not close in time; leaving it");
    }
  }

  private get pastDeadline(): boolean {
    return this.stopRequested && this.options.clock.monotonicMs() >= this.flushDeadlineMs;
  }

  private async run(): Promise<void> {
    const { sink, store } = this.options;
    while (!this.pastDeadline && !this.abort.signal.aborted) {
      let batch = store.readAfter(store.cursor(sink.name), sink.maxBatchRecords);
      if (batch.length === 0) {
        if (this.stopRequested) return;
        this.lastProgressMs = this.options.clock.monotonicMs(); // nothing waits: an idle sink is not a stalled one
        await this.waitForWake("any");
        this.lastProgressMs = this.options.clock.monotonicMs();
        continue;
      }
      if (sink.lingerMs > 0 && !this.stopRequested && batch.length < sink.maxBatchRecords && !batch.some((e) => isUrgent(e.record))) {
        await this.waitForWake("urgent", sink.lingerMs);
        batch = store.readAfter(store.cursor(sink.name), sink.maxBatchRecords);
      }
      const result = await this.sendSafely(batch);
      let retryAfterMs: number | undefined;
      try {
        retryAfterMs = await this.apply(batch, result);
      } catch (err) {
        // The dead-letter file or the store could not be written (disk full?): keep the cursor, try the batch again later.
        retryAfterMs = this.failed(`could not record the outcome of a send: ${(err as Error).message}`, undefined);
      }
      this.updateDepthMetrics();
      if (retryAfterMs !== undefined) {
        if (this.stopRequested) return; // shutting down: the rest stays durable in the outbox
        await this.waitForWake("stop", retryAfterMs);
        if (this.stopRequested) return; // a failing sink is not retried early just because we are stopping
      }
    }
  }

  private async sendSafely(batch: readonly OutboxEntry[]): Promise<SendResult> {
    try {
      return await this.options.sink.send(batch, this.abort.signal);
    } catch (err) {
      // A sink should classify instead of throwing; an unexpected throw is treated as retryable, never as success.
      return { kind: "retryable", reason: `sink threw: ${(err as Error).message}` };
    }
  }

  /** Applies a result to the cursor and dead-letter file; returns how long to wait before retrying, if at all. */
  private async apply(batch: readonly OutboxEntry[], result: SendResult): Promise<number | undefined> {
    const { sink, store, metrics } = this.options;
    const last = batch[batch.length - 1]!;
    switch (result.kind) {
      case "ok": {
        const rejected = result.rejected ?? [];
        if (rejected.length > 0) {
          const bySeq = new Map(batch.map((e) => [e.seq, e]));
          await this.deadLetter(rejected.flatMap((r) => (bySeq.has(r.seq) ? [{ entry: bySeq.get(r.seq)!, reason: r.reason }] : [])));
        }
        store.advanceCursor(sink.name, last.seq);
        metrics.sent.inc({ sink: sink.name }, batch.length - rejected.length);
        this.delivered(batch.length - rejected.length, rejected.length);
        this.recovered();
        return undefined;
      }
      case "permanent": {
        await this.deadLetter(batch.map((entry) => ({ entry, reason: result.reason })));
        store.advanceCursor(sink.name, last.seq);
        this.delivered(0, batch.length);
        this.recovered();
        return undefined;
      }
      case "retryable": {
        const accepted = Math.min(result.acceptedCount ?? 0, batch.length);
        if (accepted > 0) {
          store.advanceCursor(sink.name, batch[accepted - 1]!.seq);
          metrics.sent.inc({ sink: sink.name }, accepted);
          this.delivered(accepted, 0);
        }
        this.needsOperator = result.needsOperator ? result.reason : null;
        return this.failed(result.reason, result.retryAfterMs);
      }
    }
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

  private async deadLetter(items: Array<{ entry: OutboxEntry; reason: string }>): Promise<void> {
    const { sink, metrics, logger, clock, deadLetters } = this.options;
    if (items.length === 0) return;
    await deadLetters.write(sink.name, items, clock.now());
    metrics.deadLetters.inc({ sink: sink.name }, items.length);
    logger.error({ sink: sink.name, records: items.length, reason: items[0]!.reason, file: deadLetters.pathFor(sink.name) }, "records dead-lettered");
  }

  private recovered(): void {
    if (this.failures > 0) this.options.logger.info({ sink: this.name, afterAttempts: this.failures }, "sink recovered");
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
    const { sink, store, metrics, clock } = this.options;
    const depth = store.depth(sink.name);
    metrics.outboxDepth.set({ sink: sink.name }, depth.records);
    metrics.outboxOldestAge.set({ sink: sink.name }, depth.oldestCreatedMs === null ? 0 : (clock.now() - depth.oldestCreatedMs) / 1000);
  }

  /**
   * Waits until `timeoutMs` passes or stop is requested, and also, by `wakeOn`: any new record ("any"),
   * only an urgent one ("urgent", a linger), or nothing else ("stop", a retry backoff).
   */
  private async waitForWake(wakeOn: "any" | "urgent" | "stop", timeoutMs?: number): Promise<void> {
    if (wakeOn === "any" && this.pendingWake) {
      this.pendingWake = false;
      return;
    }
    if (this.stopRequested && wakeOn !== "any") return;
    const sleeper = new AbortController();
    const woken = new Promise<void>((resolve) => {
      this.wake = (urgent) => {
        if (this.stopRequested || wakeOn === "any" || (wakeOn === "urgent" && urgent)) resolve();
      };
    });
    const waits: Promise<unknown>[] = [woken];
    if (timeoutMs !== undefined) waits.push(this.options.clock.sleep(timeoutMs, sleeper.signal).catch(() => undefined));
    await Promise.race(waits);
    sleeper.abort();
    this.wake = undefined;
    if (wakeOn === "any") this.pendingWake = false;
  }
}
