// The numbered migrations (store/migrations.ts) one by one on real files, and the delivery ledger's edges that the
// store's scenario tests pass over: due reads by position and time, outcomes applied twice, the next attempt, sinks
// parked and dropped, purges by age, evictions past one read batch. In-process, a few hundred milliseconds.
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { layoutVersion, migrate, migrations, schemaVersion } from "../../src/agent/store/migrations.js";
import { StoreError } from "../../src/agent/store/errors.js";
import type { EvictedDelivery } from "../../src/agent/delivery/ledger.js";
import { Store } from "../../src/agent/store/store.js";
import { openOutbox, openOutboxReadOnly, type OpenOutbox } from "../helpers/outbox.js";
import { heartbeatRecord } from "../helpers/records.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const newDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), "sef-migrations-"));
  dirs.push(dir);
  return dir;
};
const memory = (): DatabaseSync => new DatabaseSync(":memory:");
const names = (db: DatabaseSync): string[] =>
  (
    db.prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{
      name: string;
    }>
  ).map((r) => r.name);
const columns = (db: DatabaseSync, table: string): string[] =>
  (db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as Array<{ name: string }>).map((c) => c.name);
/** The last migration a store ran (meta row `schema_migration`); its layout (`schema_version`) stays 2. */
const version = (db: DatabaseSync): string => {
  const row = (key: string) => (db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string }).value;
  expect(row("schema_version")).toBe(String(layoutVersion));
  return row("schema_migration");
};
/** A store as an agent before numbered migrations left it: schema_version 2, no schema_migration. */
const asVersion2 =
  "DELETE FROM meta WHERE key = 'schema_migration'; UPDATE meta SET value = '2' WHERE key = 'schema_version';";
const record = (i: number, pad = 0) =>
  heartbeatRecord(i, { recordId: `r${i}`, agentId: "00000000-0000-4000-8000-000000000001", detail: "x".repeat(pad) });

