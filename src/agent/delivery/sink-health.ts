// One sink's health as the drainer learns it: consecutive failed attempts and the backoff they earn, since when it
// fails, its last error and whether an operator is needed, its last progress; the failing gauge, retry and throttle
// counters, and the warn/recovered log lines. /readyz and `sef outbox status` read `status()`.
import type { Logger } from "pino";
import { retryDelayMs, type RetryPolicy } from "@sef/retry/policy.js";
import type { Clock } from "@sef/runtime/clock.js";
import type { AgentMetrics } from "../observability/metrics.js";

export interface SinkHealthStatus {
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

export interface SinkHealthOptions {
  sink: string;
  clock: Clock;
  retryPolicy: RetryPolicy;
  logger: Logger;
  metrics: AgentMetrics;
  random: () => number;
}

export class SinkHealth {
  private failures = 0;
  private failingSinceMs: number | null = null;
  private lastError: string | null = null;
  private lastProgressMs: number;
  private deadLetteredSinceDelivery = 0;
  private needsOperator: string | null = null;

  constructor(private readonly options: SinkHealthOptions) {
    this.lastProgressMs = options.clock.monotonicMs();
    options.metrics.sinkFailing.set({ sink: options.sink }, 0);
  }

  status(): SinkHealthStatus {
    return {
      consecutiveFailures: this.failures,
      failingSinceMs: this.failingSinceMs,
      lastError: this.lastError,
      lastProgressMs: this.lastProgressMs,
      deadLetteredSinceDelivery: this.deadLetteredSinceDelivery,
      needsOperator: this.needsOperator,
    };
  }

  /** Nothing waits for the sink: an idle sink is not a stalled one. */
  idle(): void {
    this.lastProgressMs = this.options.clock.monotonicMs();
  }

  /**
   * Counts a failed attempt and returns the backoff before the next one (a server's hint wins, bounded);
   * `needsOperator` is the reason when the sink said the failure needs one.
   */
  failed(reason: string, hintMs: number | undefined, needsOperator = this.needsOperator): number {
    const { sink, metrics, logger, clock } = this.options;
    this.needsOperator = needsOperator;
    this.failures += 1;
    this.failingSinceMs ??= clock.monotonicMs();
    metrics.sinkFailing.set({ sink }, 1);
    this.lastError = reason;
    metrics.retries.inc({ sink });
    const delayMs = this.retryDelayMs(hintMs);
    if (hintMs !== undefined) metrics.throttledSeconds.inc({ sink }, delayMs / 1000);
    const log = this.failures === 1 || this.failures % 10 === 0 ? logger.warn.bind(logger) : logger.debug.bind(logger);
    log({ sink, attempt: this.failures, delayMs, reason }, "send failed, will retry");
    return delayMs;
  }

  /** The wait before one record's next attempt at the current count of failures, by its own hint when it has one. */
  retryDelayMs(hintMs: number | undefined): number {
    return retryDelayMs(this.options.retryPolicy, this.failures, hintMs, this.options.random());
  }

  /** Bookkeeping for readiness: deliveries are progress; dead-letters with no delivery in between add up. */
  progressed(delivered: number, deadLettered: number): void {
    if (delivered > 0) {
      this.lastProgressMs = this.options.clock.monotonicMs();
      this.deadLetteredSinceDelivery = 0;
    }
    this.deadLetteredSinceDelivery += deadLettered;
  }

  /** A send with nothing to retry: the failure count starts again (and the sink is said to have recovered). */
  recovered(): void {
    if (this.failures > 0)
      this.options.logger.info({ sink: this.options.sink, afterAttempts: this.failures }, "sink recovered");
    this.failures = 0;
    this.failingSinceMs = null;
    this.lastError = null;
    this.needsOperator = null;
    this.options.metrics.sinkFailing.set({ sink: this.options.sink }, 0);
  }
}
