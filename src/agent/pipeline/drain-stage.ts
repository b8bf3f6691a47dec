// Drain stage: one Drainer (delivery/drainer.ts) per sink over the shared outbox, each with its sink's retry policy.
// Follows the records-committed signal (urgent records end a linger), reports each sink's health for /readyz and what
// is still undelivered, and flushes within a deadline at shutdown.
import { isUrgent, type Sink } from "../sinks/sink.js";
import type { OutboxEntry } from "../delivery/outbox-entry.js";
import { Drainer, type DrainerOptions } from "../delivery/drainer.js";
import type { RecordsCommitted } from "./records-committed.js";
import { sinkRetryPolicy } from "../sinks/delivery-settings.js";
import type { RetryPolicy } from "@sef/retry/policy.js";

export interface DrainStageOptions extends Omit<DrainerOptions, "sink" | "random"> {
  sinks: readonly Sink[];
  committed: RecordsCommitted;
}

export class DrainStage {
  readonly drainers: Drainer[];

  constructor(private readonly options: DrainStageOptions) {
    this.drainers = options.sinks.map(
      (sink) =>
        new Drainer({
          sink,
          outbox: options.outbox,
          clock: options.clock,
          retryPolicy: this.retryPolicyOf(sink),
          deadLetters: options.deadLetters,
          logger: options.logger,
          metrics: options.metrics,
        }),
    );
    options.committed.follow((entries) => this.wake(entries));
  }

  /** The policy a sink's drainer schedules its retries with: the sink's own fields over the agent's. */
  retryPolicyOf(sink: Pick<Sink, "retryPolicy">): RetryPolicy {
    return sinkRetryPolicy(this.options.retryPolicy, sink.retryPolicy);
  }

  start(): void {
    for (const drainer of this.drainers) drainer.start();
  }

  /** New entries are durable: wake every sink (an urgent record ends a linger). */
  wake(entries: readonly OutboxEntry[]): void {
    const urgent = entries.some((e) => isUrgent(e.record));
    for (const drainer of this.drainers) drainer.notify(urgent);
  }

  /**
   * Per sink, for /readyz (`nowMs` monotonic): how long it has delivered nothing while records wait for it, how many
   * records it dead-lettered since it last delivered one, and the reason of a failure that needs an operator.
   */
  sinkHealth(
    nowMs: number,
  ): Array<{ name: string; stuckForMs: number; deadLetteredSinceDelivery: number; needsOperator: string | null }> {
    return this.drainers.map((d) => {
      const status = d.status();
      const waiting = this.options.outbox.depth(d.name).records > 0;
      return {
        name: d.name,
        stuckForMs: waiting ? Math.max(0, nowMs - status.lastProgressMs) : 0,
        deadLetteredSinceDelivery: status.deadLetteredSinceDelivery,
        needsOperator: status.needsOperator,
      };
    });
  }

  /** Pending records per sink (O(1) counters). */
  undelivered(): Record<string, number> {
    return Object.fromEntries(this.drainers.map((d) => [d.name, this.options.outbox.depth(d.name).records]));
  }

  /** Lets each sink flush until `deadlineMs`, then closes them; what is left stays pending in the ledger. */
  async stop(deadlineMs: number): Promise<void> {
    await Promise.all(this.drainers.map((d) => d.stop(deadlineMs)));
  }
}
