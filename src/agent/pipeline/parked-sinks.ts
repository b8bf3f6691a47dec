// Says what became of the sinks the last run had and this one does not (parked: their records wait) or has again
// (resumed), at start: a warning per parked sink (with the command that gives it up, runnable as printed), an info line
// per resumed one, and the parked-records gauge.
import type { Logger } from "pino";
import type { ParkedSink } from "../delivery/outbox.js";
import type { AgentMetrics } from "../observability/metrics.js";
import { sefCommandHint } from "../util/sef-command-hint.js";

export function reportParkedSinks(
  before: readonly ParkedSink[],
  after: readonly ParkedSink[],
  dataDir: string,
  logger: Logger,
  metrics: AgentMetrics,
): void {
  const stillParked = new Set(after.map((p) => p.sink));
  for (const p of before) {
    if (!stillParked.has(p.sink) && p.pending > 0)
      logger.info({ sink: p.sink, records: p.pending }, "sink configured again: resuming the records parked for it");
  }
  for (const p of after) {
    logger.warn(
      { sink: p.sink, records: p.pending, deadLettered: p.deadLettered },
      `sink ${p.sink} is no longer configured: its ${p.pending} pending records are parked (kept, counted toward maxOutboxBytes) until a sink of that name returns; give them up (with the agent stopped) with: ${sefCommandHint(["outbox", "drop-sink", p.sink], dataDir)}`,
    );
  }
  metrics.setParked(after);
}
