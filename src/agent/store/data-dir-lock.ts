// One agent per data directory: an exclusive SQLite lock on `sef.lock`, held for the life of the process.
// The OS drops it when the holder dies (fcntl on Linux, LockFileEx on Windows), so a crash never blocks the next start.
import { DatabaseSync } from "node:sqlite";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SefError } from "@sef/errors/sef-error.js";

export const lockFileName = "sef.lock";
/** Informational: the holder's pid, written after the lock is taken (the locked file itself cannot be read by others). */
export const lockPidFileName = "sef.lock.pid";

export class DataDirLockedError extends SefError {
  override readonly name = "DataDirLockedError";
  override readonly code = "SEF_ERR_DATA_DIR_LOCKED";
  constructor(
    readonly dataDir: string,
    /** The holder's pid, when it could be read. */
    readonly holderPid: number | undefined,
  ) {
    super(
      `data directory ${dataDir} is in use by another sef${holderPid !== undefined ? ` (pid ${holderPid})` : ""}: only one agent may use a data directory`,
    );
  }
}

export interface DataDirLock {
  readonly dataDir: string;
  /** Releases the lock (idempotent); process exit releases it too. */
  release(): void;
}

/** Takes the data directory's lock or throws DataDirLockedError at once (never waits). Other failures are thrown as they are. */
export function acquire(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const db = new DatabaseSync(join(dataDir, lockFileName), { timeout: 0 });
  try {
    // EXCLUSIVE locking mode: the first write takes the file's exclusive lock and keeps it until the connection closes.
    db.exec("PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = DELETE;");
    db.exec(
      "CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, started_ms INTEGER NOT NULL)",
    );
    db.prepare(
      "INSERT INTO holder(id, pid, started_ms) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET pid = excluded.pid, started_ms = excluded.started_ms",
    ).run(process.pid, Date.now());
  } catch (err) {
    db.close();
    if (isBusy(err)) throw new DataDirLockedError(dataDir, readHolderPid(dataDir));
    throw err;
  }
  writeFileSync(join(dataDir, lockPidFileName), `${process.pid}\n`);
  let released = false;
  return {
    dataDir,
    release() {
      if (released) return;
      released = true;
      rmSync(join(dataDir, lockPidFileName), { force: true });
      db.close();
    },
  };
}

/** Whether another process holds the data directory's lock (for tools that must not touch a running agent's state). */
export function isHeld(dataDir: string): boolean {
  try {
    acquire(dataDir).release();
    return false;
  } catch (err) {
    if (err instanceof DataDirLockedError) return true;
    throw err;
  }
}

function readHolderPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, lockPidFileName), "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isBusy(err: unknown): boolean {
  const e = err as { errcode?: number; message?: string };
  return ((e.errcode ?? 0) & 0xff) === 5 || /database is locked/i.test(e.message ?? "");
}
