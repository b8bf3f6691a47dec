// Checkpoints the store's write-ahead log without stalling the agent, after 2 MiB of records or 64 commits, whichever
// comes first (a commit writes whole pages, so small commits fill the log faster than their records say). Writes that
// come slowly (a poll's records, a trickle of deliveries) are checkpointed on the agent's own thread, right after the
// commit that crossed the threshold (a PASSIVE checkpoint of a few MB: a few milliseconds). Writes that come fast, a
// backlog drain, go to a worker thread, so that copying its pages into the database file does not stall the drain:
// draining 10,000 records frees ~10 MB of pages, and SQLite's automatic checkpoint would copy them inside the commit
// that crossed its threshold. A worker is kept for backlogs only because it costs memory for good: a Node worker's
// spell leaves about 5-12 MB resident after it ends (the runtime's code it paged in, malloc's arenas), so an agent that
// never drains a backlog never starts one. The worker runs PASSIVE checkpoints (they never block the agent's reads or
// writes) and ends after a quiet spell, so an idle agent carries no second thread. The store's own connection keeps
// SQLite's automatic checkpoint as the safety net, at a larger threshold (`safetyNetPages`): if no checkpoint can run,
// the log still stays bounded.
import { performance } from "node:perf_hooks";
import type { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";

/** The store connection's automatic checkpoint threshold while this checkpointer runs (pages; SQLite's default is 1000). */
export const safetyNetPages = 4096;

/** Failures (worker errors, failed checkpoints) after which the worker is not used any more. */
const maxFailures = 3;

export interface WalCheckpointerOptions {
  /** The database file. */
  readonly path: string;
  /** Ask for a checkpoint once this many bytes of records were written or freed since the last one (default 2 MiB). */
  readonly everyBytes?: number;
  /**
   * Ask for one, on the agent's thread, after this many commits since the last (default 64), however few bytes of
   * records they moved: each commit writes whole pages of every table and index it touches, so a trickle of small
   * commits (a document change, its delivery) fills the log far faster than its record bytes say.
   */
  readonly everyCommits?: number;
  /**
   * A PASSIVE checkpoint on the store's own connection, for writes that come slowly; without it every checkpoint goes
   * to the worker. Returns undefined when it cannot run now (a transaction is open).
   */
  readonly checkpointHere?: () => CheckpointAnswer | undefined;
  /** Writes are a backlog (checkpoints go to the worker) when `everyBytes` took less than this long (default 10 s). */
  readonly backlogWithinMs?: number;
  /** Monotonic milliseconds (tests pass a fake clock). */
  readonly now?: () => number;
  /** The worker ends after this long without a request (default 30 s). */
  readonly idleExitMs?: number;
  /** SQLite busy timeout of the worker's connection (default 1 s). */
  readonly busyTimeoutMs?: number;
  /** Told when the worker fails; the store goes on (its automatic checkpoint takes over). */
  readonly onError?: (reason: string) => void;
}

export interface CheckpointStats {
  /** Checkpoints asked of the worker. */
  readonly requested: number;
  /** Checkpoints that ran to the end of the log as it was when they started. */
  readonly completed: number;
  /** Workers started (one per busy spell). */
  readonly workersStarted: number;
  /** Of the checkpoints asked, those run on the agent's own thread (writes that came slowly). */
  readonly onAgentThread: number;
}

export interface CheckpointAnswer {
  readonly kind: "checkpointed" | "failed";
  /** Frames in the log and frames copied into the database (SQLite's wal_checkpoint result). */
  readonly log?: number;
  readonly checkpointed?: number;
  readonly reason?: string;
}

// CommonJS run with `eval`: no file to resolve beside a bundle.
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads");
const { DatabaseSync } = require("node:sqlite");
const db = new DatabaseSync(workerData.path, { timeout: workerData.busyTimeoutMs });
let idle;
const quit = () => { clearTimeout(idle); if (db.isOpen) db.close(); process.exit(0); };
const armIdle = () => { clearTimeout(idle); idle = setTimeout(quit, workerData.idleExitMs); };
parentPort.on("message", (message) => {
  if (message === "close") return quit();
  try {
    const row = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get();
    parentPort.postMessage({ kind: "checkpointed", log: row.log, checkpointed: row.checkpointed });
  } catch (err) {
    parentPort.postMessage({ kind: "failed", reason: String(err && err.message) });
  }
  armIdle();
});
armIdle();
`;

/** A PASSIVE checkpoint on a connection of the agent's thread; undefined while it has a transaction open. */
export function passiveCheckpoint(db: DatabaseSync): CheckpointAnswer | undefined {
  if (!db.isOpen || db.isTransaction) return undefined;
  const row = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as { log: number; checkpointed: number } | undefined;
  return { kind: "checkpointed", ...(row ? { log: row.log, checkpointed: row.checkpointed } : {}) };
}

export class WalCheckpointer {
  private worker: Worker | undefined;
  private writtenBytes = 0;
  private commits = 0;
  private inFlight = false;
  private askAgain = false;
  private closed = false;
  private failures = 0;
  private stats = { requested: 0, completed: 0, workersStarted: 0, onAgentThread: 0 };
  private readonly now: () => number;
  /** When a threshold was last crossed (or the checkpointer made): how fast the bytes since then came. */
  private lastCrossingMs: number;
  private hereSoon: NodeJS.Immediate | undefined;

  constructor(private readonly options: WalCheckpointerOptions) {
    this.now = options.now ?? (() => performance.now());
    this.lastCrossingMs = this.now();
  }

  get running(): boolean {
    return this.worker !== undefined;
  }

  get counts(): CheckpointStats {
    return { ...this.stats };
  }

  /**
   * After a committed write of `bytes` bytes of records (appended or freed); `commits` is 1 when the write committed a
   * transaction of its own, 0 when it joined one that commits later. Only record bytes that came fast (a backlog) go to
   * the worker; a run of small commits is never a reason to start it (its thread costs memory for good).
   */
  noteWritten(bytes: number, commits = 1): void {
    if (this.closed) return;
    this.writtenBytes += bytes;
    this.commits += commits;
    const byBytes = this.writtenBytes >= (this.options.everyBytes ?? 2 * 1024 * 1024);
    if (!byBytes && this.commits < (this.options.everyCommits ?? 64)) return;
    const nowMs = this.now();
    const backlog = byBytes && nowMs - this.lastCrossingMs < (this.options.backlogWithinMs ?? 10_000);
    this.writtenBytes = 0;
    this.commits = 0;
    this.lastCrossingMs = nowMs;
    if (backlog || this.worker !== undefined || !this.options.checkpointHere) this.request();
    else this.checkpointHereSoon(this.options.checkpointHere);
  }

  /** Ends the worker (a checkpoint under way finishes in its thread; nothing waits for it). */
  close(): void {
    this.closed = true;
    if (this.hereSoon) clearImmediate(this.hereSoon);
    this.hereSoon = undefined;
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    worker.postMessage("close");
    void worker.terminate().catch(() => {});
  }

  /** After the current commit's turn of the event loop, not inside it; a failure leaves the work to the safety net. */
  private checkpointHereSoon(checkpointHere: () => CheckpointAnswer | undefined): void {
    if (this.hereSoon) return;
    this.hereSoon = setImmediate(() => {
      this.hereSoon = undefined;
      if (this.closed) return;
      let answer: CheckpointAnswer | undefined;
      try {
        answer = checkpointHere();
      } catch (err) {
        answer = { kind: "failed", reason: (err as Error).message };
      }
      if (answer === undefined) return; // a transaction is open: the next crossing, or the safety net, does it
      this.stats.requested++;
      this.stats.onAgentThread++;
      if (answer.kind === "failed")
        this.options.onError?.(`checkpoint on the agent's thread failed: ${answer.reason ?? "unknown"}`);
      else if (answer.log !== undefined && answer.log === answer.checkpointed) this.stats.completed++;
    });
    this.hereSoon.unref();
  }

  private request(): void {
    if (this.inFlight) {
      this.askAgain = true; // one more once the running checkpoint answers
      return;
    }
    const worker = this.worker ?? this.start();
    if (!worker) return;
    this.inFlight = true;
    this.stats.requested++;
    worker.postMessage("checkpoint");
  }

  private start(): Worker | undefined {
    let worker: Worker;
    try {
      worker = new Worker(workerSource, {
        eval: true,
        workerData: {
          path: this.options.path,
          idleExitMs: this.options.idleExitMs ?? 30_000,
          busyTimeoutMs: this.options.busyTimeoutMs ?? 1000,
        },
        // A checkpointing thread needs little heap: keep its footprint small.
        resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
      });
    } catch (err) {
      this.options.onError?.(`could not start the checkpoint worker: ${(err as Error).message}`);
      return undefined;
    }
    worker.unref(); // never holds the process open
    this.stats.workersStarted++;
    worker.on("message", (answer: CheckpointAnswer) => this.answered(answer));
    worker.on("error", (err) => this.failed(`checkpoint worker failed: ${err.message}`));
    worker.on("exit", () => {
      if (this.worker === worker) this.worker = undefined;
      this.inFlight = false;
    });
    this.worker = worker;
    return worker;
  }

  /** A worker that keeps failing is given up: SQLite's automatic checkpoint (the safety net) does the work. */
  private failed(reason: string): void {
    this.failures++;
    const givingUp = this.failures >= maxFailures;
    this.options.onError?.(
      givingUp ? `${reason}; checkpoints are left to SQLite's automatic checkpoint from now on` : reason,
    );
    if (givingUp) this.close();
  }

  private answered(answer: CheckpointAnswer): void {
    this.inFlight = false;
    if (answer.kind === "failed") this.failed(`checkpoint failed: ${answer.reason ?? "unknown"}`);
    else if (answer.log !== undefined && answer.log === answer.checkpointed) this.stats.completed++;
    if (this.askAgain && !this.closed) {
      this.askAgain = false;
      this.request();
    }
  }
}
