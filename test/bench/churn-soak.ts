// Under churn (issue 26): (1) the time of one document change as the agent pays it (the collect stage: collector,
// store transaction with its records, adoption) with about 100 and 10,000 emitted keys kept, at synchronous=FULL,
// without fsync, and the collector's part alone; (2) a soak of the packaged agent (bin/sef run, jsonl sink, 1 Hz) while the simulator brings two new events every
// 5 s, each going Scheduled → Started → gone: RSS sampled every 10 s, its slope over the last three quarters, and
// every transition delivered once. Not part of `npm test`.
// `npx tsx test/bench/churn-soak.ts` (SEF_BENCH_CHURN_SECONDS, default 300; the full method is 3600).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { Store } from "../../src/agent/store/store.js";
import { Outbox } from "../../src/agent/delivery/outbox.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { CommitStage } from "../../src/agent/pipeline/commit-stage.js";
import { CollectStage } from "../../src/agent/pipeline/collect-stage.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { systemClock, type Clock } from "../../src/runtime/clock.js";
import type { ScheduledEventsDocument } from "../../src/agent/imds/document.js";
import { unknownVmIdentity } from "../../src/contract/record.js";
import { applyDocument } from "../../src/agent/collector/transitions.js";
import { emptyCollectorState, type CollectorState } from "../../src/agent/collector/state.js";
import { EmittedKeys } from "../../src/agent/collector/emitted-keys.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { rssMb, stopChild, unpackAgent } from "./idle-vs-python.js";
import { trendOf } from "./trend.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 3): number => Math.round(n * 10 ** digits) / 10 ** digits;

