// The collector state's delta writes (store/collector-state.ts) on a real SQLite file: after any sequence of commits,
// failed commits (rolled back) and restarts, table `emitted` holds exactly what the old full rewrite (DELETE + INSERT
// per key) would have written, and a commit writes only the keys that changed.
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { openOutbox } from "../helpers/outbox.js";
import { diffEmitted } from "../../src/agent/store/collector-state.js";
import { emptyCollectorState, type CollectorState, type EmittedKey } from "../../src/agent/collector/state.js";
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

function stateWith(emitted: Map<string, EmittedKey>, incarnation: number): CollectorState {
  return { ...emptyCollectorState(), lastIncarnation: incarnation, lastSuccessMs: incarnation, emitted };
}

type Step =
  | { kind: "emit"; key: number; atMs: number }
  | { kind: "end"; key: number; atMs: number }
  | { kind: "prune"; key: number }
  | { kind: "commit" }
  | { kind: "failedCommit" }
  | { kind: "restart" };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("emit" as const), key: fc.integer({ min: 0, max: 5 }), atMs: fc.integer({ min: 0, max: 1e6 }) }),
  fc.record({ kind: fc.constant("end" as const), key: fc.integer({ min: 0, max: 5 }), atMs: fc.integer({ min: 0, max: 1e6 }) }),
  fc.record({ kind: fc.constant("prune" as const), key: fc.integer({ min: 0, max: 5 }) }),
  fc.constant({ kind: "commit" as const }),
  fc.constant({ kind: "commit" as const }),
  fc.constant({ kind: "failedCommit" as const }),
  fc.constant({ kind: "restart" as const }),
);

describe("collector state writes", () => {
  it("leave table emitted as the full rewrite would, through failed commits and restarts", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 40 }), (steps) => {
        const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
        let store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30, checkpointInWorker: false });
        try {
          // `working` is the collector's next state (a new Map per document, like applyDocument); `committed` what
          // the last successful commit handed over: what the old DELETE + INSERT rewrite would have left in the table.
          let working = new Map<string, EmittedKey>();
          let committed = new Map<string, EmittedKey>();
          let incarnation = 0;
          for (const step of steps) {
            if (step.kind === "emit") working = new Map(working).set(`e${step.key}|Scheduled`, { emittedMs: step.atMs, endedMs: null });
            else if (step.kind === "end") {
              const k = `e${step.key}|Scheduled`;
              const entry = working.get(k);
              if (entry) working = new Map(working).set(k, { ...entry, endedMs: step.atMs });
            } else if (step.kind === "prune") {
              working = new Map(working);
              working.delete(`e${step.key}|Scheduled`);
            } else if (step.kind === "commit") {
              store.commitDocument(stateWith(working, ++incarnation), [record(incarnation)], incarnation);
              committed = new Map(working);
            } else if (step.kind === "failedCommit") {
              expect(() => store.commitDocument(stateWith(working, incarnation + 1), [badRecord], 0)).toThrow();
            } else {
              store.close();
              store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30, checkpointInWorker: false });
              expect(store.opened.loadCollectorState().emitted).toEqual(committed);
            }
            expect(emittedTable(store.opened.path)).toEqual(committed);
          }
        } finally {
          store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 40 },
    );
  });

  it("writes only the keys that changed, whatever the history", () => {
    const previous = new Map<string, EmittedKey>(Array.from({ length: 10_000 }, (_, i) => [`old${i}|Completed`, { emittedMs: i, endedMs: i + 1 }]));
    const next = new Map(previous);
    next.set("new|Scheduled", { emittedMs: 20_000, endedMs: null });
    next.set("old5|Completed", { emittedMs: 5, endedMs: 99 });
    next.delete("old7|Completed");
    const delta = diffEmitted(previous, next);
    expect(delta.upserts.map(([key]) => key).sort()).toEqual(["new|Scheduled", "old5|Completed"]);
    expect(delta.deletes).toEqual(["old7|Completed"]);
    expect(diffEmitted(next, next)).toEqual({ upserts: [], deletes: [] });
  });

  it("a commit on a store whose copy of the table is stale still converges (another connection changed it)", () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-collector-state-"));
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30, checkpointInWorker: false });
    try {
      const first = new Map<string, EmittedKey>([["a|Scheduled", { emittedMs: 1, endedMs: null }]]);
      store.commitDocument(stateWith(first, 1), [], 1);
      // A commit inside an outer transaction that rolls back: the store cannot know, so it forgets its copy.
      const db = store.opened.database;
      db.exec("BEGIN IMMEDIATE");
      store.commitDocument(stateWith(new Map([["b|Scheduled", { emittedMs: 2, endedMs: null }]]), 2), [], 2);
      db.exec("ROLLBACK");
      expect(emittedTable(store.opened.path)).toEqual(first);
      const third = new Map<string, EmittedKey>([["c|Scheduled", { emittedMs: 3, endedMs: null }]]);
      store.commitDocument(stateWith(third, 3), [], 3);
      expect(emittedTable(store.opened.path)).toEqual(third);
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
