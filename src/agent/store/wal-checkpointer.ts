// Checkpoints the store's write-ahead log from a worker thread, so that copying a backlog's pages into the database
// file does not stall the agent's thread: draining 10,000 records frees ~10 MB of pages, and SQLite's automatic
// checkpoint would copy them inside the commit that crossed its threshold. The worker starts once enough has been
// written, runs PASSIVE checkpoints (they never block the agent's reads or writes) and ends after a quiet spell, so an
// idle agent carries no second thread. The store's own connection keeps SQLite's automatic checkpoint as the safety
// net, at a larger threshold (`safetyNetPages`): if the worker cannot run, the log still stays bounded.
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
}

interface CheckpointAnswer {
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

export class WalCheckpointer {
  private worker: Worker | undefined;
  private writtenBytes = 0;
  private inFlight = false;
  private askAgain = false;
  private closed = false;
  private failures = 0;
  private stats = { requested: 0, completed: 0, workersStarted: 0 };

  constructor(private readonly options: WalCheckpointerOptions) {}

  get running(): boolean {
    return this.worker !== undefined;
  }

  get counts(): CheckpointStats {
    return { ...this.stats };
  }

  /** After a committed write of `bytes` bytes of records (appended or freed). */
  noteWritten(bytes: number): void {
    if (this.closed) return;
    this.writtenBytes += bytes;
    if (this.writtenBytes < (this.options.everyBytes ?? 2 * 1024 * 1024)) return;
    this.writtenBytes = 0;
    this.request();
  }

  /** Ends the worker (a checkpoint under way finishes in its thread; nothing waits for it). */
  close(): void {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    worker.postMessage("close");
    void worker.terminate().catch(() => {});
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
        workerData: { path: this.options.path, idleExitMs: this.options.idleExitMs ?? 30_000, busyTimeoutMs: this.options.busyTimeoutMs ?? 1000 },
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
    this.options.onError?.(givingUp ? `${reason}; checkpoints are left to SQLite's automatic checkpoint from now on` : reason);
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
