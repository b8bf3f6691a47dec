// The collector state's change-set writes (store/collector-state.ts) on a real SQLite file: after any sequence of
// changes, commits adopted by the collector, failed commits (rolled back), commits inside a transaction someone else
// opened and ends, states made by hand and restarts, table `emitted` holds exactly what the old full rewrite (DELETE +
// INSERT per key) would have written; a change is written without reading the table.
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { openOutbox, type OpenOutbox } from "../helpers/outbox.js";
import { diffEmitted } from "../../src/agent/store/collector-state.js";
import { emptyCollectorState, type CollectorState, type EmittedKey } from "../../src/agent/collector/state.js";
import { EmittedKeys } from "../../src/agent/collector/emitted-keys.js";
import pino from "pino";
import { Store } from "../../src/agent/store/store.js";
import { Outbox } from "../../src/agent/delivery/outbox.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { CommitStage } from "../../src/agent/pipeline/commit-stage.js";
import { CollectStage } from "../../src/agent/pipeline/collect-stage.js";
import { AgentMetrics } from "../../src/agent/observability/metrics.js";
import { systemClock } from "../../src/agent/util/clock.js";
import type { ImdsEvent } from "../../src/agent/imds/document.js";
import type { HeartbeatRecord } from "../../src/contract/record.js";
import { unknownVmIdentity } from "../../src/contract/record.js";

const record = (i: number): HeartbeatRecord => ({
  RecordId: `r${i}`,
  RecordType: "Heartbeat",
  TimeGenerated: new Date(1_700_000_000_000 + i).toISOString(),
  ObservedAt: new Date(1_700_000_000_000 + i).toISOString(),
  ...unknownVmIdentity,
  AgentId: "00000000-0000-4000-8000-000000000001",
  AgentVersion: "t",
  Detail: "",
});
/** A record the outbox refuses (NOT NULL): the commit around it rolls back. */
const badRecord = { ...record(0), RecordId: null } as unknown as HeartbeatRecord;

/** Table `emitted` as a second connection reads it (not through the store's own remembered copy). */
function emittedTable(path: string): Map<string, EmittedKey> {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT key, emitted_ms, ended_ms FROM emitted").all() as Array<{ key: string; emitted_ms: number; ended_ms: number | null }>;
    return new Map(rows.map((r) => [r.key, { emittedMs: r.emitted_ms, endedMs: r.ended_ms }]));
  } finally {
    db.close();
  }
}

function stateWith(emitted: EmittedKeys, incarnation: number): CollectorState {
  return { ...emptyCollectorState(), lastIncarnation: incarnation, lastSuccessMs: incarnation, emitted };
}

const asMap = (emitted: EmittedKeys): Map<string, EmittedKey> => new Map(emitted);
const open = (dir: string): OpenOutbox => openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30, checkpointInWorker: false });

type Step =
  | { kind: "emit"; key: number; atMs: number }
  | { kind: "end"; key: number; atMs: number }
  | { kind: "prune"; key: number }
  | { kind: "commit" }
  | { kind: "failedCommit" }
  | { kind: "joinedCommit"; outer: "COMMIT" | "ROLLBACK" }
  | { kind: "handMadeCommit" }
  | { kind: "restart" };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("emit" as const), key: fc.integer({ min: 0, max: 5 }), atMs: fc.integer({ min: 0, max: 1e6 }) }),
  fc.record({ kind: fc.constant("end" as const), key: fc.integer({ min: 0, max: 5 }), atMs: fc.integer({ min: 0, max: 1e6 }) }),
  fc.record({ kind: fc.constant("prune" as const), key: fc.integer({ min: 0, max: 5 }) }),
  fc.constant({ kind: "commit" as const }),
  fc.constant({ kind: "commit" as const }),
  fc.constant({ kind: "failedCommit" as const }),
  fc.record({ kind: fc.constant("joinedCommit" as const), outer: fc.constantFrom("COMMIT" as const, "ROLLBACK" as const) }),
  fc.record({ kind: fc.constant("joinedCommit" as const), outer: fc.constant("ROLLBACK" as const) }),
  fc.constant({ kind: "handMadeCommit" as const }),
  fc.constant({ kind: "restart" as const }),
);

