// Drains a backlog the way the agent does: the records sit in a real store (pending for one sink) and the shared
// Drainer sends them and applies the per-record outcomes, on the system clock. Only the drain is timed.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openOutbox } from "../helpers/outbox.js";
import { Drainer } from "../../src/agent/delivery/drainer.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { silentLogger } from "../../src/agent/observability/logger.js";
import { defaultRetryPolicy } from "../../src/retry/policy.js";
import { systemClock } from "../../src/runtime/clock.js";
import type { Sink } from "../../src/agent/sinks/sink.js";
import type { OutboxEntry } from "../../src/agent/delivery/outbox-entry.js";

/** Appends `backlog` to a fresh store, then times the drainer until nothing is pending (or `timeoutMs` passes). */
export async function drainBacklogThroughLedger(
  sink: Sink,
  backlog: readonly OutboxEntry[],
  timeoutMs = 600_000,
): Promise<{ seconds: number; cpuMicroseconds: number }> {
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-ledger-"));
  const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
  store.registerSinks([sink.name]);
  for (let i = 0; i < backlog.length; i += 10_000)
    store.append(
      backlog.slice(i, i + 10_000).map((e) => e.record),
      Date.now(),
    );
  const drainer = new Drainer({
    sink: {
      name: sink.name,
      maxBatchRecords: sink.maxBatchRecords,
      lingerMs: 0,
      ...(sink.maxConcurrentSends === undefined ? {} : { maxConcurrentSends: sink.maxConcurrentSends }),
      send: (b, s) => sink.send(b, s),
      close: async () => {},
    },
    outbox: store,
    clock: systemClock,
    retryPolicy: defaultRetryPolicy,
    deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
    logger: silentLogger(),
    metrics: new AgentMetrics(),
  });
  const startedMs = performance.now();
  const cpuBefore = process.cpuUsage();
  drainer.start();
  drainer.notify(true);
  try {
    while (store.depth(sink.name).records > 0) {
      if (performance.now() - startedMs > timeoutMs)
        throw new Error(`${store.depth(sink.name).records} records still pending after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const cpu = process.cpuUsage(cpuBefore);
    const seconds = (performance.now() - startedMs) / 1000;
    const dead = store.status()[0]?.deadLettered ?? 0;
    if (dead > 0) throw new Error(`${dead} records dead-lettered during the bench`);
    return { seconds, cpuMicroseconds: cpu.user + cpu.system };
  } finally {
    await drainer.stop(systemClock.monotonicMs()); // the deadline is monotonic: stop now
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
