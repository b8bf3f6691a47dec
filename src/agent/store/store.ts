// The durable store (SQLite, WAL, synchronous=FULL) in the data directory: it opens the database (its tables made or
// upgraded by migrations.ts), runs the writes' transactions, and keeps the VM identity. The collector state
// (collector/), the outbox and its delivery ledger (delivery/) and the action ledger (actions/) use their own tables
// in it; other meta rows belong to the modules that use them (`meta`).
import { DatabaseSync } from "node:sqlite";
import { mkdirSync, accessSync, constants, existsSync } from "node:fs";
import { join } from "node:path";
import type { VmIdentity } from "@sef/contract/record.js";
import { StoreError } from "./errors.js";
import { MetaValues } from "./meta.js";
import { layoutVersion, migrate, schemaVersion, storeVersions } from "./migrations.js";
import { transaction } from "./sql.js";
import { WalCheckpointer, passiveCheckpoint, safetyNetPages } from "./wal-checkpointer.js";

export interface StoreOptions {
  dataDir: string;
  /** Checkpoint the log ourselves, a backlog in a worker thread (default true; see wal-checkpointer.ts). */
  checkpointInWorker?: boolean;
  /** Told when the checkpoint worker fails (the store goes on; SQLite checkpoints by itself). */
  onCheckpointError?: (reason: string) => void;
  /** Told of every outermost write's outcome: committed or not (readiness keeps the last). */
  onWriteOutcome?: (committed: boolean) => void;
}

/** What a writer tells the store about one transaction (see `Store.write`). */
export interface WriteHooks {
  /** Bytes the transaction added or removed (feeds the checkpoint worker's threshold). */
  bytesWritten?: () => number;
  /** The transaction rolled back: re-read what the writer caches. */
  onRollback?: () => void;
}

export { schemaVersion };

/**
 * How an outermost write ended, for a writer that caches what its tables hold (`Store.onWriteSettled`): `committed`
 * by this store's own transaction; `rolledBack` whole; `joined` into a transaction someone else opened (which may
 * still roll back); `uncertain` when a write failed and its transaction was not rolled back whole (its part may stay).
 */
export type WriteSettlement = "committed" | "rolledBack" | "joined" | "uncertain";

/**
 * The store connection's page cache, in KiB (SQLite's default is 2,000). A commit touches a few pages of each table it
 * writes, far fewer than this holds. A larger cache only fills, page by page, as the file grows (the `emitted` table
 * grows with every event for 7 days), and the resident set grows with it: under churn that was most of the climb.
 */
export const pageCacheKib = 256;

export class Store {
  readonly path: string;
  /** True for a store opened with `openReadOnly` (nothing may be written). */
  readonly readOnly: boolean;
  /** The meta rows as JSON values by key (each key is its user's). */
  readonly meta: MetaValues;
  /** Writable stores only: checkpoints the log off the agent's thread (its `counts` say what it did). */
  readonly checkpointer: WalCheckpointer | undefined;
  private readonly db: DatabaseSync;
  /** Told how each outermost write ended (see `onWriteSettled`). */
  private readonly settledListeners: Array<(settlement: WriteSettlement) => void> = [];
  /** A write failed inside the open transaction: what the tables hold is not known for sure. */
  private writesUncertain = false;
  /** Nesting of `write` calls (the outermost one settles). */
  private writeDepth = 0;

  private constructor(
    path: string,
    db: DatabaseSync,
    readOnly: boolean,
    private readonly options: Pick<StoreOptions, "onWriteOutcome"> = {},
    checkpointer?: WalCheckpointer,
  ) {
    this.path = path;
    this.db = db;
    this.readOnly = readOnly;
    this.meta = new MetaValues(db);
    this.checkpointer = checkpointer;
  }

