// Under churn (issue 26): (1) a micro-benchmark of the store, the time of one document's commit with 100 and 10,000
// emitted keys retained, the delta write of today against the full rewrite it replaced (DELETE + INSERT per key);
// (2) a soak of the packaged agent (bin/sef run, jsonl sink, 1 Hz) while the simulator brings two new events every
// 5 s, each going Scheduled → Started → gone: RSS sampled every 10 s, its slope over the last three quarters, and
// every transition delivered once. Not part of `npm test`.
// `npx tsx test/bench/churn-soak.ts` (SEF_BENCH_CHURN_SECONDS, default 300; the full method is 3600).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { openOutbox } from "../helpers/outbox.js";
import { emptyCollectorState, type CollectorState, type EmittedKey } from "../../src/agent/collector/state.js";
import type { HeartbeatRecord } from "../../src/contract/record.js";
import { unknownVmIdentity } from "../../src/contract/record.js";
import { startSimulator } from "../../src/testbed/simulator/server.js";
import { rssMb, stopChild, unpackAgent } from "./idle-vs-python.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (n: number, digits = 3): number => Math.round(n * 10 ** digits) / 10 ** digits;

export interface CommitTiming {
  readonly retainedKeys: number;
  /** Median and p99 time of one commit (one new key and one record), in ms, with today's delta write. */
  readonly deltaMedianMs: number;
  readonly deltaP99Ms: number;
  /** The same commit done as before: DELETE FROM emitted and one INSERT per key. */
  readonly fullRewriteMedianMs: number;
}

const record = (i: number): HeartbeatRecord => ({
  RecordId: `churn-${i}`,
  RecordType: "Heartbeat",
  TimeGenerated: new Date(1_700_000_000_000 + i).toISOString(),
  ObservedAt: new Date(1_700_000_000_000 + i).toISOString(),
  ...unknownVmIdentity,
  AgentId: "00000000-0000-4000-8000-000000000001",
  AgentVersion: "bench",
  Detail: "",
});

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Commit time per change with `retainedKeys` ended keys kept: `commits` changes, each one new key and one record. */
export function benchCommitTime(retainedKeys: number, commits = 200): CommitTiming {
  const dir = mkdtempSync(join(tmpdir(), "sef-bench-commit-"));
  const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30, checkpointInWorker: false });
  try {
    // One map changed in place: the collector's own copy per document (applyDocument) is its cost, not the store's, and
    // a new 10,000-key map per change would put its garbage collection inside the timed commits.
    const emitted = new Map<string, EmittedKey>(Array.from({ length: retainedKeys }, (_, i) => [`old-${i}|Completed`, { emittedMs: i, endedMs: i + 1 }]));
    const state = (incarnation: number): CollectorState => ({ ...emptyCollectorState(), lastIncarnation: incarnation, lastSuccessMs: incarnation, emitted });
    store.commitDocument(state(0), [], 0);
    const delta: number[] = [];
    for (let i = 1; i <= commits; i++) {
      emitted.set(`new-${i}|Scheduled`, { emittedMs: i, endedMs: null });
      const started = performance.now();
      store.commitDocument(state(i), [record(i)], i);
      delta.push(performance.now() - started);
    }
    // The write it replaced, on the same database and keys.
    const db = store.opened.database;
    const insert = db.prepare("INSERT INTO emitted(key, emitted_ms, ended_ms) VALUES (?, ?, ?)");
    const full: number[] = [];
    for (let i = 1; i <= Math.min(commits, 50); i++) {
      emitted.set(`full-${i}|Scheduled`, { emittedMs: i, endedMs: null });
      const started = performance.now();
      db.exec("BEGIN IMMEDIATE");
      db.exec("DELETE FROM emitted");
      for (const [key, e] of emitted) insert.run(key, e.emittedMs, e.endedMs);
      db.exec("COMMIT");
      full.push(performance.now() - started);
    }
    return {
      retainedKeys,
      deltaMedianMs: round(percentile(delta, 50)),
      deltaP99Ms: round(percentile(delta, 99)),
      fullRewriteMedianMs: round(percentile(full, 50)),
    };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
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
  readonly samples: ReadonlyArray<readonly [number, number]>;
}

/** Least-squares slope of y over x. */
function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
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
      ["run", "--imds-url", sim.url, "--poll-interval-ms", "1000", "--data-dir", join(scratch, "data"), "--sink", `jsonl:${jsonl}`, "--log-level", "warn", "--metrics-port", "0"],
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
        for (let k = 0; k < 2; k++) live.push({ id: `churn-${String(++events).padStart(6, "0")}-0000-4000-8000-000000000000`, phase: "Scheduled" });
        sim.setEvents(live.map((e) => ({ EventId: e.id, EventType: "Freeze", Resources: ["WestNO_0"], EventStatus: e.phase, notBeforeInSeconds: 86_400 })));
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
    const lines = existsSync(jsonl) ? readFileSync(jsonl, "utf8").split("\n").filter((l) => l !== "") : [];
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
    return {
      seconds,
      events,
      transitionsExpected: events * 3 - canceledAtEnd,
      transitionsDelivered: transitions,
      tornLines: torn,
      rssStartMb: samples[0]![1],
      rssEndMb: samples.at(-1)![1],
      rssPeakMb: Math.max(...samples.map(([, r]) => r)),
      rssSlopeMbPerHour: round(slope(lastThreeQuarters) * 3600, 2),
      samples,
    };
  } finally {
    await sim.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const commitTimes = [100, 10_000].map((n) => benchCommitTime(n));
  console.log(JSON.stringify({ commitTimes }, null, 2));
  const seconds = Number(process.env.SEF_BENCH_CHURN_SECONDS ?? 300);
  if (seconds > 0) {
    const soak = await benchChurnSoak(seconds, 5, process.env.SEF_BENCH_CHURN_FRESH_BUNDLE === "1");
    console.log(JSON.stringify({ soak: { ...soak, samples: soak.samples.length } }, null, 2));
    console.log(JSON.stringify({ rssSamples: soak.samples }));
  }
  process.exit(0);
}
