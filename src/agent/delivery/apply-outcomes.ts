// Applying one send's outcomes: the sink's answer checked (a throw or a wrong count is a retry, never a delivery),
// the rejected records' dead-letter lines written, each record's ledger outcome and next attempt worked out, and all
// of it applied to the outbox in one transaction; the sent and dead-letter counters and the depth gauges follow.
import type { Logger } from "pino";
import type { Clock } from "@sef/runtime/clock.js";
import type { AgentMetrics } from "../observability/metrics.js";
import { allOutcomes, retry, type RecordOutcome, type SendOutcomes, type Sink } from "../sinks/sink.js";
import type { OutboxEntry } from "./outbox-entry.js";
import type { Outbox, LedgerOutcome } from "./outbox.js";
import type { DeadLetterFile } from "./dead-letter.js";
import type { SinkHealth } from "./sink-health.js";

export interface OutcomeApplierOptions {
  sink: Sink;
  outbox: Outbox;
  clock: Clock;
  deadLetters: DeadLetterFile;
  health: SinkHealth;
  logger: Logger;
  metrics: AgentMetrics;
}

type Retry = Extract<RecordOutcome, { kind: "retry" }>;

/** The sink's outcomes, one per record; a throw or a wrong count becomes `retry` (never `delivered`). */
export async function sendChecked(
  sink: Sink,
  batch: readonly OutboxEntry[],
  signal: AbortSignal,
): Promise<SendOutcomes> {
  let outcomes: SendOutcomes;
  try {
    outcomes = await sink.send(batch, signal);
  } catch (err) {
    return allOutcomes(batch, retry(`sink threw: ${(err as Error).message}`));
  }
  if (outcomes.length !== batch.length) {
    return allOutcomes(batch, retry(`sink returned ${outcomes.length} outcomes for ${batch.length} records`));
  }
  return outcomes;
}

/** A rejection's reason as the dead-letter file and the ledger keep it (never empty). */
export function rejectionReason(outcome: { reason: string }): string {
  return outcome.reason.trim() === "" ? "rejected without a reason" : outcome.reason;
}

/** The longest server hint among the retries (undefined when none gave one). */
export function longestHintMs(retries: readonly Retry[]): number | undefined {
  return retries.reduce<number | undefined>(
    (max, o) => (o.afterMs === undefined ? max : Math.max(max ?? 0, o.afterMs)),
    undefined,
  );
}

export class OutcomeApplier {
  constructor(private readonly options: OutcomeApplierOptions) {}

  /**
   * Applies a send's outcomes; never throws. Returns how long to wait before the next send when a record is to be
   * retried (also when the store could not be written: the records stay pending).
   */
  async apply(batch: readonly OutboxEntry[], outcomes: SendOutcomes): Promise<number | undefined> {
    let retryAfterMs: number | undefined;
    try {
      retryAfterMs = await this.applyToLedger(batch, outcomes);
    } catch (err) {
      // The store could not be written (disk full?): the records stay pending; try again after a backoff.
      retryAfterMs = this.options.health.failed(
        `could not record the outcome of a send: ${(err as Error).message}`,
        undefined,
      );
    }
    try {
      this.updateDepthMetrics();
    } catch (err) {
      this.options.logger.warn({ err, sink: this.options.sink.name }, "could not read the outbox depth");
    }
    return retryAfterMs;
  }

  /**
   * The dead-letter lines of the rejected records go to disk first (if that file cannot be written they stay pending
   * and are retried), then every outcome to the ledger in one transaction.
   */
  private async applyToLedger(batch: readonly OutboxEntry[], outcomes: SendOutcomes): Promise<number | undefined> {
    const { sink, outbox, metrics, clock, deadLetters, logger, health } = this.options;
    // Next-attempt times are monotonic (a wall-clock step never delays a retry); the outbox resets them at open.
    const nowMs = clock.monotonicMs();
    const rejectedItems = batch.flatMap((entry, i) => {
      const o = outcomes[i]!;
      return o.kind === "rejected" ? [{ entry, reason: rejectionReason(o) }] : [];
    });
    let deadLetterError: string | undefined;
    try {
      await deadLetters.write(sink.name, rejectedItems, nowMs);
    } catch (err) {
      deadLetterError = `could not write the dead-letter file ${deadLetters.pathFor(sink.name)}: ${(err as Error).message}`;
    }
    const retries = outcomes.filter((o): o is Retry => o.kind === "retry");
    const failure = retries[0]?.reason ?? deadLetterError;
    const needsOperator = retries.find((o) => o.needsOperator)?.reason ?? null;
    const delayMs = failure === undefined ? undefined : health.failed(failure, longestHintMs(retries), needsOperator);
    const ledgerOutcomes: LedgerOutcome[] = batch.map((entry, i) => {
      const o = outcomes[i]!;
      if (o.kind === "delivered") return { seq: entry.seq, kind: "delivered" };
      if (o.kind === "rejected") {
        if (deadLetterError !== undefined)
          return { seq: entry.seq, kind: "retry", reason: deadLetterError, nextAttemptMs: nowMs + delayMs! };
        return { seq: entry.seq, kind: "rejected", reason: rejectionReason(o) };
      }
      const recordDelayMs = o.afterMs === undefined ? delayMs! : health.retryDelayMs(o.afterMs);
      return { seq: entry.seq, kind: "retry", reason: o.reason, nextAttemptMs: nowMs + recordDelayMs };
    });
    const applied = outbox.applyOutcomes(sink.name, ledgerOutcomes, clock.now());
    health.progressed(applied.delivered, applied.rejected);
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
    if (failure === undefined) health.recovered();
    return delayMs;
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
}
