// Issue 26: what a change leaves on the V8 heap. The collect stage on a real store (no sink, no HTTP: the collector's
// own memory) ingests the churn soak's documents (each change ends the Started events, starts the Scheduled ones and
// adds two; 2.5 s apart) and prints the heap used after a full garbage collection every 2,000 changes. Not part of
// `npm test` or `npm run bench` (it needs a forced collection):
// `node --expose-gc --import tsx test/bench/heap-under-churn.ts [changes, default 20000]`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { Store } from "../../src/agent/store/store.js";
import { Outbox } from "../../src/agent/delivery/outbox.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { CommitStage } from "../../src/agent/pipeline/commit-stage.js";
import { CollectStage } from "../../src/agent/pipeline/collect-stage.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { systemClock } from "../../src/runtime/clock.js";
import type { ImdsEvent } from "../../src/agent/imds/document.js";
import type { EmittedToRecall } from "../../src/agent/collector/transitions.js";
import { unknownVmIdentity } from "../../src/contract/record.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc --import tsx test/bench/heap-under-churn.ts");
const changes = Number(process.argv[2] ?? 20_000);
const dir = mkdtempSync(join(tmpdir(), "sef-bench-heap-"));
const store = Store.open({ dataDir: dir, checkpointInWorker: false });
try {
  const outbox = Outbox.open(store);
  const logger = pino({ level: "silent" });
  const metrics = new AgentMetrics();
  let nowMs = Date.parse("2026-11-23T10:00:00Z");
  const clock = { ...systemClock, now: () => nowMs };
  const commit = new CommitStage({
    outbox,
    deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
    metrics,
    logger,
    clock,
    maxOutboxBytes: 1 << 30,
  });
  const config = { gapThresholdMs: 10_000, pollIntervalMs: 1000, emittedRetentionMs: 0 };
  const vm = { ...unknownVmIdentity, AgentId: "00000000-0000-4000-8000-000000000001" };
  const recallEmitted = (wanted: EmittedToRecall) => outbox.collectorState.emittedKeysOf(wanted);
  const collect = new CollectStage(outbox.collectorState.load(), {
    config,
    commit,
    vm: () => vm,
    agentVersion: "bench",
    metrics,
    logger,
    recallEmitted,
  });
  let live: Array<{ id: string; status: "Scheduled" | "Started" }> = [];
  let events = 0;
  for (let i = 1; i <= changes; i++) {
    nowMs += 2500;
    live = live.filter((e) => e.status !== "Started");
    for (const e of live) e.status = "Started";
    for (let k = 0; k < 2; k++)
      live.push({ id: `churn-${String(++events).padStart(6, "0")}-0000-4000-8000-000000000000`, status: "Scheduled" });
    const documentEvents: ImdsEvent[] = live.map((e) => ({
      EventId: e.id,
      EventStatus: e.status,
      EventType: "Freeze",
      ResourceType: "VirtualMachine",
      Resources: ["x"],
      NotBefore: null,
      Description: "",
      EventSource: "Platform",
      DurationInSeconds: 5,
    }));
    collect.ingest({ DocumentIncarnation: i, Events: documentEvents }, nowMs, 0);
    if (i % 2000 === 0) {
      gc();
      console.log(
        JSON.stringify({
          changes: i,
          events,
          heapUsedKb: Math.round(process.memoryUsage().heapUsed / 1024),
          keysInMemory: collect.state.emitted.size,
        }),
      );
    }
  }
} finally {
  store.close();
  rmSync(dir, { recursive: true, force: true });
}
