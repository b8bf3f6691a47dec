// The SQLite store and its outbox on a real file: atomic commits, the delivery ledger, dead-letters and replay, the
// size cap, upgrades, a data directory of an earlier agent opened unchanged, read-only opening, and clear errors.
import { describe, expect, it, beforeEach, vi } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { propertyParams } from "../helpers/seed.js";
import { Store, pageCacheKib, schemaVersion } from "../../src/agent/store/store.js";
import { DeadLetterFile } from "../../src/agent/delivery/dead-letter.js";
import { openOutbox, openOutboxReadOnly } from "../helpers/outbox.js";
import { StoreError } from "../../src/agent/store/errors.js";
import { emptyCollectorState } from "../../src/agent/collector/state.js";
import type { HeartbeatRecord } from "../../src/contract/record.js";
import { heartbeatRecord } from "../helpers/records.js";
import { ActionLedger } from "../../src/agent/actions/action-ledger.js";
import { endpointMemoryIn } from "../../src/agent/imds/discovery/index.js";

/** `sef.db` of a data directory the agent of commit 0e1bd2b wrote (and was killed in: a hook running, a sink failing). */
const earlierStoreSql = readFileSync(join(import.meta.dirname, "fixtures", "store-0e1bd2b.sql"), "utf8");

/** A database's schema (whitespace folded) and every row of every table, in a stable order. */
function contents(path: string): { schema: string[]; rows: Record<string, unknown[]> } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const objects = db
      .prepare("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
      .all() as Array<{ type: string; name: string; sql: string }>;
    const rows: Record<string, unknown[]> = {};
    for (const o of objects.filter((x) => x.type === "table"))
      rows[o.name] = db
        .prepare(`SELECT * FROM "${o.name}" ORDER BY 1, 2`)
        .all()
        .map((r) => ({ ...r }));
    return { schema: objects.map((o) => `${o.type} ${o.name}: ${o.sql.replace(/\s+/g, " ")}`), rows };
  } finally {
    db.close();
  }
}

/**
 * A schema (as `contents` lists it) without what today's action ledger adds to the earlier agent's when it opens it
 * (schema version 4 in src/agent/store/migrations.ts): the holds table and the actions' `gated` column. The only change
 * allowed.
 */
function withoutActionLedgerUpgrade(schema: string[]): string[] {
  return schema
    .filter((entry) => !entry.startsWith("table action_holds:"))
    .map((entry) => entry.replace(", gated INTEGER NOT NULL DEFAULT 0)", ")"));
}

const record = (i: number, pad = 0): HeartbeatRecord =>
  heartbeatRecord(i, { recordId: `r${i}`, agentId: "00000000-0000-4000-8000-000000000001", detail: "x".repeat(pad) });

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sef-store-"));
});