  /** Opens (or creates) the store; a corrupt, locked or unwritable store is a StoreError naming the path and the way out. */
  static open(options: StoreOptions): Store {
    const path = join(options.dataDir, "sef.db");
    try {
      mkdirSync(options.dataDir, { recursive: true });
      accessSync(options.dataDir, constants.W_OK);
    } catch (err) {
      throw new StoreError(
        `data directory ${options.dataDir} is not writable: ${(err as Error).message}`,
        options.dataDir,
        "unwritable",
      );
    }
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(path, { timeout: 2000 });
      db.exec(
        `PRAGMA cache_size = -${pageCacheKib}; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;`,
      );
      const check = Object.values(db.prepare("PRAGMA quick_check").get() ?? {})[0];
      if (check !== "ok") throw new StoreError(`store ${path} is corrupt (${String(check)})`, path, "corrupt");
      const opened = db;
      transaction(opened, () => migrate(opened));
      probeWritable(db);
      if (options.checkpointInWorker === false) return new Store(path, db, false, options);
      db.exec(`PRAGMA wal_autocheckpoint = ${safetyNetPages}`);
      const checkpointer = new WalCheckpointer({
        path,
        checkpointHere: () => passiveCheckpoint(opened),
        ...(options.onCheckpointError ? { onError: options.onCheckpointError } : {}),
      });
      return new Store(path, db, false, options, checkpointer);
    } catch (err) {
      if (db?.isOpen) db.close();
      throw translateOpenError(err, path);
    }
  }

  /**
   * Opens an existing store for reading only (status and listing commands beside a running agent). Never creates,
   * migrates or writes anything.
   */
  static openReadOnly(dataDir: string): Store {
    const path = join(dataDir, "sef.db");
    if (!existsSync(path))
      throw new StoreError(`no store at ${path} (has the agent run with --data-dir ${dataDir}?)`, path, "unwritable");
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(path, { readOnly: true, timeout: 2000 });
      const { layout, migration } = storeVersions(db);
      if (layout > layoutVersion || migration < schemaVersion) {
        throw new StoreError(
          `store ${path} has schema version ${layout} (migration ${migration}); this sef reads version ${layoutVersion} ` +
            `at migration ${schemaVersion} or later: start the agent of this version once to upgrade it`,
          path,
          "schema",
        );
      }
      return new Store(path, db, true);
    } catch (err) {
      if (db?.isOpen) db.close();
      throw translateOpenError(err, path);
    }
  }

  /** The open database, for the modules that keep their own tables in it (the outbox, the action ledger). */
  get database(): DatabaseSync {
    return this.db;
  }

  close(): void {
    this.checkpointer?.close();
    this.db.close();
  }

  /**
   * Tells `listener` how every outermost write ends, once it has (a writer that caches what its tables hold keeps
   * its cache or forgets it: the collector state's tables, collector/state-tables.ts).
   */
  onWriteSettled(listener: (settlement: WriteSettlement) => void): void {
    this.settledListeners.push(listener);
  }

  saveVmIdentity(vm: VmIdentity): void {
    this.write(() => this.meta.set("vm", vm));
  }

  loadVmIdentity(): VmIdentity | undefined {
    const vm = this.meta.get<VmIdentity>("vm");
    // Saved by an agent that did not read tags yet: none until instance metadata answers again.
    return vm === undefined ? undefined : { ...vm, Tags: vm.Tags ?? {} };
  }

  /**
   * Runs `body` in one IMMEDIATE transaction (or inside the caller's, when one is open), telling `onWriteOutcome`
   * whether it committed. `hooks` let a writer feed the checkpoint worker and re-read its cached totals on rollback.
   */
  write<T>(body: () => T, hooks: WriteHooks = {}): T {
    const outermost = this.writeDepth === 0;
    const ownsTransaction = outermost && !this.db.isTransaction;
    this.writeDepth += 1;
    try {
      const result = transaction(this.db, body);
      if (outermost) this.options.onWriteOutcome?.(true);
      this.checkpointer?.noteWritten(hooks.bytesWritten?.() ?? 0, ownsTransaction ? 1 : 0);
      if (outermost) this.settle(ownsTransaction ? "committed" : "joined");
      return result;
    } catch (err) {
      if (outermost) this.options.onWriteOutcome?.(false);
      // Rolled back whole by this store: the tables hold what they held before. Otherwise not known.
      const rolledBack = ownsTransaction && this.db.isOpen && !this.db.isTransaction;
      if (!rolledBack) this.writesUncertain = true;
      if (this.db.isOpen) hooks.onRollback?.();
      if (outermost) this.settle(rolledBack ? "rolledBack" : "uncertain");
      throw err;
    } finally {
      this.writeDepth -= 1;
    }
  }

  /** After the outermost write: a failed write inside it makes a commit uncertain, unless all was rolled back. */
  private settle(outcome: WriteSettlement): void {
    const uncertain = this.writesUncertain;
    this.writesUncertain = false;
    const settlement = outcome !== "rolledBack" && uncertain ? "uncertain" : outcome;
    for (const listener of this.settledListeners) listener(settlement);
  }
}

function translateOpenError(err: unknown, path: string): unknown {
  if (err instanceof StoreError) return withAdvice(err);
  const code = sqliteCode(err);
  if (code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT") {
    return withAdvice(new StoreError(`store ${path} is corrupt: ${(err as Error).message}`, path, "corrupt"));
  }
  if (code === "SQLITE_BUSY" || code === "SQLITE_LOCKED") {
    return new StoreError(
      `store ${path} is locked by another process (is another sef running with this data directory?)`,
      path,
      "locked",
    );
  }
  if (code === "SQLITE_READONLY" || code === "SQLITE_CANTOPEN" || code === "SQLITE_PERM" || code === "SQLITE_IOERR") {
    return new StoreError(
      `store ${path} cannot be written: ${(err as Error).message} (check the owner and mode of the data directory and the files in it: the service user must be able to write them)`,
      path,
      "unwritable",
    );
  }
  return err;
}

/** A database file the process may open but not write (e.g. owned by root after a run as root) fails here, at start. */
function probeWritable(db: DatabaseSync): void {
  db.exec("UPDATE meta SET value = value WHERE key = 'schema_version'");
}

function withAdvice(err: StoreError): StoreError {
  if (err.reason !== "corrupt") return err;
  return new StoreError(
    `${err.message}. Move it aside (e.g. mv ${err.path} ${err.path}.corrupt) and start again: sef will rebuild its state; ` +
      "records still in the old outbox are not sent, and RecordIds stay the same so consumers can dedupe any repeats.",
    err.path,
    "corrupt",
  );
}

/** The SQLite result-code name of a node:sqlite error (e.g. `SQLITE_BUSY`), or "". */
function sqliteCode(err: unknown): string {
  const e = err as { code?: string; errcode?: number; errstr?: string };
  if (e.code && e.code !== "ERR_SQLITE_ERROR") return e.code;
  const primary = (e.errcode ?? 0) & 0xff;
  return sqlitePrimaryCodes[primary] ?? "";
}

const sqlitePrimaryCodes: Record<number, string> = {
  3: "SQLITE_PERM",
  5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED",
  8: "SQLITE_READONLY",
  10: "SQLITE_IOERR",
  11: "SQLITE_CORRUPT",
  14: "SQLITE_CANTOPEN",
  26: "SQLITE_NOTADB",
};
