// The one drainer every sink shares (one loop per sink), in three steps: read the next batch (batch-reader.ts:
// linger, pipelining), send it and apply its outcomes (apply-outcomes.ts: ledger, dead letters), back off after a
// failure (sink-health.ts: the count of failures, the backoff, what /readyz reports). Slow or failing sinks only ever
// delay themselves. It owns the loop's waits and shutdown (the flush deadline, the abort, closing the sink).
import type { Logger } from "pino";
import type { Clock } from "@sef/runtime/clock.js";
import type { AgentMetrics } from "../observability/metrics.js";
import type { Sink } from "../sinks/sink.js";
import type { OutboxEntry } from "./outbox-entry.js";
import type { Outbox } from "./outbox.js";
import type { RetryPolicy } from "@sef/retry/policy.js";
import type { DeadLetterFile } from "./dead-letter.js";
import { settlesWithin } from "../util/deadline.js";
import { BatchReader, type NextBatch } from "./batch-reader.js";
import { OutcomeApplier, sendChecked } from "./apply-outcomes.js";
import { SinkHealth, type SinkHealthStatus } from "./sink-health.js";

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

export interface DrainerStatus extends SinkHealthStatus {
  name: string;
}

export class Drainer {
  private stopRequested = false;
  private flushDeadlineMs = 0;
  /** Ends the current wait (set while one runs); `wakeOn` says which new records may end it. */
  private wake: (() => void) | undefined;
  private wakeOn: "any" | "urgent" | "stop" = "any";
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly health: SinkHealth;
  private readonly batches: BatchReader;
  private readonly outcomes: OutcomeApplier;

  constructor(private readonly options: DrainerOptions) {
    const { sink, outbox, clock, retryPolicy, logger, metrics, deadLetters } = options;
    this.health = new SinkHealth({
      sink: sink.name,
      clock,
      retryPolicy,
      logger,
      metrics,
      random: options.random ?? Math.random,
    });
    this.batches = new BatchReader({
      sink,
      outbox,
      clock,
      waits: {
        forRecords: (timeoutMs) => this.waitForWake("any", timeoutMs),
        forUrgent: (timeoutMs) => this.waitForWake("urgent", timeoutMs),
        idle: () => this.health.idle(),
      },
    });
    this.outcomes = new OutcomeApplier({ sink, outbox, clock, deadLetters, health: this.health, logger, metrics });
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
    return { name: this.name, ...this.health.status() };
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
      await this.batches.settled();
    }
  }

  /** Read the next batch, send it and apply its outcomes, back off after a failure; until stopped or past the deadline. */
  private async drain(): Promise<void> {
    while (!this.pastDeadline && !this.abort.signal.aborted) {
      const next = await this.batches.next(this.stopRequested);
      if (next.kind === "stop") return;
      const retryAfterMs = await this.send(next);
      // A failing sink is not retried early just because we are stopping: the rest stays durable in the outbox.
      if (retryAfterMs !== undefined && !(await this.backOff(retryAfterMs))) return;
    }
  }

  /** Sends what `next` holds (pipelined or not); returns the wait before the next send when a record is to be retried. */
  private async send(next: Exclude<NextBatch, { kind: "stop" }>): Promise<number | undefined> {
    if (next.kind === "again") return undefined;
    if (next.kind === "backoff") return next.retryAfterMs;
    let retryAfterMs: number | undefined;
    if (next.kind === "pipeline") await this.batches.pipeline(next.batch, () => this.sendAndApply(next.batch));
    else retryAfterMs = await this.sendAndApply(next.batch);
    // One turn of the event loop per batch: a sink that answers without I/O cannot starve timers or other loops.
    await new Promise<void>((resolve) => setImmediate(resolve));
    return retryAfterMs;
  }

  /** Sends one batch and applies its outcomes; never throws. Returns the wait before the next send when a record is to be retried. */
  private async sendAndApply(batch: readonly OutboxEntry[]): Promise<number | undefined> {
    const outcomes = await sendChecked(this.options.sink, batch, this.abort.signal);
    return this.outcomes.apply(batch, outcomes);
  }

  /** Waits `retryAfterMs` (a stop ends it); returns whether to go on. */
  private async backOff(retryAfterMs: number): Promise<boolean> {
    await this.waitForWake("stop", retryAfterMs);
    return !this.stopRequested;
  }

  /**
   * Waits until `timeoutMs` passes or stop is requested, and also, by `wakeOn`: any new record ("any"),
   * only an urgent one ("urgent", a linger), or nothing else ("stop", a retry backoff). Returns at once when stopping.
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
