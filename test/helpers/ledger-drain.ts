// Drains records through the real ledger and the real drainer (a fresh store in a temporary directory), on a clock
// whose sleeps pass at once: what a sink test needs to see per-record outcomes applied, retries and dead-letters.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openOutbox } from "./outbox.js";
import { Drainer } from "../../src/agent/delivery/drainer.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import type { SendOutcomes, Sink } from "../../src/agent/sinks/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";
import type { RetryPolicy } from "../../src/retry/policy.js";
import type { Clock } from "../../src/runtime/clock.js";
import { instantClock } from "./fake-clock.js";

export interface LedgerDrainResult {
  /** Dead-lettered records, by the seq of the entry the test passed in, with the reason. */
  readonly rejected: { seq: number; reason: string }[];
  /** Sends the drainer made. */
  readonly attempts: number;
  /** Each send's outcomes, in order. */
  readonly results: SendOutcomes[];
  /** Each wait of the drainer between sends (retry backoffs), in milliseconds. */
  readonly waitsMs: number[];
  /** Records the sink was handed, by the test's seqs, per send. */
  readonly sentSeqs: number[][];
}

/**
 * Appends the entries' records to a fresh store, drains them to `sink` with a real Drainer until nothing is pending,
 * and reports what happened. The sink is not closed. Throws when the records are not settled within `maxAttempts`.
 */
export async function drainThroughLedger(
  sink: Sink,
  all: readonly OutboxEntry[],
  options: { clock?: Clock; retryPolicy?: RetryPolicy; maxAttempts?: number; deadlineMs?: number } = {},
): Promise<LedgerDrainResult> {
  const dir = mkdtempSync(join(tmpdir(), "sef-ledger-drain-"));
  const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
  const baseClock = options.clock ?? instantClock();
  const waitsMs: number[] = [];
  const clock: Clock = {
    now: () => baseClock.now(),
    monotonicMs: () => baseClock.monotonicMs(),
    sleep: (ms, signal) => {
      waitsMs.push(ms);
      return baseClock.sleep(ms, signal);
    },
  };
  const results: SendOutcomes[] = [];
  const sentSeqs: number[][] = [];
  const testSeq = new Map<number, number>();
  const counting: Sink = {
    name: sink.name,
    maxBatchRecords: sink.maxBatchRecords,
    lingerMs: 0,
    send: async (batch, signal) => {
      sentSeqs.push(batch.map((e) => testSeq.get(e.seq) ?? e.seq));
      const outcomes = await sink.send(
        batch.map((e) => ({ ...e, seq: testSeq.get(e.seq) ?? e.seq })),
        signal,
      );
      results.push(outcomes);
      return outcomes;
    },
    close: async () => {},
  };
  store.registerSinks([sink.name]);
  const appended = store.append(
    all.map((e) => e.record),
    baseClock.now(),
  );
  appended.forEach((e, i) => testSeq.set(e.seq, all[i]!.seq));
  const drainer = new Drainer({
    sink: counting,
    outbox: store,
    clock,
    retryPolicy: options.retryPolicy ?? { initialDelayMs: 10, maxDelayMs: 300_000, multiplier: 2 },
    deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
    logger: silentLogger(),
    metrics: new AgentMetrics(),
    random: () => 0,
  });
  drainer.start();
  drainer.notify(true);
  const deadline = Date.now() + (options.deadlineMs ?? 20_000);
  try {
    while (store.depth(sink.name).records > 0) {
      if (results.length > (options.maxAttempts ?? 50)) throw new Error(`not drained after ${results.length} attempts`);
      if (Date.now() > deadline)
        throw new Error(
          `not drained in time (${store.depth(sink.name).records} pending after ${results.length} sends)`,
        );
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  } finally {
    await drainer.stop(baseClock.monotonicMs());
  }
  const rejected = store.deadLetters(sink.name).map((d) => ({ seq: testSeq.get(d.seq) ?? d.seq, reason: d.reason }));
  store.close();
  return { rejected, attempts: results.length, results, waitsMs, sentSeqs };
}