describe("Store", () => {
  it("persists collector state and records together, across reopen", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    const state = emptyCollectorState();
    state.lastIncarnation = 4;
    state.lastSuccessMs = 123;
    state.events.set("a", {
      status: "Started",
      lastSeenMs: 5,
      fields: {
        EventId: "A",
        EventType: "Reboot",
        ResourceType: "VirtualMachine",
        Resources: ["x"],
        NotBefore: null,
        Description: "",
        EventSource: "",
        DurationInSeconds: -1,
      },
    });
    state.emitted.set("a|Started", { emittedMs: 5, endedMs: null });
    const entries = store.commitDocument(state, [record(1), record(2)], 1000);
    expect(entries.map((e) => e.seq)).toEqual([1, 2]);
    store.close();

    const reopened = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    const loaded = reopened.collectorState.load();
    expect(loaded.lastIncarnation).toBe(4);
    expect(loaded.events.get("a")?.fields.EventType).toBe("Reboot");
    expect(loaded.emitted.get("a|Started")).toEqual({ emittedMs: 5, endedMs: null });
    expect(reopened.readAfter(0, 10).map((e) => e.record.RecordId)).toEqual(["r1", "r2"]);
    reopened.close();
  });

  it("rolls back the state when appending a record fails", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    const state = emptyCollectorState();
    state.lastIncarnation = 9;
    const bad = { ...record(1), RecordId: null } as unknown as HeartbeatRecord; // violates NOT NULL
    expect(() => store.commitDocument(state, [record(0), bad], 1)).toThrow();
    expect(store.collectorState.load().lastIncarnation).toBeNull();
    expect(store.readAfter(0, 10)).toEqual([]);
    // The byte total counted record 0 before the failure: the rollback re-reads it.
    expect(store.bytesInOutbox).toBe(0);
    store.append([record(2)], 2);
    expect(store.bytesInOutbox).toBe(Buffer.byteLength(JSON.stringify(record(2))));
    store.close();
  });

  it("tells the checkpoint worker how many record bytes each write added or freed", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    const noteWritten = vi.spyOn(store.opened.checkpointer!, "noteWritten");
    store.registerSinks(["s"]);
    const [first] = store.append([record(1)], 1);
    const [second] = store.append([record(2, 300)], 2);
    store.applyOutcomes("s", [{ seq: first!.seq, kind: "delivered" }], 3);
    store.applyOutcomes("s", [{ seq: second!.seq, kind: "retry", reason: "busy", nextAttemptMs: 10 }], 4);
    const size = (json: string): number => Buffer.byteLength(json);
    expect(noteWritten.mock.calls).toEqual([
      [0, 1],
      [size(first!.json), 1],
      [size(second!.json), 1],
      [size(first!.json), 1],
      [0, 1],
    ]);
    store.close();
  });

  it("keeps one delivery row per sink and record; a record leaves the outbox once no sink needs it", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["a", "b"]);
    store.append([record(1), record(2), record(3)], 1);
    store.applyOutcomes(
      "a",
      [1, 2, 3].map((seq) => ({ seq, kind: "delivered" as const })),
      10,
    );
    store.applyOutcomes(
      "b",
      [
        { seq: 1, kind: "delivered" },
        { seq: 2, kind: "retry", reason: "busy", nextAttemptMs: 500 },
      ],
      10,
    );
    expect(store.readAfter(0, 10).map((e) => e.seq)).toEqual([2, 3]);
    expect(store.depth("b")).toEqual({ records: 2, oldestCreatedMs: 1 });
    expect(store.depth("a").records).toBe(0);
    expect(store.due("b", 10, 499).map((e) => e.seq)).toEqual([3]);
    expect(store.due("b", 10, 500).map((e) => e.seq)).toEqual([2, 3]);
    expect(store.nextAttemptMs("b")).toBe(0);
    // An outcome for a record already settled changes nothing (applying twice is harmless).
    store.applyOutcomes("a", [{ seq: 2, kind: "rejected", reason: "late" }], 11);
    expect(store.status().find((s) => s.sink === "a")).toMatchObject({ pending: 0, deadLettered: 0, delivered: 3 });
    store.registerSinks(["a"]); // b removed: parked, its two pending records stay
    expect(store.parkedSinks()).toEqual([{ sink: "b", pending: 2, deadLettered: 0 }]);
    expect(store.readAfter(0, 10).map((e) => e.seq)).toEqual([2, 3]);
    const lines: string[] = [];
    expect(
      store.dropSink("b", "given up", (items) => lines.push(...items.map((i) => `${i.sink}:${i.seq}:${i.reason}`))),
    ).toEqual({ sink: "b", pending: 2, deadLettered: 0 });
    expect(lines).toEqual(["b:2:given up", "b:3:given up"]);
    expect(store.parkedSinks()).toEqual([]);
    expect(store.readAfter(0, 10)).toEqual([]);
    expect(store.bytesInOutbox).toBe(0);
    store.close();
  });

  it("parks a sink no longer configured (its rows wait, it gets no new records) and resumes it when its name returns", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["webhook", "stdout"]);
    store.append([record(1), record(2), record(3)], 1);
    store.applyOutcomes(
      "stdout",
      [1, 2, 3].map((seq) => ({ seq, kind: "delivered" as const })),
      5,
    );
    store.applyOutcomes("webhook", [{ seq: 1, kind: "rejected", reason: "HTTP 400" }], 5);
    expect(store.registerSinks(["stdout"])).toEqual([]);
    expect(store.parkedSinks()).toEqual([{ sink: "webhook", pending: 2, deadLettered: 1 }]);
    expect(store.status().map((s) => s.sink)).toEqual(["stdout"]);
    store.append([record(4)], 6); // not for the parked sink
    store.close();

    // Read-only (as `sef outbox status` opens it): the same view. Forgotten: a removed sink with no rows left.
    const reader = openOutboxReadOnly(dir);
    expect(reader.parkedSinks()).toEqual([{ sink: "webhook", pending: 2, deadLettered: 1 }]);
    reader.close();
    const again = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    again.registerSinks(["jsonl:x"]);
    again.registerSinks(["jsonl:y"]);
    expect(again.parkedSinks().map((p) => p.sink)).toEqual(["stdout", "webhook"]); // stdout holds record 4
    expect(again.registerSinks(["webhook", "stdout"])).toEqual([]);
    expect(again.parkedSinks()).toEqual([]);
    expect(again.due("webhook", 10, 0).map((e) => e.seq)).toEqual([2, 3]);
    expect(again.status().find((s) => s.sink === "webhook")).toMatchObject({ pending: 2, deadLettered: 1 });
    expect(again.dropSink("nope", "x", () => undefined)).toBeUndefined();
    again.close();
  });

  it("applies any set of deliveries exactly, whether few runs of consecutive records or many scattered ones", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 120 }), { maxLength: 120 }),
        fc.boolean(),
        (delivered, retryOthers) => {
          const d = mkdtempSync(join(tmpdir(), "sef-store-runs-"));
          const store = openOutbox({ dataDir: d, maxOutboxBytes: 1 << 30, checkpointInWorker: false });
          try {
            store.registerSinks(["a", "b"]);
            store.append(
              Array.from({ length: 120 }, (_, i) => record(i + 1, 10)),
              1,
            );
            // The others have a retry pending for "a" (not due): a range delete must not take them along.
            const others = Array.from({ length: 120 }, (_, i) => i + 1).filter((seq) => !delivered.includes(seq));
            if (retryOthers)
              store.applyOutcomes(
                "a",
                others.map((seq) => ({ seq, kind: "retry" as const, reason: "busy", nextAttemptMs: 1e12 })),
                5,
              );
            store.applyOutcomes(
              "b",
              Array.from({ length: 60 }, (_, i) => ({ seq: 2 * i + 1, kind: "delivered" as const })),
              5,
            );
            expect(
              store.applyOutcomes(
                "a",
                delivered.map((seq) => ({ seq, kind: "delivered" as const })),
                10,
              ).delivered,
            ).toBe(delivered.length);
            expect(store.depth("a").records).toBe(others.length);
            expect(store.due("a", 200, 2e12).map((e) => e.seq)).toEqual(others);
            // A record leaves the outbox once neither sink needs it: delivered to "a" and odd (delivered to "b").
            expect(store.readAfter(0, 200).map((e) => e.seq)).toEqual(
              Array.from({ length: 120 }, (_, i) => i + 1).filter((seq) => !(delivered.includes(seq) && seq % 2 === 1)),
            );
            expect(store.bytesInOutbox).toBe(
              store.readAfter(0, 200).reduce((n, e) => n + Buffer.byteLength(e.json), 0),
            );
          } finally {
            store.close();
            rmSync(d, { recursive: true, force: true });
          }
        },
      ),
      propertyParams(3401, 60),
    );
  });

  it("starts a new sink at the head; backfill replays what is still held, on purpose", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["old"]);
    store.append([record(1), record(2)], 100);
    expect(store.registerSinks(["old", "new"])).toEqual(["new"]);
    expect(store.depth("new").records).toBe(0);
    store.append([record(3)], 200);
    expect(store.due("new", 10, 0).map((e) => e.seq)).toEqual([3]);
    expect(store.backfill("new", { sinceMs: 150 })).toBe(0); // seq 3 already pending
    expect(store.backfill("new", { seq: 1 })).toBe(2);
    expect(store.due("new", 10, 0).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(store.depth("new").records).toBe(3);
    store.close();
  });

  it("keeps dead-letters with their reason and replays them idempotently, keeping the RecordId", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["a", "b"]);
    store.append([record(1), record(2)], 1);
    store.applyOutcomes(
      "a",
      [
        { seq: 1, kind: "rejected", reason: "HTTP 400: bad column" },
        { seq: 2, kind: "delivered" },
      ],
      5,
    );
    store.applyOutcomes(
      "b",
      [
        { seq: 1, kind: "rejected", reason: "HTTP 413" },
        { seq: 2, kind: "delivered" },
      ],
      5,
    );
    expect(() => store.applyOutcomes("b", [{ seq: 1, kind: "rejected", reason: " " }], 5)).toThrow(/reason/);
    expect(store.deadLetters().map((d) => [d.sink, d.recordId, d.reason])).toEqual([
      ["a", "r1", "HTTP 400: bad column"],
      ["b", "r1", "HTTP 413"],
    ]);
    expect(store.replayDeadLetters({ reasonContains: "400" })).toEqual(new Map([["a", 1]]));
    expect(store.replayDeadLetters({ reasonContains: "400" })).toEqual(new Map());
    expect(store.due("a", 10, 0).map((e) => e.record.RecordId)).toEqual(["r1"]);
    expect(store.status().map((s) => [s.sink, s.pending, s.deadLettered])).toEqual([
      ["a", 1, 0],
      ["b", 0, 1],
    ]);
    expect(store.readAfter(0, 10)).toHaveLength(1); // the same outbox row: no copy
    store.close();
  });

  it("evicts the oldest records past the size cap only after their dead-letter lines are written", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1024 * 1024 });
    store.registerSinks(["slow", "fast"]);
    for (let i = 0; i < 30; i++) store.append([record(i, 50_000)], i);
    store.applyOutcomes("fast", [{ seq: 1, kind: "rejected", reason: "nope" }], 40);
    writeFileSync(join(dir, "not-a-directory"), "");
    expect(() => store.evictOverCap(new DeadLetterFile(join(dir, "not-a-directory")), 40)).toThrow(/EEXIST|ENOTDIR/);
    expect(store.isEvictionBlocked()).toBe(true);
    expect(store.readAfter(0, 100)).toHaveLength(30);
    const deadLetters = new DeadLetterFile(join(dir, "dead-letter"));
    const counts = store.evictOverCap(deadLetters, 41);
    const lines = (sink: string): Array<{ record: { RecordId: string } }> =>
      existsSync(deadLetters.pathFor(sink))
        ? readFileSync(deadLetters.pathFor(sink), "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l))
        : [];
    const written = [
      ...lines("slow").map((l) => `slow:${Number(l.record.RecordId.slice(1)) + 1}`),
      ...lines("fast").map((l) => `fast:${Number(l.record.RecordId.slice(1)) + 1}`),
    ];
    expect(store.isEvictionBlocked()).toBe(false);
    expect(written[0]).toBe("slow:1");
    expect(written).not.toContain("fast:1");
    expect(counts.get("fast")!.deadLettered).toBe(1);
    expect(counts.get("slow")!.pending).toBe(written.filter((w) => w.startsWith("slow:")).length);
    expect(store.bytesInOutbox).toBeLessThanOrEqual(1024 * 1024 * 0.9);
    expect(store.readAfter(0, 100)[0]!.seq).toBe(counts.get("slow")!.pending + 1);
    expect(store.depth("slow").records).toBe(30 - counts.get("slow")!.pending);
    store.close();
  });

  it("counts a parked sink's records toward the size cap: eviction dead-letters them first, like any pending one", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1024 * 1024 });
    store.registerSinks(["gone", "here"]);
    for (let i = 0; i < 15; i++) store.append([record(i, 50_000)], i);
    store.registerSinks(["here"]);
    store.applyOutcomes(
      "here",
      Array.from({ length: 15 }, (_, i) => ({ seq: i + 1, kind: "delivered" as const })),
      20,
    );
    expect(store.bytesInOutbox).toBeGreaterThan(700_000); // held for the parked sink alone
    for (let i = 15; i < 30; i++) store.append([record(i, 50_000)], i);
    const deadLetters = new DeadLetterFile(join(dir, "dead-letter"));
    const counts = store.evictOverCap(deadLetters, 40);
    const lines = (sink: string): Array<{ record: { RecordId: string } }> =>
      existsSync(deadLetters.pathFor(sink))
        ? readFileSync(deadLetters.pathFor(sink), "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l))
        : [];
    const written = [
      ...lines("gone").map((l) => `gone:${Number(l.record.RecordId.slice(1)) + 1}`),
      ...lines("here").map((l) => `here:${Number(l.record.RecordId.slice(1)) + 1}`),
    ];
    expect(written[0]).toBe("gone:1");
    expect(counts.get("gone")!.pending).toBe(written.filter((w) => w.startsWith("gone:")).length);
    expect(store.parkedSinks()).toEqual([{ sink: "gone", pending: 15 - counts.get("gone")!.pending, deadLettered: 0 }]);
    store.close();
  });

  it("bounds its connection's page cache (a cache as large as the file would grow the resident set with it)", () => {
    const store = Store.open({ dataDir: dir, checkpointInWorker: false });
    expect(store.database.prepare("PRAGMA cache_size").get()).toEqual({ cache_size: -pageCacheKib });
    store.close();
    expect(pageCacheKib).toBeLessThan(2000); // SQLite's default, which this replaces
  });

  it("opens read-only beside a writer and never writes", () => {
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["a"]);
    store.append([record(1)], 1);
    const reader = openOutboxReadOnly(dir);
    expect(reader.status()).toMatchObject([{ sink: "a", pending: 1 }]);
    expect(() => reader.append([record(2)], 2)).toThrow();
    reader.close();
    store.close();
  });

  it("upgrades a version 1 store: records after each sink's cursor become pending for it", () => {
    const db = new DatabaseSync(join(dir, "sef.db"));
    db.exec(`
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO meta VALUES ('schema_version', '1');
      CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL, record_type TEXT NOT NULL, json TEXT NOT NULL, created_ms INTEGER NOT NULL);
      CREATE TABLE cursors (sink TEXT PRIMARY KEY, seq INTEGER NOT NULL);
      INSERT INTO cursors VALUES ('a', 1), ('b', 2);
    `);
    for (let i = 1; i <= 3; i++)
      db.prepare("INSERT INTO outbox(record_id, record_type, json, created_ms) VALUES (?, 'Heartbeat', ?, ?)").run(
        `r${i}`,
        JSON.stringify(record(i)),
        i,
      );
    db.close();
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    expect(store.due("a", 10, 0).map((e) => e.seq)).toEqual([2, 3]);
    expect(store.due("b", 10, 0).map((e) => e.seq)).toEqual([3]);
    expect(store.readAfter(0, 10).map((e) => e.seq)).toEqual([2, 3]);
    expect(store.bytesInOutbox).toBe(
      Buffer.byteLength(JSON.stringify(record(2))) + Buffer.byteLength(JSON.stringify(record(3))),
    );
    store.close();
  });

  it("opens a data directory written by the earlier agent unchanged but for the action ledger's upgrade: same rows, its state read back", () => {
    const path = join(dir, "sef.db");
    const earlier = new DatabaseSync(path);
    earlier.exec(earlierStoreSql);
    earlier.close();
    const before = contents(path);
    const store = openOutbox({ dataDir: dir, checkpointInWorker: false });
    const actions = ActionLedger.open(store.opened);
    expect(store.opened.loadVmIdentity()).toMatchObject({
      VmName: "WestNO_0",
      VmScaleSetName: "WestNO",
      Tags: { env: "prod" },
    });
    const collector = store.collectorState.load();
    expect([...collector.events.keys()]).toEqual(["f1xture0-0000-4000-8000-000000000002"]);
    expect(collector.lastIncarnation).toBe(2);
    expect(endpointMemoryIn(store.opened.meta).load()).toEqual({
      url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      source: "link-local",
    });
    expect(store.status()).toMatchObject([
      { sink: "jsonl:/var/log/sef/records.jsonl", pending: 0, delivered: 3 },
      { sink: "webhook", pending: 3, delivered: 0 },
    ]);
    expect(store.due("webhook", 10, 0).map((e) => (e.record as { EventId: string }).EventId)).toEqual([
      "F1XTURE0-0000-4000-8000-000000000001",
      "F1XTURE0-0000-4000-8000-000000000002",
      "F1XTURE0-0000-4000-8000-000000000001",
    ]);
    expect(actions.withStatus("running").map((a) => a.actionKey)).toEqual([
      "hook:f1xture0-0000-4000-8000-000000000001:Scheduled:prepare",
    ]);
    store.close();
    const after = contents(path);
    expect(after.schema).not.toEqual(before.schema);
    expect(withoutActionLedgerUpgrade(after.schema)).toEqual(before.schema);
    // Every row as it was, but the next-attempt times (monotonic, reset at every open, as the earlier agent did too)
    // and the action ledger's upgrade: every action ungated, the hook still running on a Scheduled event holding it.
    const prepareHook = "hook:f1xture0-0000-4000-8000-000000000001:Scheduled:prepare";
    const dueAtOpen = (rows: Record<string, unknown[]>) => ({
      ...rows,
      meta: [...rows.meta!, { key: "schema_migration", value: String(schemaVersion) }].sort((a, b) =>
        (a as { key: string }).key.localeCompare((b as { key: string }).key),
      ),
      deliveries: rows.deliveries!.map((d) => ({ ...(d as object), next_attempt_ms: 0 })),
      actions: rows.actions!.map((a) => ({ ...(a as object), gated: 0 })),
      action_holds: [
        {
          event_key: "f1xture0-0000-4000-8000-000000000001",
          holder: prepareHook,
          may_approve: 0,
          reason: "",
          verdict: "",
          updated_ms: expect.any(Number),
        },
      ],
    });
    expect(after.rows).toEqual(dueAtOpen(before.rows));
  });

  it("makes a new store with exactly the schema the earlier agent's becomes when opened", () => {
    const earlier = join(dir, "earlier");
    mkdirSync(earlier);
    const db = new DatabaseSync(join(earlier, "sef.db"));
    db.exec(earlierStoreSql);
    db.close();
    const upgraded = openOutbox({ dataDir: earlier, checkpointInWorker: false });
    ActionLedger.open(upgraded.opened);
    upgraded.close();
    const fresh = openOutbox({ dataDir: join(dir, "fresh"), checkpointInWorker: false });
    ActionLedger.open(fresh.opened);
    fresh.close();
    expect(contents(join(dir, "fresh", "sef.db")).schema).toEqual(contents(join(earlier, "sef.db")).schema);
  });

  it("reports a corrupt store as a StoreError with the way out", () => {
    writeFileSync(join(dir, "sef.db"), "this is not a database ".repeat(100));
    try {
      Store.open({ dataDir: dir });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(StoreError);
      expect((err as StoreError).reason).toBe("corrupt");
      expect((err as Error).message).toMatch(/Move it aside/);
    }
  });

  it("reports a data directory that is a file as unwritable", () => {
    const file = join(dir, "file");
    writeFileSync(file, "");
    expect(() => Store.open({ dataDir: file })).toThrow(/not writable/);
    rmSync(file);
  });
});