/** The agent's side of the property: a collector adopting (settling) each state the store committed. */
class Collector {
  /** The adopted state's keys, and the next document's view of them (changed by emit, end and prune). */
  working: EmittedKeys;
  constructor(adopted: EmittedKeys) {
    this.working = adopted.derive();
  }
  adopt(committed: EmittedKeys): void {
    committed.settle();
    this.working = committed.derive();
  }
}

describe("collector state writes", () => {
  it("leave table emitted as the full rewrite would, through failed commits, joined transactions and restarts", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 30 }), (steps) => {
        const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
        let store = open(dir);
        try {
          const collector = new Collector(store.opened.loadCollectorState().emitted);
          // What the old DELETE + INSERT rewrite would have left in the table: the last state whose commit stuck.
          let committed = new Map<string, EmittedKey>();
          let incarnation = 0;
          for (const step of steps) {
            const w = collector.working;
            if (step.kind === "emit") w.set(`e${step.key}|Scheduled`, { emittedMs: step.atMs, endedMs: null });
            else if (step.kind === "end") {
              const entry = w.get(`e${step.key}|Scheduled`);
              if (entry) w.set(`e${step.key}|Scheduled`, { ...entry, endedMs: step.atMs });
            } else if (step.kind === "prune") w.delete(`e${step.key}|Scheduled`);
            else if (step.kind === "commit") {
              store.commitDocument(stateWith(w, ++incarnation), [record(incarnation)], incarnation);
              committed = asMap(w);
              collector.adopt(w);
            } else if (step.kind === "failedCommit") {
              expect(() => store.commitDocument(stateWith(w, incarnation + 1), [badRecord], 0)).toThrow();
            } else if (step.kind === "joinedCommit") {
              // A transaction someone else opened and ends: the store cannot know how, the collector adopts anyway.
              const db = store.opened.database;
              db.exec("BEGIN IMMEDIATE");
              store.commitDocument(stateWith(w, ++incarnation), [record(incarnation)], incarnation);
              db.exec(step.outer);
              if (step.outer === "COMMIT") committed = asMap(w);
              collector.adopt(w);
            } else if (step.kind === "handMadeCommit") {
              const made = EmittedKeys.from(asMap(w));
              store.commitDocument(stateWith(made, ++incarnation), [record(incarnation)], incarnation);
              committed = asMap(made);
              collector.adopt(made);
            } else {
              store.close();
              store = open(dir);
              const loaded = store.opened.loadCollectorState().emitted;
              expect(asMap(loaded)).toEqual(committed);
              collector.adopt(loaded);
            }
            expect(emittedTable(store.opened.path)).toEqual(committed);
          }
        } finally {
          store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 120 },
    );
  });

  it("writes a change without reading the table, whatever the history and after failed commits; reads it once after a transaction it joined", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
    let store = open(dir);
    try {
      const keys = EmittedKeys.from(Array.from({ length: 10_000 }, (_, i) => [`old${i}|Completed`, { emittedMs: i, endedMs: i + 1 }] as const));
      store.commitDocument(stateWith(keys, 1), [], 1); // a state made by hand: the table is read and diffed
      keys.settle();
      expect(emittedTable(store.opened.path).size).toBe(10_000);
      store.close();
      store = open(dir);
      let adopted = store.opened.loadCollectorState().emitted;
      const readsAfterLoad = store.opened.collectorTableReads;
      for (let i = 2; i < 12; i++) {
        const next = adopted.derive();
        next.set(`new${i}|Scheduled`, { emittedMs: i, endedMs: null });
        next.set(`old${i}|Completed`, { emittedMs: i, endedMs: 99 });
        next.delete(`old${i + 100}|Completed`);
        // A commit that fails (rolled back whole) leaves the table as it was: still nothing to read.
        expect(() => store.commitDocument(stateWith(next, i), [badRecord], i)).toThrow();
        store.commitDocument(stateWith(next, i), [record(i)], i);
        next.settle();
        adopted = next;
      }
      expect(store.opened.collectorTableReads).toBe(readsAfterLoad);
      expect(emittedTable(store.opened.path)).toEqual(asMap(adopted));

      const db = store.opened.database;
      db.exec("BEGIN IMMEDIATE");
      const joined = adopted.derive().set("joined|Scheduled", { emittedMs: 1, endedMs: null });
      store.commitDocument(stateWith(joined, 20), [], 20);
      db.exec("ROLLBACK");
      joined.settle();
      const after = joined.derive().set("after|Scheduled", { emittedMs: 2, endedMs: null });
      store.commitDocument(stateWith(after, 21), [], 21);
      expect(store.opened.collectorTableReads).toBe(readsAfterLoad + 1);
      expect(emittedTable(store.opened.path)).toEqual(asMap(after));
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the collect stage's changes are written without reading the table, and leave it as the collector holds it", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
    const store = Store.open({ dataDir: dir, checkpointInWorker: false });
    try {
      const outbox = Outbox.open(store);
      const logger = pino({ level: "silent" });
      const metrics = new AgentMetrics();
      let nowMs = Date.parse("2026-11-23T10:00:00Z");
      const commit = new CommitStage({ outbox, deadLetters: new DeadLetterFile(join(dir, "dead-letter")), metrics, logger, clock: { ...systemClock, now: () => nowMs }, maxOutboxBytes: 1 << 30 });
      const config = { gapThresholdMs: 10_000, pollIntervalMs: 1000, emittedRetentionMs: 0 };
      const collect = new CollectStage(store.loadCollectorState(), { config, commit, vm: () => ({ ...unknownVmIdentity, AgentId: "00000000-0000-4000-8000-000000000001" }), agentVersion: "t", metrics, logger });
      const readsAfterLoad = store.collectorTableReads;
      const event = (id: string, status: "Scheduled" | "Started"): ImdsEvent => ({
        EventId: id,
        EventStatus: status,
        EventType: "Freeze",
        ResourceType: "VirtualMachine",
        Resources: ["x"],
        NotBefore: null,
        Description: "",
        EventSource: "Platform",
        DurationInSeconds: 5,
      });
      // Events come, start and go a day apart, so keys also expire (7 days after their event ended).
      for (let i = 1; i <= 20; i++) {
        nowMs += 86_400_000;
        expect(collect.ingest({ DocumentIncarnation: i, Events: [event(`e${i}`, "Scheduled"), event(`e${i - 1}`, "Started")] }, nowMs, 0)).toBe(true);
        expect(emittedTable(store.path)).toEqual(asMap(collect.state.emitted));
      }
      // Ended on days 13..20 (not more than 7 days ago): 8 events × 3 keys; e19 Scheduled and Started; e20 Scheduled.
      expect(collect.state.emitted.size).toBe(3 * 8 + 2 + 1);
      expect(store.collectorTableReads).toBe(readsAfterLoad);
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("diffs a table against a state key by key", () => {
    const previous = new Map<string, EmittedKey>([
      ["a|Scheduled", { emittedMs: 1, endedMs: null }],
      ["b|Scheduled", { emittedMs: 2, endedMs: 3 }],
      ["c|Scheduled", { emittedMs: 4, endedMs: null }],
    ]);
    const next = new Map(previous).set("a|Scheduled", { emittedMs: 1, endedMs: 9 }).set("d|Scheduled", { emittedMs: 5, endedMs: null });
    next.delete("c|Scheduled");
    const delta = diffEmitted(previous, next);
    expect(delta.upserts.map(([key]) => key).sort()).toEqual(["a|Scheduled", "d|Scheduled"]);
    expect(delta.deletes).toEqual(["c|Scheduled"]);
    expect(diffEmitted(next, next)).toEqual({ upserts: [], deletes: [] });
  });
});
