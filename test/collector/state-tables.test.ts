// The collector's emitted keys split between memory and the store (collector/emitted-keys.ts, collector/state-tables.ts,
// pipeline/collect-stage.ts) on a real SQLite file. The collect stage holds in memory only the keys of tracked events
// and recalls the rest from table `emitted` when an EventId is back; through any sequence of documents (events that
// come back, malformed sightings), failed polls, commits that fail, restarts and days passing, it emits exactly what a
// collector that never forgets emits, and its table holds exactly that collector's keys. A change never reads the
// table whole; a write after a transaction someone else rolled back sweeps it once.
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { propertyParams } from "../helpers/seed.js";
import pino from "pino";
import { emptyCollectorState, type CollectorState, type EmittedKey } from "../../src/agent/collector/state.js";
import { eventIdOfKey } from "../../src/agent/collector/emitted-keys.js";
import {
  applyDocument,
  applyPollFailure,
  resumeAfterRestart,
  type CollectContext,
  type EmittedToRecall,
} from "../../src/agent/collector/transitions.js";
import { Store } from "../../src/agent/store/store.js";
import { Outbox } from "../../src/agent/delivery/outbox.js";
import type { CollectorStateTables } from "../../src/agent/collector/state-tables.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { CommitStage } from "../../src/agent/pipeline/commit-stage.js";
import { CollectStage } from "../../src/agent/pipeline/collect-stage.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { systemClock } from "../../src/runtime/clock.js";
import type { ImdsEvent, MalformedImdsEvent, ScheduledEventsDocument } from "../../src/agent/imds/document.js";
import type { SefRecord } from "../../src/contract/record.js";
import { unknownVmIdentity } from "../../src/contract/record.js";

const day = 86_400_000;
const t0 = Date.parse("2026-11-23T10:00:00Z");
const vm = { ...unknownVmIdentity, AgentId: "00000000-0000-4000-8000-000000000001" };
const config = { gapThresholdMs: 10_000, pollIntervalMs: 1000, emittedRetentionMs: 0 };
/** What the collect stage hands the collector (config above, no clock step). */
const ctx = (nowMs: number): CollectContext => ({
  nowMs,
  vm,
  agentVersion: "t",
  gapThresholdMs: 10_000,
  emittedRetentionMs: 0,
});

/** Table `emitted` and the outbox's records as a second connection reads them. */
function tables(path: string): { emitted: Map<string, EmittedKey>; records: SefRecord[] } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT key, emitted_ms, ended_ms FROM emitted").all() as Array<{
      key: string;
      emitted_ms: number;
      ended_ms: number | null;
    }>;
    const records = db.prepare("SELECT json FROM outbox ORDER BY seq").all() as Array<{ json: string }>;
    return {
      emitted: new Map(rows.map((r) => [r.key, { emittedMs: r.emitted_ms, endedMs: r.ended_ms }])),
      records: records.map((r) => JSON.parse(r.json) as SefRecord),
    };
  } finally {
    db.close();
  }
}

/** A store, its outbox and a collect stage over them, as the agent wires them (the clock is the test's). */
function openAgent(
  dir: string,
  clock: { nowMs: number },
): { store: Store; tables: CollectorStateTables; collect: CollectStage } {
  const store = Store.open({ dataDir: dir, checkpointInWorker: false });
  const outbox = Outbox.open(store);
  const tables = outbox.collectorState;
  const logger = pino({ level: "silent" });
  const metrics = new AgentMetrics();
  const commit = new CommitStage({
    outbox,
    deadLetters: new DeadLetterFile(join(dir, "dead-letter")),
    metrics,
    logger,
    clock: { ...systemClock, now: () => clock.nowMs },
    maxOutboxBytes: 1 << 30,
  });
  const recallEmitted = (wanted: EmittedToRecall) => tables.emittedKeysOf(wanted);
  const collect = new CollectStage(tables.load(), {
    config,
    commit,
    vm: () => vm,
    agentVersion: "t",
    metrics,
    logger,
    recallEmitted,
  });
  return { store, tables, collect };
}

/** Ingests documents one second apart into whichever collect stage `agent()` returns (the agent may be reopened). */
function documentsInto(
  agent: () => { collect: CollectStage },
  clock: { nowMs: number },
): (incarnation: number, ...events: ImdsEvent[]) => boolean {
  return (incarnation, ...events) =>
    agent().collect.ingest({ DocumentIncarnation: incarnation, Events: events }, (clock.nowMs += 1000), 0);
}