export interface ChangeTiming {
  readonly retainedKeys: number;
  /** Median and p99 time of one change as the agent pays it (collector, store write, adoption), in ms. */
  readonly medianMs: number;
  readonly p99Ms: number;
  /** The same with `synchronous=OFF`: no fsync, so what is left is JavaScript and SQLite's own work. */
  readonly noFsyncMedianMs: number;
  readonly noFsyncP99Ms: number;
  /** The collector's part alone (applyDocument, settle, keepOnlyEvents; 2,000 changes): pure JavaScript. */
  readonly collectorMedianMs: number;
  readonly collectorP99Ms: number;
  /** Emitted keys in the store's table after the last change (steady state: about `retainedKeys`). */
  readonly keysAtEnd: number;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const day = 86_400_000;
/** Samples within this many seconds share their error: one tooth of V8's saw-tooth under the soak's churn (~18 min). */
const sawToothLagSeconds = 20 * 60;
/** Keys one change of the churn below expires and creates in steady state: two events × three statuses. */
const keysPerChange = 6;

/** The soak's churn as documents: each change ends the Started events, starts the Scheduled ones, adds two. */
function* churnDocuments(): Generator<ScheduledEventsDocument> {
  let live: Array<{ id: string; status: "Scheduled" | "Started" }> = [];
  for (let n = 0, incarnation = 1; ; incarnation++) {
    live = live.filter((e) => e.status === "Scheduled").map((e) => ({ ...e, status: "Started" as const }));
    for (let k = 0; k < 2; k++)
      live.push({ id: `bench-${String(++n).padStart(8, "0")}-0000-4000-8000-000000000000`, status: "Scheduled" });
    const events = live.map(({ id, status }) => ({
      EventId: id,
      EventStatus: status,
      EventType: "Freeze" as const,
      ResourceType: "VirtualMachine" as const,
      Resources: ["WestNO_0"],
      NotBefore: status === "Scheduled" ? "Mon, 30 Nov 2026 10:00:00 GMT" : null,
      Description: "",
      EventSource: "Platform" as const,
      DurationInSeconds: 5,
    }));
    yield { DocumentIncarnation: incarnation, Events: events };
  }
}

/**
 * Time of one change with about `retainedKeys` emitted keys kept, as the agent pays it: the collect stage's ingest
 * (collector, store transaction with its record, adoption) on a real store file. The keys kept are spread over the
 * last 7 days and the clock moves so that each change expires about as many keys as it creates (steady state).
 */
export function benchChangeTime(
  retainedKeys: number,
  changes = 200,
  synchronous: "FULL" | "OFF" = "FULL",
): { medianMs: number; p99Ms: number; keysAtEnd: number } {
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-change-"));
  const store = Store.open({ dataDir: dir, checkpointInWorker: false });
  try {
    store.database.exec(`PRAGMA synchronous = ${synchronous}`);
    const outbox = Outbox.open(store);
    outbox.registerSinks(["bench"]);
    const stepMs = Math.floor((7 * day * keysPerChange) / retainedKeys);
    const t0 = Date.parse("2026-11-23T10:00:00Z");
    const insert = store.database.prepare("INSERT INTO emitted(key, emitted_ms, ended_ms) VALUES (?, ?, ?)");
    store.write(() => {
      for (let i = 0; i < retainedKeys; i++)
        insert.run(`old-${i}|Completed`, t0 - 8 * day, t0 - 7 * day + Math.floor((i * stepMs) / keysPerChange) + 1);
    });
    const logger = pino({ level: "silent" });
    const metrics = new AgentMetrics();
    let nowMs = t0;
    const clock: Clock = { ...systemClock, now: () => nowMs };
    const commit = new CommitStage({
      outbox,
      deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
      metrics,
      logger,
      clock,
      maxOutboxBytes: 1 << 30,
    });
    const config = { gapThresholdMs: 10_000, pollIntervalMs: 1000, emittedRetentionMs: 7 * day };
    const collect = new CollectStage(outbox.collectorState.load(), {
      config,
      commit,
      vm: () => ({ ...unknownVmIdentity, AgentId: "00000000-0000-4000-8000-000000000001" }),
      agentVersion: "bench",
      metrics,
      logger,
      recallEmitted: (wanted) => outbox.collectorState.emittedKeysOf(wanted),
    });
    const timings: number[] = [];
    const warmUp = 20;
    const documents = churnDocuments();
    for (let i = 0; i < warmUp + changes; i++) {
      nowMs += stepMs;
      const document = documents.next().value!;
      const started = performance.now();
      collect.ingest(document, nowMs, 0);
      if (i >= warmUp) timings.push(performance.now() - started);
    }
    const kept = store.database.prepare("SELECT count(*) AS n FROM emitted").get() as { n: number };
    return { medianMs: round(percentile(timings, 50)), p99Ms: round(percentile(timings, 99)), keysAtEnd: kept.n };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The collector's own part of a change (applyDocument and the adoption's settle), without the store, in ms. */
export function benchCollectorTime(retainedKeys: number, changes = 2000): { medianMs: number; p99Ms: number } {
  const stepMs = Math.floor((7 * day * keysPerChange) / retainedKeys);
  const t0 = Date.parse("2026-11-23T10:00:00Z");
  const kept = Array.from(
    { length: retainedKeys },
    (_, i) =>
      [
        `old-${i}|Completed`,
        { emittedMs: t0 - 8 * day, endedMs: t0 - 7 * day + Math.floor((i * stepMs) / keysPerChange) + 1 },
      ] as const,
  );
  let state: CollectorState = { ...emptyCollectorState(), emitted: EmittedKeys.from(kept) };
  const ctx = {
    vm: { ...unknownVmIdentity, AgentId: "00000000-0000-4000-8000-000000000001" },
    agentVersion: "bench",
    gapThresholdMs: 10_000,
    emittedRetentionMs: 7 * day,
  };
  const documents = churnDocuments();
  const timings: number[] = [];
  const warmUp = 200;
  for (let i = 0, nowMs = t0; i < warmUp + changes; i++) {
    nowMs += stepMs;
    const document = documents.next().value!;
    const started = performance.now();
    const result = applyDocument(state, document, { ...ctx, nowMs });
    result.state.emitted.settle();
    result.state.emitted.keepOnlyEvents(result.state.events);
    if (i >= warmUp) timings.push(performance.now() - started);
    state = result.state;
  }
  return { medianMs: round(percentile(timings, 50)), p99Ms: round(percentile(timings, 99)) };
}

/** Change time at `retainedKeys`, with fsync (as configured) and without, and the collector's part alone. */
export function benchCommitTime(retainedKeys: number, changes = 200): ChangeTiming {
  const full = benchChangeTime(retainedKeys, changes, "FULL");
  const noFsync = benchChangeTime(retainedKeys, changes, "OFF");
  const collector = benchCollectorTime(retainedKeys);
  return {
    retainedKeys,
    medianMs: full.medianMs,
    p99Ms: full.p99Ms,
    noFsyncMedianMs: noFsync.medianMs,
    noFsyncP99Ms: noFsync.p99Ms,
    collectorMedianMs: collector.medianMs,
    collectorP99Ms: collector.p99Ms,
    keysAtEnd: full.keysAtEnd,
  };
}

export interface SoakResult {
  readonly seconds: number;
  readonly events: number;
  readonly transitionsExpected: number;
  readonly transitionsDelivered: number;
  /** Lines of the jsonl file that do not parse (a torn write would show here). */
  readonly tornLines: number;
  readonly rssStartMb: number;
  readonly rssEndMb: number;
  readonly rssPeakMb: number;
  /** Least-squares slope of RSS over the last three quarters of the run, MB per hour. */
  readonly rssSlopeMbPerHour: number;
  /** Its noise: two Newey–West standard errors over a 20-minute lag (trend.ts), MB per hour. */
  readonly rssSlopeNoiseMbPerHour: number;
  /** The target: the slope within its noise. */
  readonly rssFlat: boolean;
  readonly samples: ReadonlyArray<readonly [number, number]>;
}

interface LiveEvent {
  readonly id: string;
  phase: "Scheduled" | "Started";
}

/** The soak: `seconds` of churn, two new events every `everyS` seconds. */
export async function benchChurnSoak(seconds: number, everyS = 5, freshBundle = false): Promise<SoakResult> {
  const scratch = mkdtempSync(join(tmpdir(), "sef-bench-churn-"));
  const sim = await startSimulator({ scenario: "idle" });
  try {
    const unpacked = await unpackAgent(scratch, freshBundle);
    const jsonl = join(scratch, "records.jsonl");
    const env = { ...process.env, NODE_ENV: "production", CACHE_DIRECTORY: join(scratch, "cache") };
    const agent = spawn(
      join(unpacked, "bin", "sef"),
      [
        "run",
        "--imds-url",
        sim.url,
        "--poll-interval-ms",
        "1000",
        "--data-dir",
        join(scratch, "data"),
        "--sink",
        `jsonl:${jsonl}`,
        "--log-level",
        "warn",
        "--metrics-port",
        "0",
      ],
      { stdio: "ignore", env },
    );
    const live: LiveEvent[] = [];
    const samples: Array<readonly [number, number]> = [];
    let events = 0;
    let canceledAtEnd = 0;
    try {
      await sleep(5000); // start-up
      const startedMs = performance.now();
      let nextSampleMs = 0;
      while (performance.now() - startedMs < seconds * 1000) {
        // Started → gone, Scheduled → Started, then two new Scheduled events.
        for (let i = live.length - 1; i >= 0; i--) if (live[i]!.phase === "Started") live.splice(i, 1);
        for (const e of live) e.phase = "Started";
        for (let k = 0; k < 2; k++)
          live.push({
            id: `churn-${String(++events).padStart(6, "0")}-0000-4000-8000-000000000000`,
            phase: "Scheduled",
          });
        sim.setEvents(
          live.map((e) => ({
            EventId: e.id,
            EventType: "Freeze",
            Resources: ["WestNO_0"],
            EventStatus: e.phase,
            notBeforeInSeconds: 86_400,
          })),
        );
        const elapsedMs = performance.now() - startedMs;
        if (elapsedMs >= nextSampleMs) {
          samples.push([round(elapsedMs / 1000, 1), rssMb(agent.pid!)]);
          nextSampleMs += 10_000;
        }
        await sleep(everyS * 1000);
      }
      // Let the last events end and be delivered (those still Scheduled end Canceled: two transitions, not three).
      canceledAtEnd = live.filter((e) => e.phase === "Scheduled").length;
      live.length = 0;
      sim.setEvents([]);
      await sleep(5000);
      samples.push([round((performance.now() - startedMs) / 1000, 1), rssMb(agent.pid!)]);
    } finally {
      await stopChild(agent);
    }
    const lines = existsSync(jsonl)
      ? readFileSync(jsonl, "utf8")
          .split("\n")
          .filter((l) => l !== "")
      : [];
    let torn = 0;
    let transitions = 0;
    for (const line of lines) {
      try {
        if ((JSON.parse(line) as { RecordType?: string }).RecordType === "Transition") transitions++;
      } catch {
        torn++;
      }
    }
    const lastThreeQuarters = samples.filter(([t]) => t >= samples.at(-1)![0] / 4);
    const trend = trendOf(lastThreeQuarters, sawToothLagSeconds);
    return {
      seconds,
      events,
      transitionsExpected: events * 3 - canceledAtEnd,
      transitionsDelivered: transitions,
      tornLines: torn,
      rssStartMb: samples[0]![1],
      rssEndMb: samples.at(-1)![1],
      rssPeakMb: Math.max(...samples.map(([, r]) => r)),
      rssSlopeMbPerHour: round(trend.slope * 3600, 2),
      rssSlopeNoiseMbPerHour: round(trend.noise * 3600, 2),
      rssFlat: Math.abs(trend.slope) <= trend.noise,
      samples,
    };
  } finally {
    await sim.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const changeTimes = [100, 10_000].map((n) => benchCommitTime(n));
  console.log(JSON.stringify({ changeTimes }, null, 2));
  const seconds = Number(process.env.SEF_BENCH_CHURN_SECONDS ?? 300);
  if (seconds > 0) {
    const soak = await benchChurnSoak(seconds, 5, process.env.SEF_BENCH_CHURN_FRESH_BUNDLE === "1");
    console.log(JSON.stringify({ soak: { ...soak, samples: soak.samples.length } }, null, 2));
    console.log(JSON.stringify({ rssSamples: soak.samples }));
  }
  process.exit(0);
}
