// The write-ahead log is checkpointed once enough was written or enough commits were made: on the agent's own thread
// when the writes came slowly or were small commits, by a worker thread (which ends when idle) when many bytes came
// fast, a backlog; a worker that cannot run is given up after a few failures and SQLite's own automatic checkpoint
// remains.
import { describe, expect, it } from "vitest";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { WalCheckpointer, passiveCheckpoint } from "../../src/agent/store/wal-checkpointer.js";
import { openOutbox } from "../helpers/outbox.js";
import { waitUntil } from "../helpers/agent-process.js";
import { transitionBacklog } from "../bench/backlog.js";

function walDatabase(): { path: string; db: DatabaseSync } {
  const path = join(mkdtempSync(join(tmpdir(), "sef-wal-")), "test.db");
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (v TEXT)");
  return { path, db };
}

/** About `rows` KB of rows committed into the log (autocheckpoint is off: they stay there until a checkpoint). */
function writeRows(db: DatabaseSync, rows: number): void {
  const insert = db.prepare("INSERT INTO t(v) VALUES (?)");
  db.exec("BEGIN");
  for (let i = 0; i < rows; i++) insert.run("x".repeat(1000));
  db.exec("COMMIT");
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("WAL checkpoint worker", () => {
  it("copies the log into the database from its own thread, then ends once idle", async () => {
    const { path, db } = walDatabase();
    writeRows(db, 2000);
    const sizeBefore = statSync(path).size;
    const errors: string[] = [];
    const checkpointer = new WalCheckpointer({
      path,
      everyBytes: 1_000_000,
      idleExitMs: 300,
      onError: (r) => errors.push(r),
    });
    checkpointer.noteWritten(400_000);
    expect(checkpointer.running).toBe(false); // under the threshold: nothing started
    checkpointer.noteWritten(700_000);
    expect(checkpointer.running).toBe(true);
    await waitUntil(() => checkpointer.counts.completed === 1, 10_000, "a completed checkpoint");
    // The pages are in the database file now (without the worker they would sit in the log: autocheckpoint is off).
    expect(statSync(path).size).toBeGreaterThan(sizeBefore + 1_500_000);
    await waitUntil(() => !checkpointer.running, 10_000, "the idle worker to end");
    expect(checkpointer.counts).toEqual({ requested: 1, completed: 1, workersStarted: 1, onAgentThread: 0 });
    expect(errors).toEqual([]);
    // A new busy spell starts a new worker.
    checkpointer.noteWritten(1_000_000);
    await waitUntil(() => checkpointer.counts.completed === 2, 10_000, "a second checkpoint");
    expect(checkpointer.counts.workersStarted).toBe(2);
    checkpointer.close();
    expect(checkpointer.running).toBe(false);
    db.close();
  });

  it("checkpoints writes that came slowly on the agent's thread, after the commit's turn, and starts no worker", async () => {
    const { path, db } = walDatabase();
    let nowMs = 0;
    const errors: string[] = [];
    // The worker outlives the steps below (close() ends it).
    const options = {
      path,
      everyBytes: 1_000_000,
      idleExitMs: 10_000,
      now: () => nowMs,
      onError: (r: string) => errors.push(r),
    };
    const checkpointer = new WalCheckpointer({ ...options, checkpointHere: () => passiveCheckpoint(db) });
    writeRows(db, 2000);
    const sizeBefore = statSync(path).size;
    nowMs += 60_000; // the threshold took a minute to fill: a trickle
    checkpointer.noteWritten(1_000_000);
    expect(checkpointer.running).toBe(false);
    expect(statSync(path).size).toBe(sizeBefore); // not inside the caller's turn
    await nextTurn();
    expect(statSync(path).size).toBeGreaterThan(sizeBefore + 1_500_000);
    expect(checkpointer.counts).toEqual({ requested: 1, completed: 1, workersStarted: 0, onAgentThread: 1 });

    // Not while a transaction is open on that connection: left to the next crossing (or SQLite's safety net).
    db.exec("BEGIN");
    nowMs += 60_000;
    checkpointer.noteWritten(1_000_000);
    await nextTurn();
    db.exec("COMMIT");
    expect(checkpointer.counts.requested).toBe(1);

    // The same bytes within seconds: a backlog, so the worker takes it and the agent's thread goes on.
    writeRows(db, 2000);
    nowMs += 2_000;
    checkpointer.noteWritten(1_000_000);
    expect(checkpointer.running).toBe(true);
    await waitUntil(() => checkpointer.counts.completed === 2, 10_000, "the worker's checkpoint");
    expect(checkpointer.counts).toMatchObject({ workersStarted: 1, onAgentThread: 1 });
    // While the worker runs, slow writes go to it too (it is there already).
    expect(checkpointer.running).toBe(true);
    nowMs += 60_000;
    checkpointer.noteWritten(1_000_000);
    await nextTurn();
    await waitUntil(() => checkpointer.counts.completed === 3, 10_000, "the worker's second checkpoint");
    expect(checkpointer.counts).toEqual({ requested: 3, completed: 3, workersStarted: 1, onAgentThread: 1 });
    checkpointer.close();
    db.close();
    expect(errors).toEqual([]);

    // Without an agent-thread checkpoint every checkpoint goes to the worker.
    const other = walDatabase();
    const workerOnly = new WalCheckpointer({ ...options, path: other.path });
    nowMs += 60_000;
    workerOnly.noteWritten(1_000_000);
    expect(workerOnly.running).toBe(true);
    workerOnly.close();
    other.db.close();
  });

  it("checkpoints a run of small commits on the agent's thread, however fast they come; joined writes are not commits", async () => {
    const { path, db } = walDatabase();
    const nowMs = 0; // no time passes: by bytes this would be a backlog
    const checkpointer = new WalCheckpointer({
      path,
      everyCommits: 3,
      idleExitMs: 10_000,
      now: () => nowMs,
      checkpointHere: () => passiveCheckpoint(db),
    });
    writeRows(db, 500);
    const sizeBefore = statSync(path).size;
    checkpointer.noteWritten(1_000);
    checkpointer.noteWritten(1_000, 0); // joined a transaction that commits later
    checkpointer.noteWritten(0);
    await nextTurn();
    expect(checkpointer.counts.requested).toBe(0);
    checkpointer.noteWritten(0);
    expect(statSync(path).size).toBe(sizeBefore); // not inside the caller's turn
    await nextTurn();
    expect(statSync(path).size).toBeGreaterThan(sizeBefore + 400_000);
    expect(checkpointer.counts).toEqual({ requested: 1, completed: 1, workersStarted: 0, onAgentThread: 1 });
    expect(checkpointer.running).toBe(false);
    checkpointer.close();
    db.close();
  });

  it("the store keeps its log small under a trickle of small commits (one record each)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-wal-trickle-"));
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["s"]);
    const records = transitionBacklog(600).map((e) => e.record);
    for (const record of records) {
      const [entry] = store.append([record], Date.now());
      store.applyOutcomes("s", [{ seq: entry!.seq, kind: "delivered" }], Date.now());
      await nextTurn(); // the agent's event loop turns between commits
    }
    // 1,200 commits of a few pages each: without checkpoints by commits the log would reach SQLite's automatic
    // checkpoint (4,096 pages, 16 MiB); with them it holds about 64 commits' pages at most.
    const logBytes = statSync(join(dir, "sef.db-wal")).size;
    expect(logBytes).toBeLessThan(4 * 1024 * 1024);
    expect(store.opened.checkpointer?.counts).toMatchObject({ workersStarted: 0 });
    expect(store.opened.checkpointer?.counts!.onAgentThread).toBeGreaterThanOrEqual(1200 / 64 - 1);
    expect(store.depth("s").records).toBe(0);
    store.close();
  });

  it("gives the worker up after three failures; the store's own checkpoint remains", async () => {
    const errors: string[] = [];
    const checkpointer = new WalCheckpointer({
      path: join(tmpdir(), "sef-no-such-dir", "x", "test.db"),
      everyBytes: 1,
      onError: (r) => errors.push(r),
    });
    for (let i = 0; i < 6; i++) {
      checkpointer.noteWritten(10);
      await waitUntil(() => !checkpointer.running, 10_000, "the failing worker to end");
    }
    expect(checkpointer.counts.workersStarted).toBe(3);
    expect(errors).toHaveLength(3);
    expect(errors[2]).toMatch(/left to SQLite's automatic checkpoint/);
  });

  it("the store asks for checkpoints as a backlog is appended and delivered, and keeps every record", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sef-wal-store-"));
    const store = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["s"]);
    const backlog = transitionBacklog(6000).map((e) => e.record);
    store.append(backlog, Date.now());
    const due = store.due("s", 3000, Number.MAX_SAFE_INTEGER);
    store.applyOutcomes(
      "s",
      due.map((e) => ({ seq: e.seq, kind: "delivered" as const })),
      Date.now(),
    );
    // ~6 MB appended, ~3 MB freed: one checkpoint, and one more asked for while it ran.
    expect(store.opened.checkpointer?.counts!.requested).toBe(1);
    await waitUntil(() => store.opened.checkpointer?.counts!.completed === 2, 10_000, "two completed checkpoints");
    expect(store.depth("s").records).toBe(3000);
    store.close();
    const reopened = openOutbox({ dataDir: dir, maxOutboxBytes: 1 << 30, checkpointInWorker: false });
    expect(reopened.due("s", 10_000, Number.MAX_SAFE_INTEGER).map((e) => e.record.RecordId)).toEqual(
      backlog.slice(3000).map((r) => r.RecordId),
    );
    reopened.close();
  });
});