const event = (id: string, status: "Scheduled" | "Started"): ImdsEvent => ({
  EventId: id,
  EventStatus: status,
  EventType: "Freeze",
  ResourceType: "VirtualMachine",
  Resources: ["x"],
  NotBefore: status === "Scheduled" ? new Date(t0 + day).toISOString() : null,
  Description: "",
  EventSource: "Platform",
  DurationInSeconds: 5,
});
const malformed = (index: number, eventId: string | null, variant: number): MalformedImdsEvent => ({
  index,
  eventId,
  reason: "event_id",
  problem: "Resources is not an array",
  raw: { EventId: eventId, Resources: `bad-${variant}` },
});

type Step =
  | {
      kind: "doc";
      events: Array<{ id: string; status: "Scheduled" | "Started" }>;
      malformed: Array<{ id: string | null; variant: number }>;
    }
  | { kind: "failedCommit" }
  | { kind: "fail" }
  | { kind: "restart" }
  | { kind: "days"; days: number };

const idArb = fc.constantFrom("e1", "e2", "E3", "e4");
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("doc" as const),
      events: fc.uniqueArray(
        fc.record({ id: idArb, status: fc.constantFrom("Scheduled" as const, "Started" as const) }),
        { selector: (e) => e.id.toLowerCase(), maxLength: 3 },
      ),
      malformed: fc.array(
        fc.record({ id: fc.option(fc.constantFrom("e1", "e5")), variant: fc.integer({ min: 0, max: 1 }) }),
        { maxLength: 1 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "failedCommit" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "fail" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "restart" as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("days" as const), days: fc.integer({ min: 1, max: 5 }) }) },
);

