// The write-ahead log is checkpointed by a worker thread that starts once enough was written and ends when idle; a
// worker that cannot run is given up after a few failures and SQLite's own automatic checkpoint remains.
import { describe, expect, it } from "vitest";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { WalCheckpointer } from "../../src/agent/store/wal-checkpointer.js";
import { Store } from "../../src/agent/store/store.js";
import { waitUntil } from "../helpers/agent-process.js";
import { transitionBacklog } from "../bench/backlog.js";

function walDatabase(): { path: string; db: DatabaseSync } {
  const path = join(mkdtempSync(join(tmpdir(), "sef-wal-")), "test.db");
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (v TEXT)");
  return { path, db };
}

describe("WAL checkpoint worker", () => {
  it("copies the log into the database from its own thread, then ends once idle", async () => {
    const { path, db } = walDatabase();
    const insert = db.prepare("INSERT INTO t(v) VALUES (?)");
    db.exec("BEGIN");
    for (let i = 0; i < 2000; i++) insert.run("x".repeat(1000));
    db.exec("COMMIT");
    const sizeBefore = statSync(path).size;
    const errors: string[] = [];
    const checkpointer = new WalCheckpointer({ path, everyBytes: 1_000_000, idleExitMs: 300, onError: (r) => errors.push(r) });
    checkpointer.noteWritten(400_000);
    expect(checkpointer.running).toBe(false); // under the threshold: nothing started
    checkpointer.noteWritten(700_000);
    expect(checkpointer.running).toBe(true);
    await waitUntil(() => checkpointer.counts.completed === 1, 10_000, "a completed checkpoint");
    // The pages are in the database file now (without the worker they would sit in the log: autocheckpoint is off).
    expect(statSync(path).size).toBeGreaterThan(sizeBefore + 1_500_000);
    await waitUntil(() => !checkpointer.running, 10_000, "the idle worker to end");
    expect(checkpointer.counts).toEqual({ requested: 1, completed: 1, workersStarted: 1 });
    expect(errors).toEqual([]);
    // A new busy spell starts a new worker.
    checkpointer.noteWritten(1_000_000);
    await waitUntil(() => checkpointer.counts.completed === 2, 10_000, "a second checkpoint");
    expect(checkpointer.counts.workersStarted).toBe(2);
    checkpointer.close();
    expect(checkpointer.running).toBe(false);
    db.close();
  });

  it("gives the worker up after three failures; the store's own checkpoint remains", async () => {
    const errors: string[] = [];
    const checkpointer = new WalCheckpointer({ path: join(tmpdir(), "sef-no-such-dir", "x", "test.db"), everyBytes: 1, onError: (r) => errors.push(r) });
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
    const store = Store.open({ dataDir: dir, maxOutboxBytes: 1 << 30 });
    store.registerSinks(["s"]);
    const backlog = transitionBacklog(6000).map((e) => e.record);
    store.append(backlog, Date.now());
    const due = store.due("s", 3000, Number.MAX_SAFE_INTEGER);
    store.applyOutcomes("s", due.map((e) => ({ seq: e.seq, kind: "delivered" as const })), Date.now());
    // ~6 MB appended, ~3 MB freed: one checkpoint, and one more asked for while it ran.
    expect(store.checkpoints!.requested).toBe(1);
    await waitUntil(() => store.checkpoints!.completed === 2, 10_000, "two completed checkpoints");
    expect(store.depth("s").records).toBe(3000);
    store.close();
    const reopened = Store.open({ dataDir: dir, maxOutboxBytes: 1 << 30, checkpointInWorker: false });
    expect(reopened.due("s", 10_000, Number.MAX_SAFE_INTEGER).map((e) => e.record.RecordId)).toEqual(backlog.slice(3000).map((r) => r.RecordId));
    reopened.close();
  });
});
