// Reading one sink's next batch from the outbox: a backlog's full batches go out pipelined (read past the records
// still in flight, up to the sink's depth); a batch that is not full lingers for more unless it holds an urgent record;
// with nothing due it waits for new records or the next attempt. It decides what to send; the drainer sends it.
import type { Clock } from "@sef/runtime/clock.js";
import { isUrgent, type Sink } from "../sinks/sink.js";
import type { OutboxEntry } from "./outbox-entry.js";
import type { Outbox } from "./outbox.js";

/** What the drainer does next. */
export type NextBatch =
  /** Stopping, and nothing is due. */
  | { readonly kind: "stop" }
  /** Read again: a wait for records ended, the pipeline emptied, or a linger found nothing left. */
  | { readonly kind: "again" }
  /** A pipelined send asked for a retry: the pipeline has emptied; wait this long before the next send. */
  | { readonly kind: "backoff"; readonly retryAfterMs: number }
  /** A full batch of a backlog: send it without waiting for its answer (`BatchReader.pipeline`). */
  | { readonly kind: "pipeline"; readonly batch: readonly OutboxEntry[] }
  /** Send it and wait for its outcomes. */
  | { readonly kind: "send"; readonly batch: readonly OutboxEntry[] };

/** How the reader waits (the drainer's waits, which a stop ends at once). */
export interface BatchWaits {
  /** Until a new record comes, or `timeoutMs` passes (none: only a record). */
  forRecords(timeoutMs: number | undefined): Promise<void>;
  /** Until an urgent record comes, or `timeoutMs` passes: the linger. */
  forUrgent(timeoutMs: number): Promise<void>;
  /** Nothing waits for the sink (an idle sink is not a stalled one). */
  idle(): void;
}

export interface BatchReaderOptions {
  sink: Pick<Sink, "name" | "maxBatchRecords" | "lingerMs" | "maxConcurrentSends">;
  outbox: Pick<Outbox, "due" | "nextAttemptMs">;
  clock: Clock;
  waits: BatchWaits;
}

export class BatchReader {
  /** Sends of full batches still in flight. */
  private readonly inFlight = new Set<Promise<void>>();
  /** The last record handed to a send still in flight; the next batch is read after it. */
  private lastSeqInFlight = 0;
  /** The longest wait a pipelined send asked for before the next send (undefined: none asked). */
  private pipelinedRetryMs: number | undefined;
  private readonly depth: number;

  constructor(private readonly options: BatchReaderOptions) {
    this.depth = Math.max(1, Math.floor(options.sink.maxConcurrentSends ?? 1));
  }

  /**
   * The next step. `stopping`: what is due goes out one batch at a time, without pipelining or lingering, and "stop"
   * once nothing is. The outbox is read synchronously just before every wait, so no new record is missed.
   */
  async next(stopping: boolean): Promise<NextBatch> {
    const { sink, outbox, clock, waits } = this.options;
    if (this.pipelinedRetryMs !== undefined) {
      // A pipelined send asked for a retry: let the pipeline empty, then back off as after any failed send.
      await this.settled();
      const retryAfterMs = this.pipelinedRetryMs;
      this.pipelinedRetryMs = undefined;
      return { kind: "backoff", retryAfterMs };
    }
    // While full batches are in flight, the next one is read past the last record they took (they are still pending).
    const afterSeq = this.inFlight.size > 0 ? this.lastSeqInFlight : 0;
    const batch = outbox.due(sink.name, sink.maxBatchRecords, clock.monotonicMs(), afterSeq);
    if (this.inFlight.size > 0 && (batch.length < sink.maxBatchRecords || stopping)) {
      // The backlog's tail (or a stop): let the pipeline empty, then carry on one send at a time.
      await this.settled();
      return { kind: "again" };
    }
    if (batch.length === 0) {
      if (stopping) return { kind: "stop" };
      // Nothing due: wait for new records, or for the earliest pending record's next attempt.
      const nextMs = outbox.nextAttemptMs(sink.name);
      if (nextMs === null) waits.idle();
      await waits.forRecords(nextMs === null ? undefined : Math.max(1, nextMs - clock.monotonicMs()));
      return { kind: "again" };
    }
    if (batch.length === sink.maxBatchRecords && !stopping) return { kind: "pipeline", batch };
    // Not full (a full one was pipelined above, unless stopping): linger for more, unless stopping or it is urgent.
    if (!stopping && sink.lingerMs > 0 && !batch.some((e) => isUrgent(e.record))) {
      await waits.forUrgent(sink.lingerMs);
      const fuller = outbox.due(sink.name, sink.maxBatchRecords, clock.monotonicMs());
      return fuller.length === 0 ? { kind: "again" } : { kind: "send", batch: fuller };
    }
    return { kind: "send", batch };
  }

  /**
   * Starts `send` of a full batch and returns once the pipeline has room for the next (at once below the sink's
   * depth). `send` resolves to the wait it asks for before the next send, if any.
   */
  async pipeline(batch: readonly OutboxEntry[], send: () => Promise<number | undefined>): Promise<void> {
    this.lastSeqInFlight = batch[batch.length - 1]!.seq;
    const sending: Promise<void> = send().then((retryAfterMs) => {
      this.inFlight.delete(sending);
      if (retryAfterMs !== undefined) this.pipelinedRetryMs = Math.max(this.pipelinedRetryMs ?? 0, retryAfterMs);
    });
    this.inFlight.add(sending);
    if (this.inFlight.size >= this.depth) await Promise.race(this.inFlight);
  }

  /** Every send still in flight, ended (stopping: they finish or see the abort, and their outcomes are applied). */
  async settled(): Promise<void> {
    await Promise.all(this.inFlight);
  }
}