describe("emitted keys between memory and the store", () => {
  it("the collect stage emits what a collector that never forgets emits, and its table holds that collector's keys", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 30 }), (steps) => {
        const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
        const clock = { nowMs: t0 };
        let agent = openAgent(dir, clock);
        try {
          // The model: the pure collector holding every key in memory; `committed` is what its last commit wrote.
          let model: CollectorState = emptyCollectorState();
          let committedKeys = new Map<string, EmittedKey>();
          const records: SefRecord[] = [];
          let incarnation = 0;
          for (const step of steps) {
            clock.nowMs += 1000;
            if (step.kind === "days") clock.nowMs += step.days * day;
            else if (step.kind === "fail") {
              agent.collect.observationGap();
              model = applyPollFailure(model);
            } else if (step.kind === "restart") {
              agent.store.close();
              agent = openAgent(dir, clock);
              if (model.lastSuccessMs !== null) model = resumeAfterRestart(model);
            } else if (step.kind === "failedCommit") {
              // The store refuses the collector's write: the document changes nothing, in memory or on disk.
              const document: ScheduledEventsDocument = {
                DocumentIncarnation: ++incarnation,
                Events: [event("e4", "Started")],
              };
              const expected = applyDocument(model, document, ctx(clock.nowMs));
              agent.store.database.exec(
                "CREATE TEMP TRIGGER refuse BEFORE INSERT ON meta WHEN NEW.key = 'collector' BEGIN SELECT RAISE(ABORT, 'refused'); END",
              );
              try {
                if (expected.changed) expect(() => agent.collect.ingest(document, clock.nowMs, 0)).toThrow(/refused/);
                else expect(agent.collect.ingest(document, clock.nowMs, 0)).toBe(false);
              } finally {
                agent.store.database.exec("DROP TRIGGER refuse");
              }
              if (!expected.changed) model = expected.state;
            } else {
              const document: ScheduledEventsDocument = {
                DocumentIncarnation: ++incarnation,
                Events: step.events.map((e) => event(e.id, e.status)),
                Malformed: step.malformed.map((m, i) => malformed(step.events.length + i, m.id, m.variant)),
              };
              const result = applyDocument(model, document, ctx(clock.nowMs));
              if (result.changed) result.state.emitted.settle();
              model = result.state;
              if (result.changed) {
                records.push(...result.records, ...result.malformed);
                committedKeys = new Map(model.emitted);
              }
              expect(agent.collect.ingest(document, clock.nowMs, 0)).toBe(result.changed);
              // Memory: the keys of tracked events, and at most what this document recalled for the others.
              const tracked = agent.collect.state.events;
              const others = [...agent.collect.state.emitted].filter(([key]) => !tracked.has(eventIdOfKey(key)));
              if (result.changed) expect(others).toEqual([]);
            }
            const onDisk = tables(agent.store.path);
            expect(onDisk.records).toEqual(records);
            expect(onDisk.emitted).toEqual(committedKeys);
          }
          expect(agent.tables.tableSweeps).toBe(0);
        } finally {
          agent.store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      propertyParams(3301, 150),
    );
  });

  it("writes a change by the keys it touched whatever the history, expires by the index, and holds only tracked keys", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
    const clock = { nowMs: t0 };
    let agent = openAgent(dir, clock);
    try {
      const seed = agent.store.database.prepare("INSERT INTO emitted(key, emitted_ms, ended_ms) VALUES (?, ?, ?)");
      agent.store.write(() => {
        for (let i = 0; i < 10_000; i++) seed.run(`old${i}|Completed`, t0 - 8 * day, t0 - 7 * day + i * 60_000);
      });
      agent.store.close();
      agent = openAgent(dir, clock);
      expect(agent.collect.state.emitted.size).toBe(0); // the restart loaded no key of an event not tracked
      const plan = agent.store.database
        .prepare("EXPLAIN QUERY PLAN DELETE FROM emitted WHERE ended_ms < ?")
        .all(0) as Array<{ detail: string }>;
      expect(plan.map((p) => p.detail).join(" ")).toMatch(
        /USING COVERING INDEX emitted_by_end|USING INDEX emitted_by_end/,
      );
      for (let i = 1; i <= 20; i++) {
        clock.nowMs += 60 * 60_000; // an hour: 60 of the old keys expire at each change
        expect(
          agent.collect.ingest(
            { DocumentIncarnation: i, Events: [event(`n${i}`, "Scheduled"), event(`n${i - 1}`, "Started")] },
            clock.nowMs,
            0,
          ),
        ).toBe(true);
        expect([...agent.collect.state.emitted].map(([key]) => key).sort()).toEqual(
          [`n${i - 1}|Scheduled`, `n${i - 1}|Started`, `n${i}|Scheduled`].filter((k) => k !== "n0|Scheduled").sort(),
        );
      }
      const { emitted } = tables(agent.store.path);
      const expired = Math.ceil((clock.nowMs - t0) / 60_000); // old key i ended at t0 - 7 days + i minutes
      expect([...emitted.keys()].filter((k) => k.startsWith("old")).length).toBe(10_000 - expired);
      expect(emitted.get("n5|Completed")).toEqual({ emittedMs: t0 + 7 * 3_600_000, endedMs: t0 + 7 * 3_600_000 }); // gone from document 7
      expect(agent.tables.tableSweeps).toBe(0);
    } finally {
      agent.store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an EventId back after its keys left memory, even across a restart, is not reported again", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
    const clock = { nowMs: t0 };
    let agent = openAgent(dir, clock);
    try {
      const ingest = documentsInto(() => agent, clock);
      ingest(1, event("A", "Started"));
      ingest(2, event("B", "Scheduled"));
      expect([...agent.collect.state.emitted].map(([key]) => key)).toEqual(["b|Scheduled"]);
      agent.store.close();
      agent = openAgent(dir, clock);
      ingest(3, event("A", "Started"), event("B", "Scheduled"));
      ingest(4);
      const statuses = tables(agent.store.path).records.map(
        (r) => `${(r as { EventId: string }).EventId}:${(r as { EventStatus: string }).EventStatus}`,
      );
      expect(statuses).toEqual(["A:Started", "A:Completed", "B:Scheduled", "B:Canceled"]);
    } finally {
      agent.store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("after a transaction someone else rolled back, the next write sweeps the table once and ends the keys left open", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
    const clock = { nowMs: t0 };
    const agent = openAgent(dir, clock);
    try {
      const ingest = documentsInto(() => agent, clock);
      ingest(1, event("A", "Started"));
      const db = agent.store.database;
      db.exec("BEGIN IMMEDIATE");
      ingest(2); // A ends; the collector adopts that and forgets A's keys, but the transaction is rolled back
      db.exec("ROLLBACK");
      expect(tables(agent.store.path).emitted.get("a|Started")).toEqual({ emittedMs: t0 + 1000, endedMs: null });
      ingest(3, event("B", "Scheduled"));
      expect(agent.tables.tableSweeps).toBe(1);
      const { emitted } = tables(agent.store.path);
      expect(emitted.get("a|Started")).toEqual({ emittedMs: t0 + 1000, endedMs: t0 + 3000 });
      expect(emitted.get("b|Scheduled")).toEqual({ emittedMs: t0 + 3000, endedMs: null });
      ingest(4, event("B", "Started"));
      expect(agent.tables.tableSweeps).toBe(1);
      clock.nowMs += 8 * day;
      ingest(5, event("B", "Started"), event("C", "Scheduled"));
      expect([...tables(agent.store.path).emitted.keys()].sort()).toEqual(["b|Scheduled", "b|Started", "c|Scheduled"]);
    } finally {
      agent.store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