describe("the numbered migrations", () => {
  it("number their versions one after another from 3, and the schema version is the last", () => {
    expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 3));
    expect(schemaVersion).toBe(migrations.at(-1)!.version);
    expect(migrations.every((m) => m.change.length > 0)).toBe(true);
  });

  it("run each step after the store's version once, in order, and record the last step's version", () => {
    const db = memory();
    migrate(db);
    db.exec("UPDATE meta SET value = '3' WHERE key = 'schema_migration'");
    const ran: number[] = [];
    const steps = [3, 4, 5, 6].map((v) => ({ version: v, change: `step ${v}`, up: () => void ran.push(v) }));
    migrate(db, steps);
    expect(ran).toEqual([4, 5, 6]);
    expect(version(db)).toBe("6");
    migrate(db, steps);
    expect(ran).toEqual([4, 5, 6]);
    // An older agent (its last step 4) opens it as it is, and leaves the newer agent's migrations recorded.
    migrate(db, steps.slice(0, 2));
    expect(ran).toEqual([4, 5, 6]);
    expect(version(db)).toBe("6");
  });

  it("make a new store's every table at the last version, and change nothing when run again", () => {
    const db = memory();
    migrate(db);
    const made = names(db);
    expect(made).toEqual([
      "action_holds",
      "action_progress",
      "action_steps",
      "actions",
      "actions_by_status",
      "deliveries",
      "deliveries_by_sink",
      "emitted",
      "emitted_by_end",
      "events",
      "meta",
      "outbox",
      "sinks",
    ]);
    expect(columns(db, "actions")).toContain("gated");
    expect(version(db)).toBe(String(schemaVersion));
    migrate(db);
    expect(names(db)).toEqual(made);
    expect(db.prepare("SELECT key FROM meta ORDER BY key").all()).toEqual([
      { key: "schema_migration" },
      { key: "schema_version" },
    ]);
  });

  it("refuse a store of a newer version, naming both versions, and leave it as it is", () => {
    const db = memory();
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO meta VALUES ('schema_version', '${layoutVersion + 1}')`);
    expect(() => migrate(db)).toThrow(StoreError);
    expect(() => migrate(db)).toThrow(
      `store schema version ${layoutVersion + 1} is newer than this agent understands (${layoutVersion})`,
    );
    // migrate has the database, not its file: the refusal names no path (Store.open's message does not either).
    const refusal = (() => {
      try {
        migrate(db);
      } catch (err) {
        return err;
      }
    })();
    expect(refusal).toMatchObject({ reason: "schema", path: "" });
    expect(names(db)).toEqual(["meta"]);
    expect(db.prepare("SELECT key, value FROM meta").all()).toEqual([
      { key: "schema_version", value: String(layoutVersion + 1) },
    ]);
  });

  it("bring a version-2 store without the action ledger's tables or the index by end to them (version 3)", () => {
    const db = memory();
    migrate(db);
    db.exec(`DROP INDEX emitted_by_end; DROP TABLE action_holds; DROP TABLE actions; DROP TABLE action_steps;
      DROP TABLE action_progress; ${asVersion2}`);
    migrate(db);
    expect(names(db)).toEqual(expect.arrayContaining(["emitted_by_end", "actions", "action_steps", "action_holds"]));
    expect(version(db)).toBe(String(schemaVersion));
  });

  it("leave a version-2 store whose agent already added the holds as it was (no row converted twice)", () => {
    const db = memory();
    migrate(db);
    db.exec(`INSERT INTO actions(action_key, kind, event_key, event_status, name, status, record, gated, created_ms, updated_ms)
        VALUES ('hook:e:Scheduled:h', 'hook', 'e', 'Scheduled', 'h', 'running', '{}', 0, 1, 1);
      ${asVersion2}`);
    migrate(db);
    expect(db.prepare("SELECT count(*) AS n FROM action_holds").get()).toEqual({ n: 0 });
    expect(version(db)).toBe(String(schemaVersion));
  });

  it("convert the action ledger before holds (version 3 → 4): each kind of row to its hold, approvals gated", () => {
    const db = memory();
    migrate(db);
    db.exec(`DROP TABLE action_holds; DROP TABLE actions;
      CREATE TABLE actions (
        action_key TEXT PRIMARY KEY, kind TEXT NOT NULL, event_key TEXT NOT NULL, event_status TEXT NOT NULL, name TEXT NOT NULL,
        status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0, record TEXT NOT NULL,
        created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
      UPDATE meta SET value = '3' WHERE key = 'schema_migration';`);
    const row = db.prepare(
      "INSERT INTO actions(action_key, kind, event_key, event_status, name, status, reason, record, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, '{}', 1, 7)",
    );
    row.run("hook:a:Scheduled:p", "hook", "a", "Scheduled", "p", "pending", "");
    row.run("hook:b:Scheduled:p", "hook", "b", "Scheduled", "p", "running", "");
    row.run("hook:c:Scheduled:p", "hook", "c", "Scheduled", "p", "succeeded", "");
    row.run("hook:d:Scheduled:p", "hook", "d", "Scheduled", "p", "failed", "exit 3");
    row.run("hook:d:Started:p", "hook", "d", "Started", "p", "failed", "");
    row.run("approval:d", "approval", "d", "Scheduled", "approval", "pending", "");
    migrate(db);
    expect(
      db
        .prepare(
          "SELECT event_key, holder, may_approve, verdict, reason, updated_ms FROM action_holds ORDER BY event_key",
        )
        .all(),
    ).toEqual([
      { event_key: "a", holder: "hook:a:Scheduled:p", may_approve: 0, verdict: "", reason: "", updated_ms: 7 },
      { event_key: "b", holder: "hook:b:Scheduled:p", may_approve: 0, verdict: "", reason: "", updated_ms: 7 },
      { event_key: "c", holder: "hook:c:Scheduled:p", may_approve: 0, verdict: "done", reason: "", updated_ms: 7 },
      {
        event_key: "d",
        holder: "hook:d:Scheduled:p",
        may_approve: 0,
        verdict: "failed",
        reason: "exit 3",
        updated_ms: 7,
      },
    ]);
    expect(db.prepare("SELECT action_key, gated FROM actions ORDER BY action_key").all()).toEqual([
      { action_key: "approval:d", gated: 1 },
      { action_key: "hook:a:Scheduled:p", gated: 0 },
      { action_key: "hook:b:Scheduled:p", gated: 0 },
      { action_key: "hook:c:Scheduled:p", gated: 0 },
      { action_key: "hook:d:Scheduled:p", gated: 0 },
      { action_key: "hook:d:Started:p", gated: 0 },
    ]);
    expect(version(db)).toBe(String(schemaVersion));
  });

  it("upgrade a version-1 store: the outbox counts its bytes, records no cursor needs leave, the byte total is kept", () => {
    const db = memory();
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL, record_type TEXT NOT NULL, json TEXT NOT NULL, created_ms INTEGER NOT NULL);
      CREATE TABLE cursors (sink TEXT PRIMARY KEY, seq INTEGER NOT NULL);
      INSERT INTO meta VALUES ('schema_version', '1');
      INSERT INTO outbox(record_id, record_type, json, created_ms) VALUES ('a', 'Heartbeat', '{"a":1}', 1), ('b', 'Heartbeat', '{"bb":"é"}', 2), ('c', 'Heartbeat', '{}', 3);
      INSERT INTO cursors VALUES ('s', 1), ('t', 3);`);
    migrate(db);
    expect(db.prepare("SELECT seq, bytes FROM outbox ORDER BY seq").all()).toEqual([
      { seq: 2, bytes: 11 },
      { seq: 3, bytes: 2 },
    ]);
    expect(db.prepare("SELECT sink, pending, dead, delivered FROM sinks ORDER BY sink").all()).toEqual([
      { sink: "s", pending: 2, dead: 0, delivered: 0 },
      { sink: "t", pending: 0, dead: 0, delivered: 0 },
    ]);
    expect(db.prepare("SELECT value FROM meta WHERE key = 'outbox_bytes'").get()).toEqual({ value: "13" });
    expect(names(db)).not.toContain("cursors");
    expect(version(db)).toBe(String(schemaVersion));
  });

  it("upgrade a version-1 store with an empty outbox to a byte total of 0", () => {
    const db = memory();
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id TEXT NOT NULL, record_type TEXT NOT NULL, json TEXT NOT NULL, created_ms INTEGER NOT NULL);
      CREATE TABLE cursors (sink TEXT PRIMARY KEY, seq INTEGER NOT NULL);
      INSERT INTO meta VALUES ('schema_version', '1');`);
    migrate(db);
    expect(db.prepare("SELECT value FROM meta WHERE key = 'outbox_bytes'").get()).toEqual({ value: "0" });
  });
});

describe("the delivery ledger's edges", () => {
  const open = (maxOutboxBytes?: number): OpenOutbox =>
    openOutbox({ dataDir: newDir(), checkpointInWorker: false, ...(maxOutboxBytes ? { maxOutboxBytes } : {}) });

  it("reads due records after a position and by time, and the next attempt only while something is pending", () => {
    const outbox = open();
    outbox.registerSinks(["s"], 5);
    expect(outbox.nextAttemptMs("s")).toBeNull();
    outbox.append([record(1), record(2), record(3)], 10);
    outbox.applyOutcomes("s", [{ seq: 2, kind: "retry", reason: "busy", nextAttemptMs: 500 }], 20);
    expect(outbox.due("s", 10, 499).map((e) => e.seq)).toEqual([1, 3]);
    expect(outbox.due("s", 10, 500).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(outbox.due("s", 10, 500, 1).map((e) => e.seq)).toEqual([2, 3]);
    expect(outbox.due("s", 1, 500).map((e) => e.record.RecordId)).toEqual(["r1"]);
    expect(outbox.nextAttemptMs("s")).toBe(0);
    outbox.applyOutcomes(
      "s",
      [
        { seq: 1, kind: "delivered" },
        { seq: 3, kind: "delivered" },
      ],
      30,
    );
    expect(outbox.nextAttemptMs("s")).toBe(500);
    expect(outbox.depth("s")).toEqual({ records: 1, oldestCreatedMs: 10 });
    outbox.applyOutcomes("s", [{ seq: 2, kind: "delivered" }], 40);
    expect(outbox.nextAttemptMs("s")).toBeNull();
    expect(outbox.depth("s")).toEqual({ records: 0, oldestCreatedMs: null });
    outbox.close();
  });

  it("counts each outcome once, keeps the last delivery's time through rejections, and refuses a blank reason", () => {
    const outbox = open();
    outbox.registerSinks(["s"], 5);
    outbox.append([record(1), record(2), record(3)], 10);
    expect(outbox.applyOutcomes("s", [{ seq: 1, kind: "delivered" }], 100)).toEqual({
      delivered: 1,
      retried: 0,
      rejected: 0,
    });
    const again = [
      { seq: 1, kind: "delivered" as const },
      { seq: 2, kind: "rejected" as const, reason: "too large" },
      { seq: 3, kind: "retry" as const, reason: "busy", nextAttemptMs: 0 },
    ];
    expect(outbox.applyOutcomes("s", again, 200)).toEqual({ delivered: 0, retried: 1, rejected: 1 });
    expect(outbox.applyOutcomes("s", again, 300)).toEqual({ delivered: 0, retried: 1, rejected: 0 });
    expect(outbox.status()).toEqual([
      { sink: "s", pending: 1, deadLettered: 1, delivered: 1, oldestPendingCreatedMs: 10, lastDeliveryMs: 100 },
    ]);
    expect(() => outbox.applyOutcomes("s", [{ seq: 3, kind: "rejected", reason: "  " }], 400)).toThrow(
      "a dead-letter needs a reason",
    );
    expect(outbox.deadLetters()).toMatchObject([
      { sink: "s", seq: 2, recordId: "r2", reason: "too large", deadLetteredMs: 200, attempts: 1 },
    ]);
    outbox.close();
  });

  it("frees a record's bytes only when the last sink takes it, whether delivered run by run or as a scattered list", () => {
    const outbox = open();
    outbox.registerSinks(["a", "b"], 5);
    const entries = outbox.append(
      Array.from({ length: 40 }, (_, i) => record(i + 1)),
      10,
    );
    const total = outbox.bytesInOutbox;
    expect(total).toBe(entries.reduce((n, e) => n + Buffer.byteLength(e.json), 0));
    const odd = entries.filter((e) => e.seq % 2 === 1).map((e) => ({ seq: e.seq, kind: "delivered" as const }));
    expect(outbox.applyOutcomes("a", odd, 20).delivered).toBe(20); // 20 runs: applied as one list
    expect(outbox.bytesInOutbox).toBe(total);
    expect(outbox.applyOutcomes("b", odd.slice(0, 3), 20).delivered).toBe(3); // 3 runs
    const freed = entries
      .filter((e) => e.seq <= 5 && e.seq % 2 === 1)
      .reduce((n, e) => n + Buffer.byteLength(e.json), 0);
    expect(outbox.bytesInOutbox).toBe(total - freed);
    expect(outbox.readAfter(0, 3).map((e) => e.seq)).toEqual([2, 4, 6]);
    expect(outbox.applyOutcomes("b", odd.slice(3), 30).delivered).toBe(17); // 17 runs: as one list, freeing them
    const even = entries.filter((e) => e.seq % 2 === 0);
    expect(outbox.readAfter(0, 100).map((e) => e.seq)).toEqual(even.map((e) => e.seq));
    expect(outbox.bytesInOutbox).toBe(even.reduce((n, e) => n + Buffer.byteLength(e.json), 0));
    outbox.close();
  });

  it("keeps a removed sink holding only dead letters parked, and gives a dropped configured sink no new record", () => {
    const outbox = open();
    outbox.registerSinks(["a", "b"], 5);
    outbox.append([record(1)], 10);
    outbox.applyOutcomes("b", [{ seq: 1, kind: "rejected", reason: "HTTP 400" }], 20);
    outbox.applyOutcomes("a", [{ seq: 1, kind: "delivered" }], 20);
    outbox.registerSinks(["a", "c"], 30);
    expect(outbox.parkedSinks()).toEqual([{ sink: "b", pending: 0, deadLettered: 1 }]);
    expect(outbox.deadLetters("b").map((d) => d.seq)).toEqual([1]);
    outbox.append([record(2)], 40);
    // "c" is configured: dropped, it leaves the registered sinks at once and the next record is not held for it.
    expect(outbox.dropSink("c", "dropped", () => undefined)).toEqual({ sink: "c", pending: 1, deadLettered: 0 });
    expect(outbox.status().map((s) => s.sink)).toEqual(["a"]);
    outbox.append([record(3)], 50);
    outbox.applyOutcomes(
      "a",
      [2, 3].map((seq) => ({ seq, kind: "delivered" as const })),
      60,
    );
    expect(outbox.readAfter(0, 10).map((e) => e.seq)).toEqual([1]); // b's dead letter
    expect(outbox.bytesInOutbox).toBe(Buffer.byteLength(JSON.stringify(record(1))));
    outbox.close();
  });

  it("stores the configured sinks in one order, whatever order the configuration lists them in", () => {
    const stored = (names: string[]): unknown => {
      const outbox = open();
      outbox.registerSinks(names, 5);
      const value = outbox.opened.meta.get("configured_sinks");
      outbox.close();
      return value;
    };
    expect(stored(["webhook", "jsonl:/x", "stdout"])).toEqual(["jsonl:/x", "stdout", "webhook"]);
    expect(stored(["stdout", "webhook", "jsonl:/x"])).toEqual(["jsonl:/x", "stdout", "webhook"]);
  });

  it("keeps the byte total a purge leaves across a reopen", () => {
    const dir = newDir();
    const outbox = openOutbox({ dataDir: dir, checkpointInWorker: false });
    outbox.registerSinks(["s"], 5);
    outbox.append([record(1, 100), record(2)], 10);
    outbox.applyOutcomes("s", [{ seq: 1, kind: "rejected", reason: "too large" }], 20);
    expect([...outbox.purgeDeadLetters({})]).toEqual([["s", 1]]);
    const held = Buffer.byteLength(JSON.stringify(record(2)));
    expect(outbox.bytesInOutbox).toBe(held);
    outbox.close();
    const reopened = openOutbox({ dataDir: dir, checkpointInWorker: false });
    expect(reopened.bytesInOutbox).toBe(held);
    reopened.close();
  });

  it("has no parked sink before any registration, forgets an empty parked one, and drops an unknown one as undefined", () => {
    const outbox = open();
    expect(outbox.parkedSinks()).toEqual([]);
    expect(outbox.registerSinks(["a", "b"], 5)).toEqual(["a", "b"]);
    outbox.append([record(1)], 10);
    expect(outbox.registerSinks(["a"], 6)).toEqual([]);
    expect(outbox.parkedSinks()).toEqual([{ sink: "b", pending: 1, deadLettered: 0 }]);
    outbox.applyOutcomes("a", [{ seq: 1, kind: "delivered" }], 20);
    expect(outbox.dropSink("nobody", "gone", () => expect.unreachable())).toBeUndefined();
    const lines: EvictedDelivery[] = [];
    expect(outbox.dropSink("b", "given up", (items) => lines.push(...items))).toEqual({
      sink: "b",
      pending: 1,
      deadLettered: 0,
    });
    expect(lines).toMatchObject([{ sink: "b", seq: 1, reason: "given up" }]);
    expect(outbox.bytesInOutbox).toBe(0);
    expect(outbox.headSeq()).toBe(0);
    expect(outbox.registerSinks(["a"], 7)).toEqual([]);
    expect(outbox.status().map((s) => s.sink)).toEqual(["a"]);
    outbox.close();
  });

  it("keeps every sink a store holds rows for, none parked, while no registration is stored (an upgraded store)", () => {
    const dir = newDir();
    const written = openOutbox({ dataDir: dir, checkpointInWorker: false });
    written.registerSinks(["a", "b"], 5);
    written.append([record(1)], 10);
    written.close();
    // A version-1 store's upgrade makes sink rows from its cursors and stores no registration: the same state.
    const db = new DatabaseSync(join(dir, "sef.db"));
    db.prepare("DELETE FROM meta WHERE key = 'configured_sinks'").run();
    db.close();
    const reopened = openOutbox({ dataDir: dir, checkpointInWorker: false });
    expect(reopened.parkedSinks()).toEqual([]);
    expect(reopened.status().map((s) => [s.sink, s.pending])).toEqual([
      ["a", 1],
      ["b", 1],
    ]);
    reopened.close();
  });

  it("backfills from a position or a time, counting only rows it added", () => {
    const outbox = open();
    outbox.registerSinks(["a"], 5);
    outbox.append([record(1)], 10);
    outbox.append([record(2)], 20);
    outbox.append([record(3)], 30);
    outbox.registerSinks(["a", "late"], 35);
    expect(outbox.backfill("late", { seq: 2 })).toBe(2);
    expect(outbox.backfill("late", { seq: 1 })).toBe(1);
    expect(outbox.backfill("late", { sinceMs: 0 })).toBe(0);
    expect(outbox.depth("late").records).toBe(3);
    outbox.registerSinks(["a", "late", "later"], 40);
    expect(outbox.backfill("later", { sinceMs: 20 })).toBe(2);
    expect(outbox.due("later", 10, 0).map((e) => e.seq)).toEqual([2, 3]);
    outbox.close();
  });

  it("replays and purges dead letters by sink, by reason and by age; a purged record leaves once nobody needs it", () => {
    const outbox = open();
    outbox.registerSinks(["a", "b"], 5);
    outbox.append([record(1), record(2), record(3)], 10);
    outbox.applyOutcomes("a", [{ seq: 1, kind: "rejected", reason: "too large" }], 100);
    outbox.applyOutcomes("a", [{ seq: 2, kind: "rejected", reason: "bad field" }], 200);
    outbox.applyOutcomes("b", [{ seq: 1, kind: "rejected", reason: "too large" }], 300);
    outbox.applyOutcomes(
      "b",
      [
        { seq: 2, kind: "delivered" },
        { seq: 3, kind: "delivered" },
      ],
      300,
    );
    outbox.applyOutcomes("a", [{ seq: 3, kind: "delivered" }], 300);
    expect(outbox.deadLetters("b").map((d) => d.seq)).toEqual([1]);
    expect([...outbox.replayDeadLetters({ sink: "a", reasonContains: "field" })]).toEqual([["a", 1]]);
    expect(outbox.depth("a").records).toBe(1);
    expect([...outbox.purgeDeadLetters({ deadLetteredUpToMs: 100 })]).toEqual([["a", 1]]);
    expect(outbox.readAfter(0, 10).map((e) => e.seq)).toEqual([1, 2]); // b's dead letter still holds record 1
    expect([...outbox.purgeDeadLetters({ reasonContains: "large" })]).toEqual([["b", 1]]);
    expect(outbox.readAfter(0, 10).map((e) => e.seq)).toEqual([2]);
    expect(outbox.bytesInOutbox).toBe(Buffer.byteLength(JSON.stringify(record(2))));
    expect([...outbox.purgeDeadLetters({})]).toEqual([]);
    expect(outbox.status().map((s) => [s.sink, s.pending, s.deadLettered])).toEqual([
      ["a", 1, 0],
      ["b", 0, 0],
    ]);
    outbox.close();
  });

  it("evicts past one read batch down to 90 % of the cap, counting pending and dead-lettered rows by sink", () => {
    const one = Buffer.byteLength(JSON.stringify(record(1000)));
    const outbox = open(one * 700);
    outbox.registerSinks(["a", "b"], 5);
    outbox.append(
      Array.from({ length: 800 }, (_, i) => record(1000 + i)),
      10,
    );
    outbox.applyOutcomes("b", [{ seq: 1, kind: "rejected", reason: "no" }], 20);
    outbox.applyOutcomes("a", [{ seq: 2, kind: "delivered" }], 20);
    const written: EvictedDelivery[] = [];
    const counts = outbox.evictOverCap(
      { writeSync: (items: readonly EvictedDelivery[]) => void written.push(...items) } as never,
      30,
    );
    expect(outbox.bytesInOutbox).toBeLessThanOrEqual(Math.floor(one * 700 * 0.9));
    expect(outbox.bytesInOutbox).toBeGreaterThan(Math.floor(one * 700 * 0.9) - one);
    const evicted = 800 - outbox.readAfter(0, 1000).length;
    expect(evicted).toBeGreaterThan(100);
    expect(counts.get("a")).toEqual({ pending: evicted - 1, deadLettered: 0 });
    expect(counts.get("b")).toEqual({ pending: evicted - 1, deadLettered: 1 });
    expect(written).toHaveLength(2 * (evicted - 1));
    expect(outbox.depth("a").records).toBe(800 - evicted);
    expect(outbox.status().find((s) => s.sink === "b")?.deadLettered).toBe(0);
    expect(outbox.evictOverCap({ writeSync: () => expect.unreachable() } as never, 40).size).toBe(0);
    outbox.close();
  });

  it("evicts with the over-cap reason, leaves no row of an evicted record, and keeps the byte total across a reopen", () => {
    const dir = newDir();
    const one = Buffer.byteLength(JSON.stringify(record(101)));
    const outbox = openOutbox({ dataDir: dir, checkpointInWorker: false, maxOutboxBytes: one * 10 });
    outbox.registerSinks(["a"], 5);
    for (let i = 1; i <= 12; i++) outbox.append([record(100 + i)], 100 * i); // seq i, all of one size
    expect(outbox.bytesInOutbox).toBe(one * 12);
    const written: EvictedDelivery[] = [];
    const counts = outbox.evictOverCap(
      { writeSync: (items: readonly EvictedDelivery[]) => void written.push(...items) } as never,
      2000,
    );
    expect(counts).toEqual(new Map([["a", { pending: 3, deadLettered: 0 }]])); // down to 9 records (90 %)
    expect(written.map((w) => [w.sink, w.seq, w.reason])).toEqual(
      [1, 2, 3].map((seq) => [
        "a",
        seq,
        "evicted: the outbox was over maxOutboxBytes before this sink took the record",
      ]),
    );
    expect(outbox.depth("a")).toEqual({ records: 9, oldestCreatedMs: 400 });
    outbox.close();
    const reopened = openOutbox({ dataDir: dir, checkpointInWorker: false });
    expect(reopened.bytesInOutbox).toBe(one * 9);
    reopened.applyOutcomes(
      "a",
      [4, 5, 6, 7, 8, 9, 10, 11, 12].map((seq) => ({ seq, kind: "delivered" as const })),
      2100,
    );
    expect(reopened.depth("a")).toEqual({ records: 0, oldestCreatedMs: null });
    expect(reopened.nextAttemptMs("a")).toBeNull();
    expect(reopened.bytesInOutbox).toBe(0);
    reopened.close();
  });

  it("evicts nothing at the cap exactly, and reports blocked only while a needed eviction cannot write its lines", () => {
    const one = Buffer.byteLength(JSON.stringify(record(1)));
    const outbox = open(one * 3);
    expect(outbox.isEvictionBlocked()).toBe(false);
    outbox.registerSinks(["s"], 5);
    outbox.append([record(1), record(2), record(3)], 10);
    expect(outbox.bytesInOutbox).toBe(one * 3);
    const unwritable = {
      writeSync: () => {
        throw new Error("disk full");
      },
    } as never;
    expect(outbox.evictOverCap(unwritable, 20).size).toBe(0);
    expect(outbox.isEvictionBlocked()).toBe(false);
    outbox.append([record(4)], 30);
    expect(() => outbox.evictOverCap(unwritable, 40)).toThrow("disk full");
    expect(outbox.isEvictionBlocked()).toBe(true);
    expect(outbox.readAfter(0, 10)).toHaveLength(4);
    outbox.applyOutcomes("s", [{ seq: 1, kind: "delivered" }], 50);
    expect(outbox.evictOverCap(unwritable, 60).size).toBe(0); // back at the cap: nothing to evict, not blocked
    expect(outbox.isEvictionBlocked()).toBe(false);
    expect(outbox.readAfter(0, 10).map((e) => e.seq)).toEqual([2, 3, 4]);
    outbox.close();
  });

  it("evicts nothing from an empty outbox whose byte total says more than its cap (a total out of step)", () => {
    const dir = newDir();
    const outbox = openOutbox({ dataDir: dir, checkpointInWorker: false });
    outbox.registerSinks(["s"], 5);
    outbox.opened.meta.set("outbox_bytes", 5000);
    outbox.close();
    const reopened = openOutbox({ dataDir: dir, checkpointInWorker: false, maxOutboxBytes: 100 });
    expect(reopened.bytesInOutbox).toBe(5000);
    expect(reopened.evictOverCap({ writeSync: () => expect.unreachable() } as never, 10).size).toBe(0);
    reopened.close();
  });

  it("opens read-only only a store at this agent's migration or a newer one, in a layout it reads", () => {
    const dir = newDir();
    openOutbox({ dataDir: dir, checkpointInWorker: false }).close();
    const setMeta = (sql: string) => {
      const db = new DatabaseSync(join(dir, "sef.db"));
      db.exec(sql);
      db.close();
    };
    const opens = (): string => {
      try {
        Store.openReadOnly(dir).close();
        return "opens";
      } catch (err) {
        return (err as StoreError).reason;
      }
    };
    expect(opens()).toBe("opens");
    setMeta(`UPDATE meta SET value = '${schemaVersion + 1}' WHERE key = 'schema_migration'`);
    expect(opens()).toBe("opens");
    setMeta(`UPDATE meta SET value = '${schemaVersion - 1}' WHERE key = 'schema_migration'`);
    expect(opens()).toBe("schema");
    setMeta(`UPDATE meta SET value = '${schemaVersion}' WHERE key = 'schema_migration';
      UPDATE meta SET value = '${layoutVersion + 1}' WHERE key = 'schema_version'`);
    expect(opens()).toBe("schema");
    setMeta(`UPDATE meta SET value = '${layoutVersion}' WHERE key = 'schema_version'`);
    expect(opens()).toBe("opens");
  });

  it("opens a read-only outbox without touching next-attempt times", () => {
    const dir = newDir();
    const outbox = openOutbox({ dataDir: dir, checkpointInWorker: false });
    outbox.registerSinks(["s"], 5);
    outbox.append([record(1)], 10);
    outbox.applyOutcomes("s", [{ seq: 1, kind: "retry", reason: "busy", nextAttemptMs: 9_000 }], 20);
    outbox.close();
    const store = openOutboxReadOnly(dir);
    expect(store.depth("s").records).toBe(1);
    const db = new DatabaseSync(join(dir, "sef.db"), { readOnly: true });
    expect(db.prepare("SELECT next_attempt_ms FROM deliveries").get()).toEqual({ next_attempt_ms: 9_000 });
    db.close();
    store.close();
    const reopened = openOutbox({ dataDir: dir, checkpointInWorker: false });
    expect(reopened.nextAttemptMs("s")).toBe(0);
    reopened.close();
  });
});
